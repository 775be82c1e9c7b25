//! A workload's kernels as kernel-level schedulers read them (Orion and the like): per
//! kernel its compute or memory profile, the SMs one launch holds and its duration.

use std::io::Write;

use serde::Serialize;

use crate::analysis::classify::{class_by_name, class_from_counters, Boundedness};
use crate::analysis::profile::WorkloadProfile;
use crate::analysis::roofline::lookup_or_default;

/// The folded rest of a workload's kernels, which is not one kernel.
const OTHER: &str = "other";

/// One kernel of a workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    /// The kernel name, as the exporter shortened it.
    pub name: String,
    /// Compute- or memory-bound, when known.
    pub class: Option<Boundedness>,
    /// What the class was judged from: `counters` (a launch's FLOPs and DRAM bytes
    /// against the roofline) or `name` (a guess from the kernel name).
    pub class_from: Option<&'static str>,
    /// Mean duration of one launch, seconds.
    pub mean_duration_seconds: f64,
    /// Launches per second while the workload ran alone.
    pub launches_per_second: f64,
    /// Kernel seconds per second (its share of the GPU's time).
    pub busy: f64,
    /// Thread blocks of the latest launch, when the exporter published its shape.
    pub grid_blocks: Option<u64>,
    /// Threads per block of the latest launch.
    pub block_threads: Option<u32>,
    /// Blocks of it one SM holds at once.
    pub blocks_per_sm: Option<u32>,
    /// SMs' worth of resources one launch holds (the GPU's SM count when unknown).
    pub sms_needed: u32,
    /// Full waves of blocks one launch runs, when the shape is known.
    pub waves: Option<f64>,
}

/// A workload's kernel table, busiest kernel first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelTable {
    /// The workload.
    pub workload: String,
    /// The GPU model the SM limits are taken from.
    pub gpu: String,
    /// Whether that model is in the roofline table (else H100 SXM's limits were used).
    pub gpu_known: bool,
    /// The GPU's SM count.
    pub sms: u32,
    /// One row per kernel.
    pub kernels: Vec<KernelRow>,
}

impl KernelTable {
    /// The table of `profile`'s kernels.
    pub fn of(profile: &WorkloadProfile) -> KernelTable {
        let (spec, known) = lookup_or_default(profile.gpu_name.as_deref());
        let kernels = profile
            .kernels
            .iter()
            .map(|k| {
                let measured = k
                    .counters
                    .as_ref()
                    .and_then(|c| class_from_counters(&k.name, c, spec));
                let guessed = (k.name != OTHER).then(|| class_by_name(&k.name)).flatten();
                let (class, class_from) = match (measured, guessed) {
                    (Some(c), _) => (Some(c), Some("counters")),
                    (None, Some(c)) => (Some(c), Some("name")),
                    (None, None) => (None, None),
                };
                KernelRow {
                    name: k.name.clone(),
                    class,
                    class_from,
                    mean_duration_seconds: k.mean_seconds(),
                    launches_per_second: k.launches_per_second,
                    busy: k.busy,
                    grid_blocks: k.shape.map(|s| s.grid_blocks),
                    block_threads: k.shape.map(|s| s.block_threads),
                    blocks_per_sm: k.shape.map(|s| s.blocks_per_sm(&spec.sm)),
                    sms_needed: k.shape.map_or(spec.sms, |s| s.sms_needed(spec)),
                    waves: k.shape.map(|s| s.waves(spec)),
                }
            })
            .collect();
        KernelTable {
            workload: profile.workload.clone(),
            gpu: profile
                .gpu_name
                .clone()
                .unwrap_or_else(|| spec.nvml_names[0].to_string()),
            gpu_known: known,
            sms: spec.sms,
            kernels,
        }
    }

