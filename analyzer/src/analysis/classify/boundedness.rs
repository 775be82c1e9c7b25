//! Compute-bound, memory-bound, mixed, latency-bound or idle, judged against the
//! device's roofline (DESIGN.md, "Definitions").
//!
//! From GPM, which every Hopper GPU gives: the busiest pipe (tensor HMMA at the BF16
//! tensor peak, IMMA at INT8, DMMA at the FP64 tensor peak, the FP32 and FP64 pipes at
//! theirs) gives the achieved FLOP/s, its activity times its peak; achieved bytes/s is
//! DRAM activity times the bandwidth; their ratio is the arithmetic intensity, compared
//! with that pipe's ridge point. Within a factor of
//! [`MIXED_BAND`] of the ridge, or with both compute and DRAM at least [`BOTH_BUSY`]
//! busy while the workload runs, it is mixed; with neither at [`LATENCY_BELOW`], latency-
//! bound. Per-kernel counters (FLOPs and DRAM bytes), when present, classify each
//! kernel the same way and the workload by kernel time.

use serde::{Deserialize, Serialize};

use crate::analysis::profile::{ProfileSignal as S, WorkloadProfile};
use crate::analysis::roofline::{lookup_or_default, GpuSpec, Precision};

/// Duty cycle under which a workload is idle.
pub const IDLE_BELOW: f64 = 0.05;
/// Arithmetic intensity within this factor of the ridge point counts as mixed.
pub const MIXED_BAND: f64 = 1.5;
/// Fraction of peak, while busy, at which compute and DRAM both count as busy (mixed).
pub const BOTH_BUSY: f64 = 0.5;
/// Fraction of peak, while busy, under which neither compute nor DRAM is busy.
pub const LATENCY_BELOW: f64 = 0.15;

/// What bounds a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundedness {
    /// Above the ridge point: faster compute would help.
    ComputeBound,
    /// Below the ridge point: more bandwidth would help.
    MemoryBound,
    /// Near the ridge, or both pipes and DRAM busy.
    Mixed,
    /// Busy but neither pipes nor DRAM are: launch overhead, synchronization, small grids.
    LatencyBound,
    /// Hardly uses the GPU.
    Idle,
}

impl Boundedness {
    /// Every class, in label order.
    pub const ALL: [Boundedness; 5] = [
        Boundedness::ComputeBound,
        Boundedness::MemoryBound,
        Boundedness::Mixed,
        Boundedness::LatencyBound,
        Boundedness::Idle,
    ];

    /// The `class` label value.
    pub fn label(self) -> &'static str {
        match self {
            Boundedness::ComputeBound => "compute_bound",
            Boundedness::MemoryBound => "memory_bound",
            Boundedness::Mixed => "mixed",
            Boundedness::LatencyBound => "latency_bound",
            Boundedness::Idle => "idle",
        }
    }
}

/// Which rule set judges the arithmetic intensity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thresholds {
    /// Against the GPU's own ridge point (the default).
    #[default]
    Roofline,
    /// The earlier pooling profiler's fixed numbers: above 50 FLOP/B compute-bound,
    /// below 10 memory-bound, else mixed.
    Fixed,
}

impl std::str::FromStr for Thresholds {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "roofline" => Ok(Thresholds::Roofline),
            "fixed" => Ok(Thresholds::Fixed),
            other => Err(format!(
                "unknown class thresholds {other:?}; use roofline or fixed"
            )),
        }
    }
}

/// What the class was judged from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// GPM pipe and DRAM activity.
    Gpm,
    /// Per-kernel FLOPs and DRAM bytes.
    Kernels,
    /// The earlier profiler's fixed thresholds.
    FixedThresholds,
    /// Given by hand.
    Declared,
}

