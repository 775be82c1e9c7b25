//! How many SMs one launch of a kernel can hold: its grid against the blocks each SM
//! keeps resident, limited by threads, registers, shared memory and the block count.
//! A kernel whose grid fills every SM leaves a kernel of another process nothing
//! until its blocks drain; one that needs a few SMs leaves the rest free. This is what
//! kernel-level schedulers (Orion's `SM_usage`) and the profile's SM fill read.

use serde::{Deserialize, Serialize};

use crate::analysis::roofline::{GpuSpec, SmLimits};

/// Threads per warp.
const WARP: u32 = 32;
/// Registers are allocated per warp in units of this many.
const REGISTER_UNIT: u32 = 256;
/// Warps are given registers in groups of this many.
const WARP_GROUP: u32 = 4;
/// Shared memory is allocated per block in units of this many bytes.
const SHARED_UNIT: u32 = 128;

/// A kernel launch's shape, as the exporter publishes it for the latest launch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KernelShape {
    /// Thread blocks in the grid.
    pub grid_blocks: u64,
    /// Threads per block.
    pub block_threads: u32,
    /// Registers per thread.
    pub registers_per_thread: u32,
    /// Shared memory per block (static plus dynamic), bytes.
    pub shared_bytes_per_block: u32,
}

impl KernelShape {
    /// Blocks of this kernel one SM keeps resident at once (at least 1: the launch ran).
    pub fn blocks_per_sm(&self, sm: &SmLimits) -> u32 {
        // u64 throughout: a hand-written profile may hold any u32
        let warps = u64::from(self.block_threads.max(1).div_ceil(WARP));
        let by_threads = u64::from(sm.max_threads) / (warps * u64::from(WARP));
        let by_registers = if self.registers_per_thread == 0 {
            u64::MAX
        } else {
            let per_warp = (u64::from(self.registers_per_thread) * u64::from(WARP))
                .next_multiple_of(u64::from(REGISTER_UNIT));
            let group = u64::from(WARP_GROUP);
            let warps_per_sm = (u64::from(sm.registers) / per_warp) / group * group;
            warps_per_sm / warps
        };
        let by_shared = if self.shared_bytes_per_block == 0 {
            u64::MAX
        } else {
            let per_block = (u64::from(self.shared_bytes_per_block)
                + u64::from(sm.reserved_shared_per_block))
            .next_multiple_of(u64::from(SHARED_UNIT));
            u64::from(sm.shared_memory_bytes) / per_block
        };
        let blocks = u64::from(sm.max_blocks)
            .min(by_threads)
            .min(by_registers)
            .min(by_shared)
            .max(1);
        u32::try_from(blocks).unwrap_or(1)
    }

    /// SMs' worth of resources one launch holds: its blocks over the blocks per SM, at
    /// most the GPU's SMs (the hardware spreads blocks over more SMs than this, each
    /// partly filled; what is left on them stays free for other kernels).
    pub fn sms_needed(&self, spec: &GpuSpec) -> u32 {
        let per_sm = u64::from(self.blocks_per_sm(&spec.sm));
        let sms = self.grid_blocks.div_ceil(per_sm).max(1);
        u32::try_from(sms).unwrap_or(u32::MAX).min(spec.sms)
    }

    /// Share of the GPU's SMs one launch occupies (0–1).
    pub fn sm_fill(&self, spec: &GpuSpec) -> f64 {
        f64::from(self.sms_needed(spec)) / f64::from(spec.sms.max(1))
    }

    /// Full waves of blocks one launch runs: above 1, the grid queues for SMs.
    pub fn waves(&self, spec: &GpuSpec) -> f64 {
        let resident = u64::from(self.blocks_per_sm(&spec.sm)) * u64::from(spec.sms);
        self.grid_blocks as f64 / resident.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::roofline::{lookup, SM_89, SM_90};

    fn shape(blocks: u64, threads: u32, regs: u32, shared: u32) -> KernelShape {
        KernelShape {
            grid_blocks: blocks,
            block_threads: threads,
            registers_per_thread: regs,
            shared_bytes_per_block: shared,
        }
    }

    #[test]
    fn each_limit_binds_in_turn() {
        // threads: 256-thread blocks, few registers, no shared memory: 2048 / 256 = 8
        assert_eq!(shape(1, 256, 16, 0).blocks_per_sm(&SM_90), 8);
        // block count: 32-thread blocks would fit 64 by threads, the SM keeps 32
        assert_eq!(shape(1, 32, 16, 0).blocks_per_sm(&SM_90), 32);
        // registers: 128 regs x 32 = 4096 per warp, 16 warps per SM, 8-warp blocks: 2
        assert_eq!(shape(1, 256, 128, 0).blocks_per_sm(&SM_90), 2);
        // shared memory: a CUTLASS-style block with 200 KB fits once in 228 KB
        assert_eq!(shape(1, 384, 168, 200 * 1024).blocks_per_sm(&SM_90), 1);
        // 48 KB blocks: 4 fit in 228 KB on Hopper, 2 in 100 KB on Ada
        assert_eq!(shape(1, 128, 32, 48 * 1024).blocks_per_sm(&SM_90), 4);
        assert_eq!(shape(1, 128, 32, 48 * 1024).blocks_per_sm(&SM_89), 2);
    }

    #[test]
    fn a_small_grid_needs_few_sms_and_a_large_one_fills_the_gpu() {
        let h100 = lookup("NVIDIA H100 80GB HBM3").unwrap();
        // batch-1 decoding: 40 blocks of 128 threads, 16 resident per SM -> 3 SMs' worth
        let small = shape(40, 128, 32, 0);
        assert_eq!(small.blocks_per_sm(&SM_90), 16);
        assert_eq!(small.sms_needed(h100), 3);
        assert!((small.sm_fill(h100) - 3.0 / 132.0).abs() < 1e-12);
        // one block per SM, 132 blocks: exactly one full wave
        let gemm = shape(132, 384, 168, 200 * 1024);
        assert_eq!(gemm.sms_needed(h100), 132);
        assert!((gemm.waves(h100) - 1.0).abs() < 1e-12);
        // a huge elementwise grid: capped at the GPU's SMs, many waves
        let wide = shape(1 << 20, 256, 16, 0);
        assert_eq!(wide.sms_needed(h100), 132);
        assert!(wide.waves(h100) > 900.0);
    }

    #[test]
    fn degenerate_shapes_stay_in_range() {
        let h100 = lookup("NVIDIA H100 80GB HBM3").unwrap();
        // an empty block or registers beyond any SM still count as one block per SM
        assert_eq!(shape(10, 0, 0, 0).blocks_per_sm(&SM_90), 32);
        assert_eq!(shape(10, 1024, u32::MAX, u32::MAX).blocks_per_sm(&SM_90), 1);
        assert_eq!(shape(u64::MAX, 1, 1, 0).sms_needed(h100), 132);
        assert_eq!(shape(0, 1, 1, 0).sms_needed(h100), 1);
    }
}
