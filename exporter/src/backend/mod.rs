//! The seam between collectors and a source of GPU data: NVML on a real node, or the
//! simulator for demos and tests. Collectors only ever see these traits.
//!
//! Every read returns a [`Reading`]: `Err(ReadError::NotSupported)` means "this device
//! has no such field" (the series is absent, not zero); `Err(ReadError::GpuLost)` means
//! the GPU stopped answering (its `poolprof_gpu_up` goes to 0).

pub mod nvml;
pub mod sim;
pub mod types;

pub use types::*;

use std::sync::Arc;

/// Why a field could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadError {
    /// The device or driver does not offer this field; the series stays absent.
    #[error("not supported by this device")]
    NotSupported,
    /// The backend does not read this field because the named field measures the same
    /// quantity better (NVML's 20 ms PCIe sample where GPM's PCIe bytes exist).
    #[error("not read: {0} measures the same quantity")]
    Replaced(&'static str),
    /// The field needs a second sample first (GPM, process utilization); try next interval.
    #[error("no sample yet")]
    Pending,
    /// The GPU no longer answers (fallen off the bus, Xid 79, reset in progress).
    #[error("GPU is lost: {0}")]
    GpuLost(String),
    /// Any other failure of this one read; the rest of the device is still read.
    #[error("{0}")]
    Failed(String),
}

/// The outcome of one read of one device field.
pub type Reading<T> = Result<T, ReadError>;

/// A source of GPUs: NVML or the simulator.
pub trait Backend: Send + Sync {
    /// `"nvml"` or `"sim"`, published as `poolprof_exporter_build_info{backend}`.
    fn kind(&self) -> &'static str;
    /// Driver and CUDA versions for `poolprof_gpu_info`.
    fn system(&self) -> Reading<SystemInfo>;
    /// The devices found at start. A device that later fails stays in this list and
    /// answers `ReadError::GpuLost` until it comes back.
    fn devices(&self) -> Vec<Arc<dyn Device>>;
    /// Xid events seen since the last call, oldest first (drained).
    fn drain_xid_events(&self) -> Vec<XidEvent>;
}

/// One physical GPU. Each method maps to one NVML query (or a small group of them).
pub trait Device: Send + Sync {
    /// Index, UUID, name and PCI bus id. Read once at start and cached by the caller.
    fn identity(&self) -> Reading<Identity>;
    /// GPU and memory-controller busy ratios over the driver's last sample period.
    fn utilization(&self) -> Reading<Utilization>;
    /// Frame-buffer memory.
    fn memory(&self) -> Reading<Memory>;
    /// Current board power draw in watts.
    fn power_usage_watts(&self) -> Reading<f64>;
    /// Enforced power limit in watts.
    fn power_limit_watts(&self) -> Reading<f64>;
    /// Energy consumed since the driver loaded, in joules (a counter).
    fn energy_joules(&self) -> Reading<f64>;
    /// Temperatures by sensor.
    fn temperatures(&self) -> Reading<Vec<Temperature>>;
    /// Current clocks by domain, in Hz.
    fn clocks(&self) -> Reading<Vec<ClockReading>>;
    /// PCIe throughput over the driver's last 20 ms window; `Replaced` where GPM
    /// measures it (the gpm collector then writes the same family), so no GPU has
    /// two PCIe traffic series per direction.
    fn pcie_throughput(&self) -> Reading<PcieThroughput>;
    /// PCIe replay counter (a counter).
    fn pcie_replays(&self) -> Reading<u64>;
    /// Current PCIe link generation and width.
    fn pcie_link(&self) -> Reading<PcieLink>;
    /// Reasons the clocks are held below their maximum right now.
    fn clock_event_reasons(&self) -> Reading<ClockEventReasons>;
    /// ECC error counters since the last driver reload / over the lifetime.
    fn ecc_errors(&self) -> Reading<EccErrors>;
    /// Row-remapping counters (Ampere and newer).
    fn remapped_rows(&self) -> Reading<RemappedRows>;
    /// Per-link NVLink state and traffic.
    fn nvlinks(&self) -> Reading<Vec<NvLink>>;
    /// Video encoder busy ratio.
    fn encoder_utilization(&self) -> Reading<f64>;
    /// Video decoder busy ratio.
    fn decoder_utilization(&self) -> Reading<f64>;
    /// Compute processes with their memory and, where sampled, their SM and memory use.
    fn processes(&self) -> Reading<Vec<ProcessUsage>>;
    /// GPM metrics (Hopper and newer) between the previous and this call.
    fn gpm(&self) -> Reading<GpmMetrics>;
    /// MIG instances when MIG mode is on; an empty list when it is off.
    fn mig_instances(&self) -> Reading<Vec<MigInstance>>;
}
