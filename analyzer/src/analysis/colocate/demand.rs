//! What the model reads of a profile: a workload's demands, with the stand-ins used
//! when the exporter could not see kernels.

use serde::{Deserialize, Serialize};

use crate::analysis::profile::{ProfileSignal, WorkloadProfile};

/// Launch rate assumed per unit of duty cycle when no kernel records exist: 20 µs
/// kernels back to back, the median of the calibration suite's mean kernel durations
/// (3.7–97 µs, the bandwidth loop aside).
pub const NVML_ONLY_KERNEL_SECONDS: f64 = 20e-6;

/// A workload's demands on the GPU, as the co-location model reads them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Demand {
    /// Fraction of wall time a kernel of it runs (duty cycle), 0–1.
    pub duty: f64,
    /// Kernel launches per second.
    pub launch_rate: f64,
    /// How long a kernel of it that another process finds running still holds the GPU,
    /// seconds (time-weighted mean kernel duration).
    pub residual_seconds: f64,
    /// Resident warps over the maximum, averaged over time (GPM occupancy).
    pub occupancy: f64,
    /// Occupancy while its kernels run: how full its kernels leave the SMs, 0–1.
    pub occupancy_busy: f64,
    /// Fraction of SMs its kernels keep busy while they run, 0–1.
    pub sm_busy: f64,
    /// Fraction of DRAM bandwidth it uses while its kernels run, 0–1.
    pub dram_busy: f64,
    /// GPU memory it needs, bytes: the larger of its observed peak and its forecast peak.
    pub memory_bytes: f64,
    /// Whether launch rate and residual come from kernel records (else stand-ins).
    pub kernels_seen: bool,
}

impl Demand {
    /// The demands in `profile`; absent signals count as idle, kernel timing falls back
    /// to [`NVML_ONLY_KERNEL_SECONDS`] when the injection library was not there.
    pub fn of(profile: &WorkloadProfile) -> Demand {
        let get = |s| profile.get(s).filter(|v: &f64| v.is_finite() && *v >= 0.0);
        let duty = profile.duty().unwrap_or(0.0);
        let sm_active = get(ProfileSignal::SmActive).unwrap_or(duty).min(1.0);
        let occupancy = get(ProfileSignal::SmOccupancy).unwrap_or(0.0).min(1.0);
        let dram = get(ProfileSignal::DramActive).unwrap_or(0.0).min(1.0);
        let while_busy = |v: f64, of: f64| if of > 1e-3 { (v / of).min(1.0) } else { 0.0 };
        let launches = get(ProfileSignal::LaunchRate).filter(|l| *l > 0.0);
        let residual = get(ProfileSignal::ResidualKernelSeconds)
            .or_else(|| get(ProfileSignal::MeanKernelSeconds))
            .filter(|r| *r > 0.0);
        let kernels_seen = launches.is_some() && residual.is_some();
        let observed = get(ProfileSignal::MemoryPeakBytes)
            .or_else(|| get(ProfileSignal::MemoryBytes))
            .unwrap_or(0.0);
        let memory = observed.max(get(ProfileSignal::MemoryForecastPeakBytes).unwrap_or(0.0));
        Demand {
            duty,
            launch_rate: launches.unwrap_or(duty / NVML_ONLY_KERNEL_SECONDS),
            residual_seconds: residual.unwrap_or(NVML_ONLY_KERNEL_SECONDS),
            occupancy,
            occupancy_busy: while_busy(occupancy, sm_active),
            sm_busy: while_busy(sm_active, duty),
            dram_busy: while_busy(dram, duty),
            memory_bytes: memory,
            kernels_seen,
        }
    }

    /// An idle workload: it asks nothing of the GPU.
    pub fn idle() -> Demand {
        Demand {
            duty: 0.0,
            launch_rate: 0.0,
            residual_seconds: 0.0,
            occupancy: 0.0,
            occupancy_busy: 0.0,
            sm_busy: 0.0,
            dram_busy: 0.0,
            memory_bytes: 0.0,
            kernels_seen: true,
        }
    }
}
