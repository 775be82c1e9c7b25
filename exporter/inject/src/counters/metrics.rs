//! The counters profiled for each kernel and how they become FLOPs and bytes.
//!
//! Only hardware counters: the range profiler cannot collect the SASS-instrumented
//! `smsp__sass_thread_inst_executed_op_*` counters Nsight Compute's roofline reads (on
//! the H100 they were accepted and read 0, and every hardware metric added after them
//! was refused with CUPTI_ERROR_UNKNOWN). So:
//! - tensor-core work from `sm__ops_path_tensor_*` (tensor-path math operations, one
//!   per FLOP for dense MMA; Hopper's warpgroup `hgmma` paths and the older `hmma`);
//! - CUDA-core work from the warp instructions issued to the FMA and FP64 pipes,
//!   64 operations each (32 threads, an FMA counting two): an upper bound, since an
//!   add or a multiply is one and the FMA pipe also runs integer multiply-adds;
//! - DRAM traffic from `dram__bytes_{read,write}.sum`, the launch's GPU time from
//!   `gpu__time_duration.sum`.
//!
//! A chip that does not know a name (an older or newer architecture) lacks that
//! value: each metric is added on its own and the ones the host API refuses are
//! dropped. Names as the H100's CUPTI 13 lists them (`cuptiProfilerHostGetBaseMetrics`,
//! `POOLPROF_KERNEL_COUNTERS_TRACE=1`).

use crate::wire::Flops;

/// What a metric contributes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// FP64 operations, `weight` per counted instruction.
    Fp64(u64),
    /// FP32 operations.
    Fp32(u64),
    /// FP16 operations (CUDA cores).
    Fp16(u64),
    /// Tensor-core operations.
    Tensor,
    /// DRAM bytes read.
    DramRead,
    /// DRAM bytes written.
    DramWrite,
    /// GPU time in ns.
    Duration,
}

/// Every metric asked for, with what it measures.
pub const METRICS: &[(&str, Measure)] = &[
    (
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum",
        Measure::Tensor,
    ),
    ("sm__ops_path_tensor_op_hgmma_src_fp16.sum", Measure::Tensor),
    (
        "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum",
        Measure::Tensor,
    ),
    (
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum",
        Measure::Tensor,
    ),
    (
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
        Measure::Tensor,
    ),
    (
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
        Measure::Tensor,
    ),
    (
        "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum",
        Measure::Tensor,
    ),
    ("sm__ops_path_tensor_src_fp64.sum", Measure::Tensor),
    ("sm__ops_path_tensor_src_fp8.sum", Measure::Tensor),
    ("smsp__inst_executed_pipe_fma.sum", Measure::Fp32(64)),
    ("smsp__inst_executed_pipe_fp64.sum", Measure::Fp64(64)),
    ("dram__bytes_read.sum", Measure::DramRead),
    ("dram__bytes_write.sum", Measure::DramWrite),
    ("gpu__time_duration.sum", Measure::Duration),
];

/// One launch's counters, summed by what they measure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evaluated {
    /// FLOPs by precision (`None` where no metric of it was collected).
    pub flops: Flops,
    /// DRAM bytes read and written (`None` unless both were collected).
    pub dram_bytes: Option<(u64, u64)>,
    /// GPU time in ns.
    pub duration_ns: Option<u64>,
}

/// Sums `values` (one per entry of `measures`, as the profiler evaluated them) by what
/// they measure. Negative or non-finite values (a counter the chip could not read)
/// count as not measured.
pub fn evaluate(measures: &[Measure], values: &[f64]) -> Evaluated {
    let mut out = Evaluated::default();
    let (mut read, mut write) = (None, None);
    for (measure, value) in measures.iter().zip(values) {
        if !value.is_finite() || *value < 0.0 {
            continue;
        }
        let v = value.round() as u64;
        let add =
            |slot: &mut Option<u64>, x: u64| *slot = Some(slot.unwrap_or(0).saturating_add(x));
        match *measure {
            Measure::Fp64(w) => add(&mut out.flops.fp64, v.saturating_mul(w)),
            Measure::Fp32(w) => add(&mut out.flops.fp32, v.saturating_mul(w)),
            Measure::Fp16(w) => add(&mut out.flops.fp16, v.saturating_mul(w)),
            Measure::Tensor => add(&mut out.flops.tensor, v),
            Measure::DramRead => add(&mut read, v),
            Measure::DramWrite => add(&mut write, v),
            Measure::Duration => add(&mut out.duration_ns, v),
        }
    }
    out.dram_bytes = read.zip(write);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measures() -> Vec<Measure> {
        METRICS.iter().map(|(_, m)| *m).collect()
    }

    #[test]
    fn every_metric_is_a_sum_named_once() {
        for (i, (name, _)) in METRICS.iter().enumerate() {
            assert!(name.ends_with(".sum"), "{name}");
            assert!(!METRICS[..i].iter().any(|(n, _)| n == name), "{name} twice");
        }
    }

    #[test]
    fn pipe_instructions_are_warps_of_fmas_and_precisions_stay_apart() {
        let mut values = vec![0.0; METRICS.len()];
        let at = |name: &str| METRICS.iter().position(|(n, _)| *n == name).unwrap();
        values[at("smsp__inst_executed_pipe_fma.sum")] = 1000.0;
        values[at("smsp__inst_executed_pipe_fp64.sum")] = 3.0;
        values[at("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum")] = 2.0 * 4096f64.powi(3);
        values[at("sm__ops_path_tensor_src_fp64.sum")] = 5.0;
        values[at("dram__bytes_read.sum")] = 8e9;
        values[at("dram__bytes_write.sum")] = 4e9;
        values[at("gpu__time_duration.sum")] = 1500.0;
        let e = evaluate(&measures(), &values);
        assert_eq!(e.flops.fp32, Some(64_000));
        assert_eq!(e.flops.fp64, Some(192));
        assert_eq!(e.flops.fp16, None, "no CUDA-core FP16 counter is read");
        assert_eq!(e.flops.tensor, Some(2 * 4096u64.pow(3) + 5));
        assert_eq!(e.dram_bytes, Some((8_000_000_000, 4_000_000_000)));
        assert_eq!(e.duration_ns, Some(1500));
    }

    #[test]
    fn no_sass_instrumented_metric_is_asked_for() {
        // The range profiler reads them as 0 and refuses hardware metrics after them.
        assert!(METRICS.iter().all(|(n, _)| !n.contains("__sass_")));
    }

    #[test]
    fn metrics_the_chip_refused_are_not_measured_rather_than_zero() {
        // Only the FP32 and DRAM-read metrics were accepted.
        let kept = [Measure::Fp32(2), Measure::DramRead];
        let e = evaluate(&kept, &[5.0, 64.0]);
        assert_eq!(e.flops.fp32, Some(10));
        assert_eq!(e.flops.tensor, None);
        assert_eq!(e.dram_bytes, None, "bytes need both directions");
        assert_eq!(e.duration_ns, None);
        let e = evaluate(&[Measure::Tensor, Measure::Duration], &[f64::NAN, -1.0]);
        assert_eq!(e, Evaluated::default());
    }
}
