//! A workload's measured demands on a GPU: what classification and co-location read.
//!
//! A profile summarizes what the exporter published while the workload ran, each value
//! with the window it came from. GPU-wide signals (GPM, NVML utilization) count only
//! over the steps where this workload was the only one busy on its GPU, so a profile is
//! the workload alone, never the sum of co-tenants.

use std::collections::BTreeMap;

pub mod build;

use serde::{Deserialize, Serialize};

use crate::analysis::occupancy::KernelShape;

/// A span of time, unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// The first sample's time.
    pub start: f64,
    /// The last sample's time.
    pub end: f64,
}

/// A summarized signal and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The summary (the mean over the busy steps, unless the signal says otherwise).
    pub value: f64,
    /// The window the samples were taken in.
    pub window: Window,
    /// How many samples the value summarizes.
    pub samples: u32,
}

/// What a profile value measures. Ratios are 0–1 of the device's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileSignal {
    /// Fraction of time a kernel ran (`poolprof_gpu_utilization_ratio`): the duty cycle.
    Busy,
    /// The workload's own SM utilization (`poolprof_process_sm_utilization_ratio`).
    ProcessSm,
    /// GPM: fraction of SM cycles with at least one warp resident.
    SmActive,
    /// GPM: resident warps over the maximum.
    SmOccupancy,
    /// GPM: tensor pipes active, any kind.
    TensorActive,
    /// GPM: half-precision (HMMA) tensor pipes active.
    TensorHmma,
    /// GPM: integer (IMMA) tensor pipes active.
    TensorImma,
    /// GPM: double-precision (DMMA) tensor pipes active.
    TensorDfma,
    /// GPM: DRAM bandwidth in use, of the peak.
    DramActive,
    /// GPM: FP64 pipe active.
    PipeFp64,
    /// GPM: FP32 pipe active.
    PipeFp32,
    /// GPM: FP16 pipe active.
    PipeFp16,
    /// GPM: integer pipe active.
    PipeInteger,
    /// PCIe bytes per second, both directions.
    PcieBytesPerSecond,
    /// GPU memory the workload holds, bytes (the mean).
    MemoryBytes,
    /// The most GPU memory the workload held, bytes.
    MemoryPeakBytes,
    /// The upper bound of its memory forecast over the analyzer's horizons, bytes.
    MemoryForecastPeakBytes,
    /// Kernel seconds per second of wall time (CUPTI; above 1 with concurrent streams).
    KernelBusy,
    /// Kernel launches per second (CUPTI).
    LaunchRate,
    /// Mean kernel duration, seconds (CUPTI).
    MeanKernelSeconds,
    /// Time-weighted mean kernel duration, seconds: how long a kernel that another
    /// process finds running still runs on average (Σ n·d² / Σ n·d over kernel names).
    ResidualKernelSeconds,
    /// Kernel time-weighted share of the GPU's SMs one launch occupies: its grid blocks
    /// over the blocks an SM holds, over the SM count (CUPTI launch shapes).
    SmFill,
}

impl ProfileSignal {
    /// Every signal, in a fixed order.
    pub const ALL: [ProfileSignal; 22] = [
        ProfileSignal::Busy,
        ProfileSignal::ProcessSm,
        ProfileSignal::SmActive,
        ProfileSignal::SmOccupancy,
        ProfileSignal::TensorActive,
        ProfileSignal::TensorHmma,
        ProfileSignal::TensorImma,
        ProfileSignal::TensorDfma,
        ProfileSignal::DramActive,
        ProfileSignal::PipeFp64,
        ProfileSignal::PipeFp32,
        ProfileSignal::PipeFp16,
        ProfileSignal::PipeInteger,
        ProfileSignal::PcieBytesPerSecond,
        ProfileSignal::MemoryBytes,
        ProfileSignal::MemoryPeakBytes,
        ProfileSignal::MemoryForecastPeakBytes,
        ProfileSignal::KernelBusy,
        ProfileSignal::LaunchRate,
        ProfileSignal::MeanKernelSeconds,
        ProfileSignal::ResidualKernelSeconds,
        ProfileSignal::SmFill,
    ];

    /// The snake_case name used in JSON and in the `signal` label.
    pub fn name(self) -> &'static str {
        match self {
            ProfileSignal::Busy => "busy",
            ProfileSignal::ProcessSm => "process_sm",
            ProfileSignal::SmActive => "sm_active",
            ProfileSignal::SmOccupancy => "sm_occupancy",
            ProfileSignal::TensorActive => "tensor_active",
            ProfileSignal::TensorHmma => "tensor_hmma",
            ProfileSignal::TensorImma => "tensor_imma",
            ProfileSignal::TensorDfma => "tensor_dfma",
            ProfileSignal::DramActive => "dram_active",
            ProfileSignal::PipeFp64 => "pipe_fp64",
            ProfileSignal::PipeFp32 => "pipe_fp32",
            ProfileSignal::PipeFp16 => "pipe_fp16",
            ProfileSignal::PipeInteger => "pipe_integer",
            ProfileSignal::PcieBytesPerSecond => "pcie_bytes_per_second",
            ProfileSignal::MemoryBytes => "memory_bytes",
            ProfileSignal::MemoryPeakBytes => "memory_peak_bytes",
            ProfileSignal::MemoryForecastPeakBytes => "memory_forecast_peak_bytes",
            ProfileSignal::KernelBusy => "kernel_busy",
            ProfileSignal::LaunchRate => "launch_rate",
            ProfileSignal::MeanKernelSeconds => "mean_kernel_seconds",
            ProfileSignal::ResidualKernelSeconds => "residual_kernel_seconds",
            ProfileSignal::SmFill => "sm_fill",
        }
    }
}

