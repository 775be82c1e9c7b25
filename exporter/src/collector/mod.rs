//! Collectors: one file per group of metrics, each behind the [`Collector`] trait
//! (node_exporter's habit), run by the collection loop every `--collect-interval`.

pub mod clock_events;
pub mod clocks;
pub mod codec;
pub mod cpu_time;
pub mod ecc;
pub mod gpm;
pub mod kernels;
pub mod memory;
pub mod mig;
pub mod nvlink;
pub mod pcie;
pub mod pods;
pub mod power;
pub mod process;
pub mod readings;
pub mod runner;
pub mod scope;
pub mod selection;
pub mod self_process;
pub mod temperature;
pub mod utilization;
pub mod xid;

#[cfg(test)]
mod sim_tests;
#[cfg(test)]
pub(crate) mod test_device;

use crate::backend::{Backend, Device};
use crate::registry::MetricSet;
use std::sync::Arc;

pub use readings::Readings;
pub use runner::{Collection, CollectionHandle};
pub use selection::{Selection, COLLECTOR_NAMES};

/// Every per-GPU metric a fully featured GPU publishes (GPM, NVLink, ECC, a compute
/// process, an Xid seen), with `gpu` and `uuid` labels. End-to-end tests check them.
pub const DEVICE_METRICS: &[&str] = &[
    "poolprof_gpu_up",
    "poolprof_gpu_info",
    "poolprof_gpu_utilization_ratio",
    "poolprof_gpu_memory_controller_utilization_ratio",
    "poolprof_gpu_memory_total_bytes",
    "poolprof_gpu_memory_used_bytes",
    "poolprof_gpu_memory_free_bytes",
    "poolprof_gpu_memory_reserved_bytes",
    "poolprof_gpu_power_usage_watts",
    "poolprof_gpu_power_limit_watts",
    "poolprof_gpu_energy_joules_total",
    "poolprof_gpu_temperature_celsius",
    "poolprof_gpu_clock_hz",
    "poolprof_gpu_pcie_replays_total",
    "poolprof_gpu_pcie_link_generation",
    "poolprof_gpu_pcie_link_width",
    "poolprof_gpu_clock_event_active",
    "poolprof_gpu_ecc_errors_total",
    "poolprof_gpu_remapped_rows_total",
    "poolprof_gpu_row_remap_pending",
    "poolprof_gpu_row_remap_failed",
    "poolprof_gpu_xid_errors_total",
    "poolprof_gpu_nvlink_active",
    "poolprof_gpu_nvlink_bytes_total",
    "poolprof_gpu_encoder_utilization_ratio",
    "poolprof_gpu_decoder_utilization_ratio",
    "poolprof_process_gpu_memory_bytes",
    "poolprof_process_sm_utilization_ratio",
    "poolprof_process_memory_utilization_ratio",
    "poolprof_gpu_sm_active_ratio",
    "poolprof_gpu_sm_occupancy_ratio",
    "poolprof_gpu_graphics_engine_active_ratio",
    "poolprof_gpu_tensor_any_active_ratio",
    "poolprof_gpu_tensor_active_ratio",
    "poolprof_gpu_dram_active_ratio",
    "poolprof_gpu_pipe_active_ratio",
    "poolprof_gpu_pcie_bytes_per_second",
    "poolprof_gpu_nvlink_bytes_per_second",
];

/// Per-MIG-instance metrics, with `gpu`, `uuid`, `gpu_instance`, `mig_profile` and
/// `mig_uuid` (the `MIG-…` UUID that `poolprof_gpu_pod_info{uuid}` names).
pub const MIG_METRICS: &[&str] = &[
    "poolprof_mig_memory_total_bytes",
    "poolprof_mig_memory_used_bytes",
    "poolprof_mig_memory_free_bytes",
    "poolprof_mig_sm_active_ratio",
    "poolprof_mig_sm_occupancy_ratio",
    "poolprof_mig_graphics_engine_active_ratio",
    "poolprof_mig_tensor_any_active_ratio",
    "poolprof_mig_tensor_active_ratio",
    "poolprof_mig_dram_active_ratio",
    "poolprof_mig_pipe_active_ratio",
    "poolprof_mig_pcie_bytes_per_second",
    "poolprof_mig_nvlink_bytes_per_second",
];