    /// Writes Orion's kernel profile CSV: `Name,Profile,Memory_footprint,SM_usage,Duration`,
    /// with profile 1 compute-bound, 0 memory-bound, -1 unknown, and the mean duration in
    /// ns. The folded `other` is not a kernel and is left out; commas in names become `;`.
    pub fn write_orion(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(out, "Name,Profile,Memory_footprint,SM_usage,Duration")?;
        for k in self.kernels.iter().filter(|k| k.name != OTHER) {
            let profile = match k.class {
                Some(Boundedness::ComputeBound) => 1,
                Some(Boundedness::MemoryBound) => 0,
                _ => -1,
            };
            let name: String = k
                .name
                .chars()
                .map(|c| if c == ',' || c.is_control() { ';' } else { c })
                .collect();
            let ns = (k.mean_duration_seconds * 1e9).round() as u64;
            writeln!(out, "{name},{profile},0,{},{ns}", k.sms_needed)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::occupancy::KernelShape;
    use crate::analysis::profile::{Coverage, KernelStat};

    fn profile() -> WorkloadProfile {
        let mut p = WorkloadProfile::new("team/train", Coverage::Kernels);
        p.gpu_name = Some("NVIDIA H100 80GB HBM3".into());
        let stat = |name: &str, rate: f64, busy: f64, shape| KernelStat {
            name: name.into(),
            launches_per_second: rate,
            busy,
            shape,
            counters: None,
        };
        p.kernels = vec![
            stat(
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n, tilesize128x128x64",
                1000.0,
                0.5,
                Some(KernelShape {
                    grid_blocks: 66,
                    block_threads: 384,
                    registers_per_thread: 168,
                    shared_bytes_per_block: 200 * 1024,
                }),
            ),
            stat(
                "native::vectorized_elementwise_kernel",
                4000.0,
                0.2,
                Some(KernelShape {
                    grid_blocks: 4096,
                    block_threads: 128,
                    registers_per_thread: 32,
                    shared_bytes_per_block: 0,
                }),
            ),
            stat("my_kernel", 10.0, 0.01, None),
            stat("other", 50.0, 0.05, None),
        ];
        p
    }

    #[test]
    fn rows_carry_class_sms_and_duration() {
        let t = KernelTable::of(&profile());
        assert_eq!((t.sms, t.gpu_known), (132, true));
        let gemm = &t.kernels[0];
        assert_eq!(gemm.class, Some(Boundedness::ComputeBound));
        assert_eq!(gemm.class_from, Some("name"));
        assert_eq!((gemm.blocks_per_sm, gemm.sms_needed), (Some(1), 66));
        assert!((gemm.mean_duration_seconds - 0.0005).abs() < 1e-12);
        let ew = &t.kernels[1];
        assert_eq!(
            (ew.class, ew.blocks_per_sm),
            (Some(Boundedness::MemoryBound), Some(16))
        );
        assert_eq!(ew.sms_needed, 132); // 4096 / 16 = 256 SMs' worth: the whole GPU
        assert!((ew.waves.unwrap() - 4096.0 / (16.0 * 132.0)).abs() < 1e-12);
        // no shape: assumed to take the whole GPU; no class from an unhelpful name
        assert_eq!((t.kernels[2].sms_needed, t.kernels[2].class), (132, None));
        assert_eq!(t.kernels[3].class_from, None);
    }

    #[test]
    fn counters_outrank_the_name_when_a_launch_was_profiled() {
        use crate::analysis::profile::ProfiledLaunch;
        let mut p = profile();
        // A "gemm" by name that moved 100 bytes per FLOP: memory-bound by its counters.
        p.kernels[0].counters = Some(ProfiledLaunch {
            flops: [("tensor".to_string(), 1e9)].into_iter().collect(),
            dram_bytes: 1e11,
            seconds: 0.05,
        });
        // An unknown name with a dense tensor launch: compute-bound.
        p.kernels[2].counters = Some(ProfiledLaunch {
            flops: [("tensor".to_string(), 5e14)].into_iter().collect(),
            dram_bytes: 1e9,
            seconds: 1e-3,
        });
        let t = KernelTable::of(&p);
        let gemm = &t.kernels[0];
        assert_eq!(
            (gemm.class, gemm.class_from),
            (Some(Boundedness::MemoryBound), Some("counters"))
        );
        let mine = &t.kernels[2];
        assert_eq!(
            (mine.class, mine.class_from),
            (Some(Boundedness::ComputeBound), Some("counters"))
        );
        let ew = &t.kernels[1];
        assert_eq!(
            ew.class_from,
            Some("name"),
            "no counters: the name still serves"
        );
    }

    #[test]
    fn orion_csv_has_one_line_per_kernel_without_the_folded_rest() {
        let mut out = Vec::new();
        KernelTable::of(&profile()).write_orion(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "Name,Profile,Memory_footprint,SM_usage,Duration",
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n; tilesize128x128x64,1,0,66,500000",
                "native::vectorized_elementwise_kernel,0,0,132,50000",
                "my_kernel,-1,0,132,1000000",
            ]
        );
    }
}
