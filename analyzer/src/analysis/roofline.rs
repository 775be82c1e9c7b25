//! The rooflines of known GPUs: peak dense throughput per precision and DRAM
//! bandwidth, from NVIDIA's product datasheets (dense figures: the datasheets' "with
//! sparsity" numbers halved).

use serde::{Deserialize, Serialize};

/// A numeric precision with its own peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// FP64 on the CUDA cores.
    Fp64,
    /// FP64 on the tensor cores (DMMA).
    Fp64Tensor,
    /// FP32 on the CUDA cores.
    Fp32,
    /// BF16 / FP16 on the tensor cores (HMMA).
    Bf16Tensor,
    /// INT8 on the tensor cores (IMMA), operations per second.
    Int8Tensor,
}

/// What one SM holds at once, by compute capability: the limits that decide how many
/// blocks of a kernel are resident per SM (CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability"; the occupancy calculator's granularities).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmLimits {
    /// Compute capability, e.g. "9.0".
    pub compute_capability: &'static str,
    /// Resident threads per SM.
    pub max_threads: u32,
    /// Resident blocks per SM.
    pub max_blocks: u32,
    /// 32-bit registers per SM.
    pub registers: u32,
    /// Shared memory per SM usable by blocks, bytes.
    pub shared_memory_bytes: u32,
    /// Shared memory the system reserves per resident block, bytes.
    pub reserved_shared_per_block: u32,
}

/// Hopper (H100, H200): compute capability 9.0, 228 KB shared memory per SM.
pub const SM_90: SmLimits = SmLimits {
    compute_capability: "9.0",
    max_threads: 2048,
    max_blocks: 32,
    registers: 65_536,
    shared_memory_bytes: 228 * 1024,
    reserved_shared_per_block: 1024,
};
/// A100: compute capability 8.0, 164 KB shared memory per SM.
pub const SM_80: SmLimits = SmLimits {
    compute_capability: "8.0",
    max_threads: 2048,
    max_blocks: 32,
    registers: 65_536,
    shared_memory_bytes: 164 * 1024,
    reserved_shared_per_block: 1024,
};
/// Ada (L4, L40S): compute capability 8.9, 1536 threads and 100 KB per SM.
pub const SM_89: SmLimits = SmLimits {
    compute_capability: "8.9",
    max_threads: 1536,
    max_blocks: 24,
    registers: 65_536,
    shared_memory_bytes: 100 * 1024,
    reserved_shared_per_block: 1024,
};

/// One GPU model's roofline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSpec {
    /// A name NVML reports for it (matched case-insensitively, without "NVIDIA ").
    pub nvml_names: &'static [&'static str],
    /// Streaming multiprocessors.
    pub sms: u32,
    /// What each SM holds at once.
    pub sm: SmLimits,
    /// Memory, bytes.
    pub memory_bytes: f64,
    /// DRAM bandwidth, bytes per second.
    pub dram_bytes_per_second: f64,
    /// Dense peaks, FLOP/s (ops/s for INT8): FP64, FP64 tensor, FP32, BF16 tensor, INT8 tensor.
    pub peaks: [f64; 5],
    /// Where the numbers come from.
    pub source: &'static str,
}

const T: f64 = 1e12;
const GB: f64 = 1e9;

/// The GPUs poolprof knows, each with its datasheet.
pub const KNOWN: [GpuSpec; 9] = [
    GpuSpec {
        nvml_names: &["h100 80gb hbm3", "h100 sxm"],
        sms: 132,
        sm: SM_90,
        memory_bytes: 80.0 * GB,
        dram_bytes_per_second: 3350.0 * GB,
        peaks: [34.0 * T, 67.0 * T, 67.0 * T, 989.5 * T, 1979.0 * T],
        source: "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM",
    },
    GpuSpec {
        nvml_names: &["h100 pcie"],
        sms: 114,
        sm: SM_90,
        memory_bytes: 80.0 * GB,
        dram_bytes_per_second: 2000.0 * GB,
        peaks: [25.6 * T, 51.2 * T, 51.2 * T, 756.5 * T, 1513.0 * T],
        source: "NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe",
    },
    GpuSpec {
        nvml_names: &["h100 nvl"],
        sms: 132,
        sm: SM_90,
        memory_bytes: 94.0 * GB,
        dram_bytes_per_second: 3900.0 * GB,
        peaks: [30.0 * T, 60.0 * T, 60.0 * T, 835.5 * T, 1670.5 * T],
        source: "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL",
    },
    GpuSpec {
        nvml_names: &["h200"],
        sms: 132,
        sm: SM_90,
        memory_bytes: 141.0 * GB,
        dram_bytes_per_second: 4800.0 * GB,
        peaks: [34.0 * T, 67.0 * T, 67.0 * T, 989.5 * T, 1979.0 * T],
        source: "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM",
    },
    GpuSpec {
        nvml_names: &["a100-sxm4-80gb", "a100 80gb sxm"],
        sms: 108,
        sm: SM_80,
        memory_bytes: 80.0 * GB,
        dram_bytes_per_second: 2039.0 * GB,
        peaks: [9.7 * T, 19.5 * T, 19.5 * T, 312.0 * T, 624.0 * T],
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM",
    },
    GpuSpec {
        nvml_names: &["a100-sxm4-40gb"],
        sms: 108,
        sm: SM_80,
        memory_bytes: 40.0 * GB,
        dram_bytes_per_second: 1555.0 * GB,
        peaks: [9.7 * T, 19.5 * T, 19.5 * T, 312.0 * T, 624.0 * T],
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM",
    },
    GpuSpec {
        nvml_names: &["a100 80gb pcie", "a100-pcie-80gb"],
        sms: 108,
        sm: SM_80,
        memory_bytes: 80.0 * GB,
        dram_bytes_per_second: 1935.0 * GB,
        peaks: [9.7 * T, 19.5 * T, 19.5 * T, 312.0 * T, 624.0 * T],
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB PCIe",
    },
    GpuSpec {
        nvml_names: &["a100-pcie-40gb", "a100 pcie"],
        sms: 108,
        sm: SM_80,
        memory_bytes: 40.0 * GB,
        dram_bytes_per_second: 1555.0 * GB,
        peaks: [9.7 * T, 19.5 * T, 19.5 * T, 312.0 * T, 624.0 * T],
        source: "NVIDIA A100 Tensor Core GPU datasheet, A100 40GB PCIe",
    },
    GpuSpec {
        nvml_names: &["l40s"],
        sms: 142,
        sm: SM_89,
        memory_bytes: 48.0 * GB,
        dram_bytes_per_second: 864.0 * GB,
        peaks: [1.41 * T, 1.41 * T, 91.6 * T, 362.05 * T, 733.0 * T],
        source: "NVIDIA L40S datasheet",
    },
];

