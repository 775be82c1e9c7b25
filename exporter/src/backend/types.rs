//! Plain data read from a device. Units are base units (bytes, watts, hertz, ratios 0–1).

/// Versions of the node's driver stack.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemInfo {
    /// NVIDIA driver version, e.g. `580.159.04`.
    pub driver_version: String,
    /// CUDA version the driver supports, e.g. `13.0`.
    pub cuda_version: String,
}

/// What identifies a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// NVML index (`gpu` label).
    pub index: u32,
    /// `GPU-…` UUID (`uuid` label).
    pub uuid: String,
    /// Product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// PCI bus id, e.g. `00000000:18:00.0`.
    pub pci_bus_id: String,
}

/// Busy ratios over the driver's sample period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Utilization {
    /// Fraction of time one or more kernels ran.
    pub gpu: f64,
    /// Fraction of time device memory was read or written.
    pub memory: f64,
}

/// Frame-buffer memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    /// Total installed memory.
    pub total_bytes: u64,
    /// Memory allocated by processes.
    pub used_bytes: u64,
    /// Memory available for allocation.
    pub free_bytes: u64,
    /// Memory the driver reserves for itself, where reported.
    pub reserved_bytes: Option<u64>,
}

/// One temperature sensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Temperature {
    /// `gpu` (core) or `memory` (HBM).
    pub sensor: &'static str,
    /// Degrees Celsius.
    pub celsius: f64,
}

/// One clock domain.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockReading {
    /// `graphics`, `sm`, `memory` or `video`.
    pub clock: &'static str,
    /// Current frequency in Hz.
    pub hz: f64,
}

/// PCIe throughput in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PcieThroughput {
    /// Host-bound traffic leaving the GPU.
    pub tx_bytes_per_second: f64,
    /// Traffic arriving at the GPU.
    pub rx_bytes_per_second: f64,
}

/// Current PCIe link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PcieLink {
    /// Link generation (1–6).
    pub generation: u32,
    /// Lanes.
    pub width: u32,
}

/// NVML's clock event (throttle) reason bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockEventReasons(pub u64);

impl ClockEventReasons {
    /// NVML's bit for each reason, with the label value we publish.
    pub const NAMES: [(u64, &'static str); 9] = [
        (0x1, "gpu_idle"),
        (0x2, "applications_clocks_setting"),
        (0x4, "sw_power_cap"),
        (0x8, "hw_slowdown"),
        (0x10, "sync_boost"),
        (0x20, "sw_thermal_slowdown"),
        (0x40, "hw_thermal_slowdown"),
        (0x80, "hw_power_brake_slowdown"),
        (0x100, "display_clock_setting"),
    ];

    /// Each known reason with whether it is active now.
    pub fn iter(self) -> impl Iterator<Item = (&'static str, bool)> {
        Self::NAMES
            .into_iter()
            .map(move |(bit, name)| (name, self.0 & bit != 0))
    }
}

/// ECC error counts (counters). `None` where the device does not report that kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EccErrors {
    /// Single-bit errors corrected, over the GPU's lifetime.
    pub corrected_total: u64,
    /// Double-bit errors not corrected, over the GPU's lifetime.
    pub uncorrected_total: u64,
}

/// Row-remapping state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RemappedRows {
    /// Rows remapped for correctable errors.
    pub correctable: u64,
    /// Rows remapped for uncorrectable errors.
    pub uncorrectable: u64,
    /// A remap is pending until the next GPU reset.
    pub pending: bool,
    /// A remap failed: the GPU needs service.
    pub failed: bool,
}

/// One NVLink link.
#[derive(Debug, Clone, PartialEq)]
pub struct NvLink {
    /// Link number.
    pub link: u32,
    /// Whether the link is up.
    pub active: bool,
    /// Bytes sent over the link (counter), where the device reports it.
    pub tx_bytes: Option<u64>,
    /// Bytes received over the link (counter), where the device reports it.
    pub rx_bytes: Option<u64>,
}

/// One compute process on a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessUsage {
    /// Host pid (as NVML reports it).
    pub pid: u32,
    /// Device memory the process holds, where the driver can tell.
    pub used_memory_bytes: Option<u64>,
    /// SM busy ratio attributed to the process since the previous read of the samples.
    pub sm_ratio: Option<f64>,
    /// Memory-controller busy ratio attributed to the process.
    pub memory_ratio: Option<f64>,
    /// MIG GPU instance the process runs in, when MIG is on.
    pub gpu_instance_id: Option<u32>,
    /// Workload name when the backend knows it (the simulator); otherwise the
    /// collector resolves it from the process (DESIGN.md, "Workload identity").
    pub workload: Option<String>,
}

/// GPM ratios over the interval between two samples. A field is `None` when the
/// device does not offer that metric.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GpmMetrics {
    /// Fraction of time any warp was active on an SM, averaged over SMs.
    pub sm_active: Option<f64>,
    /// Resident warps over the theoretical maximum, averaged over SMs.
    pub sm_occupancy: Option<f64>,
    /// Fraction of time the graphics/compute engine was busy.
    pub graphics_engine_active: Option<f64>,
    /// Tensor pipes, any precision.
    pub tensor_any: Option<f64>,
    /// Tensor pipes, half-precision matrix ops (HMMA).
    pub tensor_hmma: Option<f64>,
    /// Tensor pipes, integer matrix ops (IMMA).
    pub tensor_imma: Option<f64>,
    /// Tensor pipes, FP64 matrix ops (DFMA).
    pub tensor_dfma: Option<f64>,
    /// DRAM bandwidth used over peak.
    pub dram_active: Option<f64>,
    /// FP64 pipe.
    pub pipe_fp64: Option<f64>,
    /// FP32 pipe.
    pub pipe_fp32: Option<f64>,
    /// FP16 pipe.
    pub pipe_fp16: Option<f64>,
    /// Integer pipe.
    pub pipe_integer: Option<f64>,
    /// PCIe bytes per second sent.
    pub pcie_tx_bytes_per_second: Option<f64>,
    /// PCIe bytes per second received.
    pub pcie_rx_bytes_per_second: Option<f64>,
    /// NVLink bytes per second sent, all links.
    pub nvlink_tx_bytes_per_second: Option<f64>,
    /// NVLink bytes per second received, all links.
    pub nvlink_rx_bytes_per_second: Option<f64>,
}

/// One MIG GPU instance.
#[derive(Debug, Clone, PartialEq)]
pub struct MigInstance {
    /// GPU instance id (`gpu_instance` label).
    pub gpu_instance_id: u32,
    /// Profile name, e.g. `1g.10gb` (`mig_profile` label).
    pub profile: String,
    /// The MIG device's `MIG-…` UUID (`mig_uuid` label), as the kubelet names it.
    pub uuid: Option<String>,
    /// The instance's memory, where readable.
    pub memory: Option<Memory>,
    /// GPM metrics of the instance, where readable.
    pub gpm: Option<GpmMetrics>,
}

/// An Xid error reported by the driver.
#[derive(Debug, Clone, PartialEq)]
pub struct XidEvent {
    /// UUID of the GPU that raised it.
    pub uuid: String,
    /// The Xid code (e.g. 79: fallen off the bus).
    pub xid: u64,
}
