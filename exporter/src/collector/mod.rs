//! Collectors: one file per group of metrics, each behind the [`Collector`] trait
//! (node_exporter's habit), run by the collection loop every `--collect-interval`.

pub mod clock_events;
pub mod clocks;
pub mod codec;
pub mod ecc;
pub mod gpm;
pub mod memory;
pub mod mig;
pub mod nvlink;
pub mod pcie;
pub mod power;
pub mod process;
pub mod readings;
pub mod runner;
pub mod temperature;
pub mod utilization;
pub mod xid;

#[cfg(test)]
pub(crate) mod test_device;

use crate::backend::{Backend, Device};
use crate::registry::MetricSet;
use std::sync::Arc;

pub use readings::Readings;
pub use runner::Collection;

/// Every device collector, in the order they run. The kernel collector (CUPTI
/// aggregates) is appended by `main` with [`Collection::add_collector`].
pub fn default_collectors() -> Vec<Box<dyn Collector>> {
    vec![
        Box::new(utilization::UtilizationCollector::default()),
        Box::new(memory::MemoryCollector::default()),
        Box::new(power::PowerCollector::default()),
        Box::new(temperature::TemperatureCollector::default()),
        Box::new(clocks::ClocksCollector::default()),
        Box::new(pcie::PcieCollector::default()),
        Box::new(clock_events::ClockEventsCollector::default()),
        Box::new(ecc::EccCollector::default()),
        Box::new(xid::XidCollector::default()),
        Box::new(nvlink::NvLinkCollector::default()),
        Box::new(codec::CodecCollector::default()),
        Box::new(process::ProcessCollector::default()),
        Box::new(gpm::GpmCollector::default()),
        Box::new(mig::MigCollector::default()),
    ]
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
