//! GPU and memory-controller busy ratios, as the driver samples them.
//!
//! Metrics:
//! - `poolprof_gpu_utilization_ratio{gpu,uuid}`
//! - `poolprof_gpu_memory_controller_utilization_ratio{gpu,uuid}`

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "utilization";

/// Reads `Device::utilization`.
#[derive(Debug, Default)]
pub struct UtilizationCollector {
    readings: Readings,
}

impl Collector for UtilizationCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(u) = self
                .readings
                .take(gpu, "utilization", gpu.device.utilization())
            else {
                continue;
            };
            out.gauge(
                "poolprof_gpu_utilization_ratio",
                "Fraction of the last sample period during which one or more kernels ran on the GPU.",
                &gpu.labels(),
                u.gpu,
            );
            out.gauge(
                "poolprof_gpu_memory_controller_utilization_ratio",
                "Fraction of the last sample period during which device memory was read or written.",
                &gpu.labels(),
                u.memory,
            );
        }
        self.readings.finish(NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ReadError;
    use crate::collector::test_device::{count, run, value, TestDevice};

    #[test]
    fn publishes_both_ratios_per_gpu() {
        let gpus = [TestDevice::healthy(0).gpu(), TestDevice::healthy(1).gpu()];
        let (set, result) = run(&mut UtilizationCollector::default(), &gpus);
        result.unwrap();
        let gpu1 = [("gpu", "1"), ("uuid", "GPU-test-1")];
        assert_eq!(
            value(&set, "poolprof_gpu_utilization_ratio", &gpu1),
            Some(0.75)
        );
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_memory_controller_utilization_ratio",
                &gpu1
            ),
            Some(0.4)
        );
        assert_eq!(count(&set, "poolprof_gpu_utilization_ratio"), 2);
    }

    #[test]
    fn unsupported_is_absent_and_failure_fails_only_after_other_gpus() {
        let (a, b) = (TestDevice::healthy(0), TestDevice::healthy(1));
        a.set(|f| f.utilization = Err(ReadError::NotSupported));
        let mut collector = UtilizationCollector::default();
        let (set, result) = run(&mut collector, &[a.gpu(), b.gpu()]);
        result.unwrap();
        assert_eq!(count(&set, "poolprof_gpu_utilization_ratio"), 1);
        a.set(|f| f.utilization = Err(ReadError::Failed("timeout".into())));
        let (set, result) = run(&mut collector, &[a.gpu(), b.gpu()]);
        assert!(result.unwrap_err().message.contains("timeout"));
        assert_eq!(count(&set, "poolprof_gpu_utilization_ratio"), 1);
    }
}
