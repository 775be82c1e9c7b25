//! Collectors: one file per group of metrics, each behind the [`Collector`] trait
//! (node_exporter's habit), run by the collection loop every `--collect-interval`.

use crate::backend::Device;
use crate::registry::MetricSet;
use std::sync::Arc;

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
}
