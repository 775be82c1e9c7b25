//! A kernel's class from one launch measured with hardware counters
//! (`POOLPROF_KERNEL_COUNTERS=1`): its FLOPs and DRAM bytes over its GPU time, judged
//! against the GPU's roofline like a workload's (`classify_kernel`); preferred to the
//! guess from the name (`class_from: "counters"`).

use super::boundedness::{classify_kernel, Boundedness, KernelCounters, Thresholds};
use crate::analysis::profile::ProfiledLaunch;
use crate::analysis::roofline::{GpuSpec, Precision};

/// The roofline precision of the exporter's `precision` label. The injection library
/// sums every tensor-core input type into `tensor`, judged against the BF16/FP16 peak
/// (the common case; FP8 peaks twice as high, TF32 half as high). FP16 on the CUDA
/// cores has no peak of its own in the table and is judged as FP32.
fn precision(label: &str) -> Option<Precision> {
    match label {
        "fp64" => Some(Precision::Fp64),
        "fp32" | "fp16" => Some(Precision::Fp32),
        "tensor" => Some(Precision::Bf16Tensor),
        _ => None,
    }
}

/// The class of a kernel from its profiled launch on `spec`; `None` when the launch
/// lacks a duration or any FLOP count.
pub fn class_from_counters(
    name: &str,
    launch: &ProfiledLaunch,
    spec: &GpuSpec,
) -> Option<Boundedness> {
    let timed = launch.seconds.is_finite() && launch.seconds > 0.0;
    if !timed || !launch.dram_bytes.is_finite() {
        return None;
    }
    let mut flops: Vec<(Precision, f64)> = Vec::new();
    for (label, value) in &launch.flops {
        let (Some(p), true) = (precision(label), value.is_finite() && *value >= 0.0) else {
            continue;
        };
        match flops.iter_mut().find(|(q, _)| *q == p) {
            Some((_, sum)) => *sum += value,
            None => flops.push((p, *value)),
        }
    }
    if flops.is_empty() {
        return None;
    }
    let counters = KernelCounters {
        name: name.to_string(),
        launches: 1.0,
        seconds: launch.seconds,
        flops,
        dram_bytes: launch.dram_bytes.max(0.0),
    };
    Some(classify_kernel(&counters, spec, Thresholds::Roofline))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::roofline::lookup_or_default;
    use std::collections::BTreeMap;

    fn launch(flops: &[(&str, f64)], bytes: f64, seconds: f64) -> ProfiledLaunch {
        ProfiledLaunch {
            flops: flops
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
            dram_bytes: bytes,
            seconds,
        }
    }

    #[test]
    fn a_bf16_gemm_and_an_fp32_add_land_on_either_side_of_the_h100_ridge() {
        let (h100, _) = lookup_or_default(Some("NVIDIA H100 80GB HBM3"));
        // 8192³ GEMM: 2·M·N·K FLOPs, ~3 operands of 128 MiB each, 1.6 ms.
        let n = 8192f64;
        let gemm = launch(
            &[("tensor", 2.0 * n * n * n), ("fp32", 1e6)],
            3.0 * 2.0 * n * n,
            1.6e-3,
        );
        let class = class_from_counters("gemm", &gemm, h100);
        assert_eq!(class, Some(Boundedness::ComputeBound));
        // 1 GiB fp32 add: 1 FLOP and 12 bytes per element, at about 3 TB/s.
        let elems = 268_435_456f64;
        let add = launch(&[("fp32", elems)], 12.0 * elems, 12.0 * elems / 3.0e12);
        let class = class_from_counters("add", &add, h100);
        assert_eq!(class, Some(Boundedness::MemoryBound));
    }

    #[test]
    fn a_launch_without_time_or_flops_gives_no_class() {
        let (h100, _) = lookup_or_default(None);
        assert_eq!(
            class_from_counters("k", &launch(&[("fp32", 1.0)], 1.0, 0.0), h100),
            None
        );
        assert_eq!(
            class_from_counters("k", &launch(&[], 1e9, 1e-3), h100),
            None
        );
        let unknown_precision = launch(&[("int4", 1e12)], 1e9, 1e-3);
        assert_eq!(class_from_counters("k", &unknown_precision, h100), None);
    }
}