/// The exporter's own health metrics.
pub const EXPORTER_METRICS: &[&str] = &[
    "poolprof_exporter_build_info",
    "poolprof_exporter_collector_success",
    "poolprof_exporter_collector_duration_seconds",
    "poolprof_exporter_collector_cpu_seconds_total",
];

/// Every device collector, in the order they run. The kernel collector (CUPTI
/// aggregates) and the pods collector (kubelet) are appended by `app` with
/// [`Collection::add_collector`] when enabled; their names are in
/// `kernels::KERNEL_METRICS` and `pods::POD_METRICS`.
pub fn default_collectors() -> Vec<Box<dyn Collector>> {
    vec![
        Box::new(utilization::UtilizationCollector::default()),
        Box::new(memory::MemoryCollector::default()),
        // Right after the two it reuses: a lone process is given the utilization and
        // memory just read, which the device keeps only for a moment (SAME_COLLECTION).
        Box::new(process::ProcessCollector::default()),
        Box::new(power::PowerCollector::default()),
        Box::new(temperature::TemperatureCollector::default()),
        Box::new(clocks::ClocksCollector::default()),
        Box::new(pcie::PcieCollector::default()),
        Box::new(clock_events::ClockEventsCollector::default()),
        Box::new(ecc::EccCollector::default()),
        Box::new(xid::XidCollector::default()),
        Box::new(nvlink::NvLinkCollector::default()),
        Box::new(codec::CodecCollector::default()),
        Box::new(gpm::GpmCollector::default()),
        Box::new(mig::MigCollector::default()),
    ]
}

/// The device collectors that `selection` leaves on, in the order they run; the
/// process collector labels its series with `pid` when `pid_label`.
pub fn selected_collectors(selection: &Selection, pid_label: bool) -> Vec<Box<dyn Collector>> {
    default_collectors()
        .into_iter()
        .map(|collector| match collector.name() {
            "process" => Box::new(process::ProcessCollector::default().pid_label(pid_label)),
            _ => collector,
        })
        .filter(|collector| selection.enabled(collector.name()))
        .collect()
}

/// A GPU that answered this interval, with the labels every per-GPU series carries.
#[derive(Clone)]
pub struct Gpu {
    /// NVML index, the `gpu` label.
    pub index: String,
    /// The `uuid` label.
    pub uuid: String,
    /// The device to read.
    pub device: Arc<dyn Device>,
}

impl Gpu {
    /// The `gpu` and `uuid` labels.
    pub fn labels(&self) -> [(&'static str, &str); 2] {
        [("gpu", self.index.as_str()), ("uuid", self.uuid.as_str())]
    }

    /// The `gpu` and `uuid` labels followed by `extra`.
    pub fn labels_with<'a>(
        &'a self,
        extra: &[(&'static str, &'a str)],
    ) -> Vec<(&'static str, &'a str)> {
        let mut labels = Vec::with_capacity(2 + extra.len());
        labels.extend(self.labels());
        labels.extend_from_slice(extra);
        labels
    }
}

/// Why a collector failed this interval. Other collectors still run.
#[derive(Debug, thiserror::Error)]
#[error("collector {collector}: {message}")]
pub struct CollectError {
    /// The collector's name.
    pub collector: &'static str,
    /// What went wrong, for the log.
    pub message: String,
}

/// One group of metrics.
pub trait Collector: Send {
    /// Name used in `poolprof_exporter_collector_success{collector}`.
    fn name(&self) -> &'static str;
    /// Reads the GPUs that are up and writes samples into `out`. A field a device
    /// does not support is skipped; an error fails only this collector.
    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError>;
    /// Called once when the collector joins a [`Collection`], for collectors that read
    /// backend-wide state (Xid events are drained from the backend, not a device).
    fn attach(&mut self, _backend: &Arc<dyn Backend>) {}
}