/// L4 (not in [`KNOWN`]'s order above only to keep H100 SXM first, the fallback).
pub const L4: GpuSpec = GpuSpec {
    nvml_names: &["l4"],
    sms: 58,
    sm: SM_89,
    memory_bytes: 24.0 * GB,
    dram_bytes_per_second: 300.0 * GB,
    peaks: [0.47 * T, 0.47 * T, 30.3 * T, 121.0 * T, 242.5 * T],
    source: "NVIDIA L4 Tensor Core GPU datasheet",
};

impl GpuSpec {
    /// The dense peak for `p`.
    pub fn peak(&self, p: Precision) -> f64 {
        let i = match p {
            Precision::Fp64 => 0,
            Precision::Fp64Tensor => 1,
            Precision::Fp32 => 2,
            Precision::Bf16Tensor => 3,
            Precision::Int8Tensor => 4,
        };
        self.peaks[i]
    }

    /// The ridge point for `p`: FLOP per DRAM byte where compute and bandwidth balance.
    pub fn ridge_point(&self, p: Precision) -> f64 {
        self.peak(p) / self.dram_bytes_per_second
    }
}

/// The spec for an NVML product name, or None when poolprof does not know the GPU.
pub fn lookup(nvml_name: &str) -> Option<&'static GpuSpec> {
    let name = nvml_name.trim().to_ascii_lowercase();
    let name = name.strip_prefix("nvidia ").unwrap_or(&name);
    // Longest alias first, so "a100 80gb pcie" is not taken for another A100.
    let mut best: Option<(&'static GpuSpec, usize)> = None;
    for spec in KNOWN.iter().chain(std::iter::once(&L4)) {
        for alias in spec.nvml_names {
            let exact_l4 = *alias == "l4" && name != "l4";
            if !exact_l4 && name.contains(alias) && best.is_none_or(|(_, n)| alias.len() > n) {
                best = Some((spec, alias.len()));
            }
        }
    }
    best.map(|(s, _)| s)
}

/// The spec for `name`, or H100 SXM's with `false` when unknown.
pub fn lookup_or_default(name: Option<&str>) -> (&'static GpuSpec, bool) {
    match name.and_then(lookup) {
        Some(s) => (s, true),
        None => (&KNOWN[0], false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_nvml_names_find_their_gpu() {
        let sms = |n: &str| lookup(n).map(|s| (s.sms, s.memory_bytes / GB));
        assert_eq!(sms("NVIDIA H100 80GB HBM3"), Some((132, 80.0)));
        assert_eq!(sms("NVIDIA H100 PCIe"), Some((114, 80.0)));
        assert_eq!(sms("NVIDIA H200"), Some((132, 141.0)));
        assert_eq!(sms("NVIDIA A100-SXM4-80GB"), Some((108, 80.0)));
        assert_eq!(sms("NVIDIA A100-SXM4-40GB"), Some((108, 40.0)));
        assert_eq!(sms("NVIDIA A100 80GB PCIe"), Some((108, 80.0)));
        assert_eq!(sms("NVIDIA A100-PCIE-40GB"), Some((108, 40.0)));
        assert_eq!(sms("NVIDIA L4"), Some((58, 24.0)));
        assert_eq!(sms("NVIDIA L40S"), Some((142, 48.0)));
        assert_eq!(sms("NVIDIA GeForce RTX 4090"), None);
    }

    #[test]
    fn each_gpu_has_its_architectures_sm_limits() {
        let cc = |n: &str| lookup(n).unwrap().sm.compute_capability;
        assert_eq!(cc("NVIDIA H100 80GB HBM3"), "9.0");
        assert_eq!(cc("NVIDIA H200"), "9.0");
        assert_eq!(cc("NVIDIA A100-SXM4-40GB"), "8.0");
        assert_eq!(cc("NVIDIA L40S"), "8.9");
        assert_eq!(cc("NVIDIA L4"), "8.9");
    }

    #[test]
    fn h100_sxm_bf16_ridge_is_about_295_flop_per_byte() {
        let r = lookup("NVIDIA H100 80GB HBM3")
            .unwrap()
            .ridge_point(Precision::Bf16Tensor);
        assert!((r - 295.4).abs() < 1.0, "{r}");
        let (spec, known) = lookup_or_default(Some("Mystery GPU"));
        assert!(!known && spec.sms == 132);
    }
}