/// How much of the workload the exporter could see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    /// NVML and GPM only: no injection library in the process, so no kernel signals.
    NvmlOnly,
    /// NVML plus kernel records from the injection library.
    Kernels,
    /// Given by hand (`POST /register`, a profiles file), not measured.
    Declared,
}

/// One kernel name's share of the workload (the exporter's top-K names, `other` for the rest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStat {
    /// The demangled kernel name, or `other`.
    pub name: String,
    /// Launches per second.
    pub launches_per_second: f64,
    /// Kernel seconds per second.
    pub busy: f64,
    /// The latest launch's shape, when the exporter published it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<KernelShape>,
    /// One launch measured with hardware counters, when the injection library ran
    /// with `POOLPROF_KERNEL_COUNTERS=1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<ProfiledLaunch>,
}

/// One launch of a kernel profiled with hardware counters (the exporter's
/// `poolprof_kernel_flops`, `poolprof_kernel_dram_bytes` and
/// `poolprof_kernel_profiled_duration_seconds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledLaunch {
    /// FLOPs by the exporter's `precision` label (`fp64`, `fp32`, `fp16`, `tensor`).
    pub flops: BTreeMap<String, f64>,
    /// DRAM bytes read plus written.
    pub dram_bytes: f64,
    /// GPU time of the launch, seconds.
    pub seconds: f64,
}

impl KernelStat {
    /// Mean duration of one launch, seconds; 0 when it never launched.
    pub fn mean_seconds(&self) -> f64 {
        if self.launches_per_second > 0.0 {
            self.busy / self.launches_per_second
        } else {
            0.0
        }
    }
}

/// A workload's demands, measured while it ran alone on a GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadProfile {
    /// The `workload` label.
    pub workload: String,
    /// The GPU it ran on (`uuid`), when one GPU holds it.
    pub uuid: Option<String>,
    /// That GPU's product name (`poolprof_gpu_info{name}`), for its roofline.
    pub gpu_name: Option<String>,
    /// That GPU's memory, bytes.
    pub gpu_memory_bytes: Option<f64>,
    /// What the exporter could see.
    pub coverage: Coverage,
    /// The summarized signals; a signal the device or the exporter lacks is absent.
    pub signals: BTreeMap<ProfileSignal, Measured>,
    /// Kernel time by kernel name, busiest first (empty without the injection library).
    pub kernels: Vec<KernelStat>,
    /// Share of kernel time by the class kernel names suggest (`compute_bound`,
    /// `memory_bound`, `unknown`; see `classify::kernel_name`); empty without kernels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kernel_time_by_class: BTreeMap<String, f64>,
    /// Periods of its duty cycle (the per-series stage's, strongest first; empty when aperiodic).
    #[serde(default)]
    pub periods: Vec<crate::analysis::periodicity::Period>,
}

impl WorkloadProfile {
    /// An empty profile for `workload`.
    pub fn new(workload: impl Into<String>, coverage: Coverage) -> Self {
        WorkloadProfile {
            workload: workload.into(),
            uuid: None,
            gpu_name: None,
            gpu_memory_bytes: None,
            coverage,
            signals: BTreeMap::new(),
            kernels: Vec::new(),
            kernel_time_by_class: BTreeMap::new(),
            periods: Vec::new(),
        }
    }

    /// The value of `signal`, when measured.
    pub fn get(&self, signal: ProfileSignal) -> Option<f64> {
        self.signals.get(&signal).map(|m| m.value)
    }

    /// Sets `signal` (builder style, for tests and hand-made profiles).
    pub fn with(mut self, signal: ProfileSignal, value: f64, window: Window) -> Self {
        self.signals.insert(
            signal,
            Measured {
                value,
                window,
                samples: 1,
            },
        );
        self
    }

    /// The duty cycle: NVML utilization, else the workload's SM utilization, else the
    /// kernel time (capped at 1).
    pub fn duty(&self) -> Option<f64> {
        self.get(ProfileSignal::Busy)
            .or_else(|| self.get(ProfileSignal::ProcessSm))
            .or_else(|| self.get(ProfileSignal::KernelBusy).map(|k| k.min(1.0)))
            .map(|d| d.clamp(0.0, 1.0))
    }
}