/// A workload's class with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    /// The class.
    pub class: Boundedness,
    /// Achieved FLOP per DRAM byte, when DRAM moved anything.
    pub arithmetic_intensity: Option<f64>,
    /// The ridge point it was compared with.
    pub ridge_point: Option<f64>,
    /// What it was judged from.
    pub basis: Basis,
    /// Why, in short sentences with the numbers.
    pub evidence: Vec<String>,
}

/// One kernel's counters (FLOPs by precision, DRAM bytes), for per-kernel classification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCounters {
    /// The kernel name.
    pub name: String,
    /// Launches counted.
    pub launches: f64,
    /// Kernel seconds counted.
    pub seconds: f64,
    /// FLOPs by precision (tensor-core FLOPs under their tensor precision).
    pub flops: Vec<(Precision, f64)>,
    /// DRAM bytes read and written.
    pub dram_bytes: f64,
}

/// Judges achieved compute (FLOP/s at `precision`) against achieved bandwidth.
fn judge(
    spec: &GpuSpec,
    precision: Precision,
    flops_per_s: f64,
    bytes_per_s: f64,
    t: Thresholds,
) -> (Boundedness, Option<f64>, f64) {
    let ridge = spec.ridge_point(precision);
    let ai = (bytes_per_s > 0.0).then(|| flops_per_s / bytes_per_s);
    let compute = flops_per_s / spec.peak(precision);
    let dram = bytes_per_s / spec.dram_bytes_per_second;
    let class = if compute < LATENCY_BELOW && dram < LATENCY_BELOW {
        Boundedness::LatencyBound
    } else if t == Thresholds::Fixed {
        match ai {
            Some(x) if x < 10.0 => Boundedness::MemoryBound,
            Some(x) if x <= 50.0 => Boundedness::Mixed,
            _ => Boundedness::ComputeBound,
        }
    } else if compute >= BOTH_BUSY && dram >= BOTH_BUSY {
        Boundedness::Mixed
    } else {
        match ai {
            Some(x) if x * MIXED_BAND < ridge => Boundedness::MemoryBound,
            Some(x) if x <= ridge * MIXED_BAND => Boundedness::Mixed,
            _ => Boundedness::ComputeBound,
        }
    };
    (class, ai, ridge)
}

/// One kernel's class on `spec`, from its counters.
pub fn classify_kernel(k: &KernelCounters, spec: &GpuSpec, t: Thresholds) -> Boundedness {
    let Some(&(precision, _)) = k.flops.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Boundedness::MemoryBound;
    };
    let total: f64 = k.flops.iter().map(|(_, f)| f).sum();
    if k.seconds <= 0.0 {
        return Boundedness::Idle;
    }
    judge(
        spec,
        precision,
        total / k.seconds,
        k.dram_bytes / k.seconds,
        t,
    )
    .0
}

/// A workload's class from its kernels, weighted by kernel time.
pub fn classify_kernels(
    kernels: &[KernelCounters],
    spec: &GpuSpec,
    t: Thresholds,
) -> Option<Boundedness> {
    let mut time = [0.0; 5];
    for k in kernels {
        let c = classify_kernel(k, spec, t);
        time[Boundedness::ALL
            .iter()
            .position(|x| *x == c)
            .expect("in ALL")] += k.seconds;
    }
    let (i, t) = time.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
    (*t > 0.0).then_some(Boundedness::ALL[i])
}

/// Share of a workload's kernel time its profiled kernels must cover for their counters
/// to decide its class (else GPM decides).
const PROFILED_COVERAGE: f64 = 0.5;

