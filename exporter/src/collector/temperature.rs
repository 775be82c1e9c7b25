//! Temperatures by sensor.
//!
//! Metrics:
//! - `poolprof_gpu_temperature_celsius{gpu,uuid,sensor}` (`sensor` is `gpu` or `memory`)

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "temperature";

/// Reads `Device::temperatures`.
#[derive(Debug, Default)]
pub struct TemperatureCollector {
    readings: Readings,
}

impl Collector for TemperatureCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(sensors) = self
                .readings
                .take(gpu, "temperatures", gpu.device.temperatures())
            else {
                continue;
            };
            for t in sensors {
                out.gauge(
                    "poolprof_gpu_temperature_celsius",
                    "Temperature by sensor (gpu core or memory) in degrees Celsius.",
                    &gpu.labels_with(&[("sensor", t.sensor)]),
                    t.celsius,
                );
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
    fn publishes_each_sensor() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut TemperatureCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(count(&set, "poolprof_gpu_temperature_celsius"), 2);
        let memory = [("uuid", "GPU-test-0"), ("sensor", "memory")];
        assert_eq!(
            value(&set, "poolprof_gpu_temperature_celsius", &memory),
            Some(60.0)
        );
    }
}
