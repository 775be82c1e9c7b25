//! Frame-buffer memory.
//!
//! Metrics:
//! - `poolprof_gpu_memory_total_bytes{gpu,uuid}`
//! - `poolprof_gpu_memory_used_bytes{gpu,uuid}`
//! - `poolprof_gpu_memory_free_bytes{gpu,uuid}`
//! - `poolprof_gpu_memory_reserved_bytes{gpu,uuid}` (where the driver reports it)

use super::scope::Scope;
use super::{CollectError, Collector, Gpu, Readings};
use crate::backend::Memory;
use crate::registry::MetricSet;

const NAME: &str = "memory";

/// Reads `Device::memory`.
#[derive(Debug, Default)]
pub struct MemoryCollector {
    readings: Readings,
}

/// Writes the memory gauges of `memory` for `scope` with `labels`; shared with the
/// MIG collector.
pub(crate) fn write_memory(
    out: &mut MetricSet,
    scope: Scope,
    labels: &[(&str, &str)],
    memory: &Memory,
) {
    let mut gauge = |what: &str, help: &str, bytes: u64| {
        out.gauge(
            &scope.metric(&format!("memory_{what}_bytes")),
            &scope.help(help),
            labels,
            bytes as f64,
        );
    };
    gauge(
        "total",
        "Frame-buffer memory of {the}, in bytes.",
        memory.total_bytes,
    );
    gauge(
        "used",
        "Frame-buffer memory of {the} allocated, in bytes.",
        memory.used_bytes,
    );
    gauge(
        "free",
        "Frame-buffer memory of {the} available for allocation, in bytes.",
        memory.free_bytes,
    );
    if let Some(reserved) = memory.reserved_bytes {
        gauge(
            "reserved",
            "Frame-buffer memory of {the} that the driver reserves for itself, in bytes.",
            reserved,
        );
    }
}

impl Collector for MemoryCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            if let Some(memory) = self.readings.take(gpu, "memory", gpu.device.memory()) {
                write_memory(out, Scope::Gpu, &gpu.labels(), &memory);
            }
        }
        self.readings.finish(NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::{count, run, value, TestDevice};

    #[test]
    fn publishes_memory_in_bytes() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut MemoryCollector::default(), &[device.gpu()]);
        result.unwrap();
        let labels = [("gpu", "0"), ("uuid", "GPU-test-0")];
        let gib = (1u64 << 30) as f64;
        assert_eq!(
            value(&set, "poolprof_gpu_memory_total_bytes", &labels),
            Some(80.0 * gib)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_memory_used_bytes", &labels),
            Some(30.0 * gib)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_memory_free_bytes", &labels),
            Some(49.0 * gib)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_memory_reserved_bytes", &labels),
            Some(gib)
        );
    }

    #[test]
    fn reserved_is_absent_when_not_reported() {
        let device = TestDevice::healthy(0);
        device.set(|f| {
            if let Ok(m) = f.memory.as_mut() {
                m.reserved_bytes = None;
            }
        });
        let (set, _) = run(&mut MemoryCollector::default(), &[device.gpu()]);
        assert_eq!(count(&set, "poolprof_gpu_memory_reserved_bytes"), 0);
        assert_eq!(count(&set, "poolprof_gpu_memory_used_bytes"), 1);
    }
}