/// A workload's class from the kernels the injection library profiled with hardware
/// counters (`POOLPROF_KERNEL_COUNTERS=1`), each weighted by its share of kernel time,
/// when they cover at least [`PROFILED_COVERAGE`] of it.
fn from_profiled_kernels(
    profile: &WorkloadProfile,
    spec: &GpuSpec,
    mut evidence: Vec<String>,
) -> Option<Classification> {
    let total: f64 = profile.kernels.iter().map(|k| k.busy.max(0.0)).sum();
    let mut time = [0.0; 5];
    let (mut covered, mut flops, mut bytes) = (0.0, 0.0, 0.0);
    for k in &profile.kernels {
        let Some(launch) = &k.counters else { continue };
        let Some(class) = super::class_from_counters(&k.name, launch, spec) else {
            continue;
        };
        let weight = k.busy.max(0.0);
        let slot = Boundedness::ALL.iter().position(|x| *x == class);
        time[slot.expect("in ALL")] += weight;
        covered += weight;
        flops += weight * launch.flops.values().sum::<f64>() / launch.seconds;
        bytes += weight * launch.dram_bytes / launch.seconds;
    }
    if total <= 0.0 || covered < PROFILED_COVERAGE * total {
        return None;
    }
    let (i, _) = time.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))?;
    let shares: Vec<String> = Boundedness::ALL
        .iter()
        .zip(time)
        .filter(|(_, w)| *w > 0.0)
        .map(|(c, w)| format!("{} {:.0}%", c.label(), 100.0 * w / covered))
        .collect();
    evidence.push(format!(
        "kernels profiled with hardware counters cover {:.0}% of its kernel time: {}",
        100.0 * covered / total,
        shares.join(", ")
    ));
    Some(Classification {
        class: Boundedness::ALL[i],
        arithmetic_intensity: (bytes > 0.0).then(|| flops / bytes),
        ridge_point: None,
        basis: Basis::Kernels,
        evidence,
    })
}

