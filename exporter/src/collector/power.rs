//! Board power and energy.
//!
//! Metrics:
//! - `poolprof_gpu_power_usage_watts{gpu,uuid}`
//! - `poolprof_gpu_power_limit_watts{gpu,uuid}`
//! - `poolprof_gpu_energy_joules_total{gpu,uuid}`

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "power";

/// Reads power draw, the enforced limit and the energy counter.
#[derive(Debug, Default)]
pub struct PowerCollector {
    readings: Readings,
}

impl Collector for PowerCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let labels = gpu.labels();
            let d = &gpu.device;
            if let Some(w) = self
                .readings
                .take(gpu, "power_usage", d.power_usage_watts())
            {
                out.gauge(
                    "poolprof_gpu_power_usage_watts",
                    "Current board power draw in watts.",
                    &labels,
                    w,
                );
            }
            if let Some(w) = self
                .readings
                .take(gpu, "power_limit", d.power_limit_watts())
            {
                out.gauge(
                    "poolprof_gpu_power_limit_watts",
                    "Enforced board power limit in watts.",
                    &labels,
                    w,
                );
            }
            if let Some(j) = self.readings.take(gpu, "energy", d.energy_joules()) {
                out.counter(
                    "poolprof_gpu_energy_joules_total",
                    "Energy consumed by the GPU since the driver loaded, in joules.",
                    &labels,
                    j,
                );
            }
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
    fn publishes_power_limit_and_energy() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut PowerCollector::default(), &[device.gpu()]);
        result.unwrap();
        let labels = [("uuid", "GPU-test-0")];
        assert_eq!(
            value(&set, "poolprof_gpu_power_usage_watts", &labels),
            Some(350.5)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_power_limit_watts", &labels),
            Some(700.0)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_energy_joules_total", &labels),
            Some(1.5e6)
        );
    }

    #[test]
    fn unsupported_energy_is_absent_not_zero() {
        let device = TestDevice::healthy(0);
        device.set(|f| f.energy = Err(ReadError::NotSupported));
        let (set, result) = run(&mut PowerCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(count(&set, "poolprof_gpu_energy_joules_total"), 0);
        assert_eq!(count(&set, "poolprof_gpu_power_usage_watts"), 1);
    }
}
