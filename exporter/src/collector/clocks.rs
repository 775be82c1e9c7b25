//! Current clocks.
//!
//! Metrics:
//! - `poolprof_gpu_clock_hz{gpu,uuid,clock}` (`clock` is `graphics`, `sm`, `memory` or `video`)

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "clocks";

/// Reads `Device::clocks`.
#[derive(Debug, Default)]
pub struct ClocksCollector {
    readings: Readings,
}

impl Collector for ClocksCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(clocks) = self.readings.take(gpu, "clocks", gpu.device.clocks()) else {
                continue;
            };
            for c in clocks {
                out.gauge(
                    "poolprof_gpu_clock_hz",
                    "Current clock frequency by domain in hertz.",
                    &gpu.labels_with(&[("clock", c.clock)]),
                    c.hz,
                );
            }
        }
        self.readings.finish(NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::{run, value, TestDevice};

    #[test]
    fn publishes_clocks_in_hertz() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut ClocksCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(
            value(&set, "poolprof_gpu_clock_hz", &[("clock", "sm")]),
            Some(1.98e9)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_clock_hz", &[("clock", "memory")]),
            Some(2.619e9)
        );
    }
}