/// A workload's class from its profile's GPM activity, against its GPU's roofline.
pub fn classify(profile: &WorkloadProfile, t: Thresholds) -> Classification {
    let (spec, known) = lookup_or_default(profile.gpu_name.as_deref());
    let mut evidence = Vec::new();
    if !known {
        evidence.push(format!(
            "GPU {:?} is not in the roofline table; judged with {}",
            profile.gpu_name.as_deref().unwrap_or("unknown"),
            spec.source
        ));
    }
    let duty = profile.duty().unwrap_or(0.0);
    let basis = if t == Thresholds::Fixed {
        Basis::FixedThresholds
    } else {
        Basis::Gpm
    };
    if duty < IDLE_BELOW {
        evidence.push(format!(
            "the GPU ran its kernels {:.1}% of the time",
            duty * 100.0
        ));
        return Classification {
            class: Boundedness::Idle,
            arithmetic_intensity: None,
            ridge_point: None,
            basis,
            evidence,
        };
    }
    if t == Thresholds::Roofline {
        if let Some(c) = from_profiled_kernels(profile, spec, evidence.clone()) {
            return c;
        }
    }
    let g = |s| profile.get(s).unwrap_or(0.0);
    let hmma = profile
        .get(S::TensorHmma)
        .unwrap_or_else(|| g(S::TensorActive));
    let parts = [
        (Precision::Bf16Tensor, hmma),
        (Precision::Int8Tensor, g(S::TensorImma)),
        (Precision::Fp64Tensor, g(S::TensorDfma)),
        (Precision::Fp32, g(S::PipeFp32) + g(S::PipeFp16)),
        (Precision::Fp64, g(S::PipeFp64)),
    ];
    // The busiest pipe bounds the compute side: summing FLOPs of pipes with different
    // peaks and dividing by one of them would overstate how close it is to its roof.
    let (dominant, activity) = parts
        .iter()
        .copied()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((Precision::Bf16Tensor, 0.0));
    let flops = activity * spec.peak(dominant);
    let bytes = g(S::DramActive) * spec.dram_bytes_per_second;
    // Activity while busy: GPM ratios are averages over all the time, idle included.
    let (class, ai, ridge) = judge(spec, dominant, flops / duty, bytes / duty, t);
    evidence.push(format!(
        "while busy ({:.0}% of the time): {:.0}% of the {dominant:?} peak, DRAM {:.0}% of {:.0} GB/s",
        duty * 100.0,
        100.0 * flops / duty / spec.peak(dominant),
        100.0 * bytes / duty / spec.dram_bytes_per_second,
        spec.dram_bytes_per_second / 1e9
    ));
    if let Some(ai) = ai {
        let against = if t == Thresholds::Fixed {
            "the fixed thresholds 10 and 50".to_string()
        } else {
            format!("the ridge point {ridge:.0} FLOP/B")
        };
        evidence.push(format!(
            "arithmetic intensity {ai:.1} FLOP/B against {against}"
        ));
    }
    Classification {
        class,
        arithmetic_intensity: ai,
        ridge_point: (t == Thresholds::Roofline).then_some(ridge),
        basis,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::profile::{Coverage, Window};
    use crate::analysis::roofline::lookup;

    const W: Window = Window {
        start: 0.0,
        end: 1.0,
    };

    fn h100() -> &'static GpuSpec {
        lookup("NVIDIA H100 80GB HBM3").unwrap()
    }

    fn kernel(name: &str, seconds: f64, flops: f64, bytes: f64) -> KernelCounters {
        KernelCounters {
            name: name.into(),
            launches: 1.0,
            seconds,
            flops: vec![(Precision::Bf16Tensor, flops)],
            dram_bytes: bytes,
        }
    }

    #[test]
    fn kernels_with_known_flops_and_bytes() {
        let r = Thresholds::Roofline;
        // BF16 GEMM 8192^3: 2*8192^3 = 1.1e12 FLOP in 1.2 ms (~916 TFLOP/s), 400 MB moved
        let gemm = kernel("gemm", 1.2e-3, 2.0 * 8192f64.powi(3), 400e6);
        assert_eq!(classify_kernel(&gemm, h100(), r), Boundedness::ComputeBound);
        // vector add of 1 GiB: 3 GiB moved in 1.0 ms, 0.27 GFLOP
        let add = kernel("add", 1.0e-3, 2.7e8, 3.0 * 1073741824.0);
        assert_eq!(classify_kernel(&add, h100(), r), Boundedness::MemoryBound);
        // near the ridge: 295 FLOP/B at 60% of both peaks
        let near = kernel("near", 1e-3, 0.6 * 989.5e9, 0.6 * 3.35e9);
        assert_eq!(classify_kernel(&near, h100(), r), Boundedness::Mixed);
        // a tiny kernel that barely computes or moves anything
        let tiny = kernel("tiny", 5e-6, 1e6, 1e5);
        assert_eq!(classify_kernel(&tiny, h100(), r), Boundedness::LatencyBound);
    }

    #[test]
    fn a_workload_weighs_its_kernels_by_time() {
        let gemm = kernel("gemm", 5e-3, 4.5e12, 2e9);
        let add = |s: f64| kernel("add", s, 1e8, 3.35e12 * s);
        let r = Thresholds::Roofline;
        assert_eq!(
            classify_kernels(&[gemm.clone(), add(1e-3), add(1e-3)], h100(), r),
            Some(Boundedness::ComputeBound)
        );
        assert_eq!(
            classify_kernels(&[gemm, add(4e-3), add(4e-3)], h100(), r),
            Some(Boundedness::MemoryBound)
        );
    }

    fn gpm(duty: f64, tensor: f64, dram: f64, fp32: f64) -> WorkloadProfile {
        let mut p = WorkloadProfile::new("w", Coverage::NvmlOnly)
            .with(S::Busy, duty, W)
            .with(S::TensorActive, tensor, W)
            .with(S::TensorHmma, tensor, W)
            .with(S::DramActive, dram, W)
            .with(S::PipeFp32, fp32, W);
        p.gpu_name = Some("NVIDIA H100 80GB HBM3".into());
        p
    }

    #[test]
    fn gpm_profiles_classify_against_the_h100_roofline() {
        let r = Thresholds::Roofline;
        assert_eq!(
            classify(&gpm(0.95, 0.7, 0.2, 0.05), r).class,
            Boundedness::ComputeBound
        );
        assert_eq!(
            classify(&gpm(0.95, 0.02, 0.85, 0.1), r).class,
            Boundedness::MemoryBound
        );
        assert_eq!(
            classify(&gpm(0.9, 0.02, 0.05, 0.02), r).class,
            Boundedness::LatencyBound
        );
        assert_eq!(
            classify(&gpm(0.01, 0.0, 0.0, 0.0), r).class,
            Boundedness::Idle
        );
        let both = classify(&gpm(0.9, 0.6, 0.6, 0.0), r);
        assert_eq!(both.class, Boundedness::Mixed, "{both:?}");
    }

    fn profiled(
        name: &str,
        busy: f64,
        tensor: f64,
        bytes: f64,
    ) -> crate::analysis::profile::KernelStat {
        use crate::analysis::profile::{KernelStat, ProfiledLaunch};
        KernelStat {
            name: name.into(),
            launches_per_second: 100.0,
            busy,
            shape: None,
            counters: Some(ProfiledLaunch {
                flops: [("tensor".to_string(), tensor)].into(),
                dram_bytes: bytes,
                seconds: 178e-6,
            }),
        }
    }

    #[test]
    fn profiled_kernels_decide_the_class_when_they_cover_most_kernel_time() {
        // GPM alone reads this workload as memory-bound; its profiled GEMM (the H100
        // run's 4096³ bf16: 1.374e11 FLOPs, 1.9e8 bytes in 178 µs) says otherwise.
        let mut p = gpm(0.95, 0.02, 0.85, 0.1);
        p.kernels = vec![profiled("gemm", 0.7, 1.374e11, 1.9e8)];
        let mut other = profiled("other", 0.3, 0.0, 0.0);
        other.counters = None;
        p.kernels.push(other.clone());
        let c = classify(&p, Thresholds::Roofline);
        assert_eq!(
            (c.class, c.basis),
            (Boundedness::ComputeBound, Basis::Kernels),
            "{c:?}"
        );
        assert!(c.evidence.iter().any(|e| e.contains("cover 70%")), "{c:?}");
        // Covering less than half the kernel time, the counters step back for GPM.
        p.kernels = vec![profiled("gemm", 0.3, 1.374e11, 1.9e8), {
            other.busy = 0.7;
            other
        }];
        let c = classify(&p, Thresholds::Roofline);
        assert_eq!(
            (c.class, c.basis),
            (Boundedness::MemoryBound, Basis::Gpm),
            "{c:?}"
        );
    }

    #[test]
    fn fixed_thresholds_and_the_roofline_disagree_at_30_flop_per_byte() {
        // tensor 0.0508 of 989.5 TFLOP/s over dram 0.5 of 3.35 TB/s = 30 FLOP/B
        let p = gpm(1.0, 0.0508, 0.5, 0.0);
        let roofline = classify(&p, Thresholds::Roofline);
        let fixed = classify(&p, Thresholds::Fixed);
        assert!((roofline.arithmetic_intensity.unwrap() - 30.0).abs() < 0.5);
        assert_eq!(roofline.class, Boundedness::MemoryBound);
        assert_eq!(fixed.class, Boundedness::Mixed);
        assert_eq!(fixed.basis, Basis::FixedThresholds);
        assert!("bogus"
            .parse::<Thresholds>()
            .unwrap_err()
            .contains("roofline or fixed"));
    }

    #[test]
    fn an_unknown_gpu_is_judged_as_an_h100_and_says_so() {
        let mut p = gpm(0.95, 0.7, 0.2, 0.05);
        p.gpu_name = Some("NVIDIA Mystery".into());
        let c = classify(&p, Thresholds::Roofline);
        assert!(c.evidence[0].contains("not in the roofline table"), "{c:?}");
    }
}
