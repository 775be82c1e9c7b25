//! Why the clocks are held below their maximum (NVML's clock event, formerly
//! "throttle", reasons).
//!
//! Metrics:
//! - `poolprof_gpu_clock_event_active{gpu,uuid,reason}`: 1 while the reason holds,
//!   0 otherwise; one series per reason NVML defines (`gpu_idle`, `sw_power_cap`,
//!   `hw_slowdown`, `sw_thermal_slowdown`, `hw_thermal_slowdown`, …)

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "clock_events";

/// Reads `Device::clock_event_reasons`.
#[derive(Debug, Default)]
pub struct ClockEventsCollector {
    readings: Readings,
}

impl Collector for ClockEventsCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(reasons) =
                self.readings
                    .take(gpu, "clock_event_reasons", gpu.device.clock_event_reasons())
            else {
                continue;
            };
            for (reason, active) in reasons.iter() {
                out.gauge(
                    "poolprof_gpu_clock_event_active",
                    "1 while this reason holds the clocks below their maximum (throttling), else 0.",
                    &gpu.labels_with(&[("reason", reason)]),
                    if active { 1.0 } else { 0.0 },
                );
            }
        }
        self.readings.finish(NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ClockEventReasons;
    use crate::collector::test_device::{count, run, value, TestDevice};

    #[test]
    fn one_series_per_reason_with_active_bits_set() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut ClockEventsCollector::default(), &[device.gpu()]);
        result.unwrap();
        let name = "poolprof_gpu_clock_event_active";
        assert_eq!(count(&set, name), ClockEventReasons::NAMES.len());
        assert_eq!(value(&set, name, &[("reason", "sw_power_cap")]), Some(1.0));
        assert_eq!(
            value(&set, name, &[("reason", "sw_thermal_slowdown")]),
            Some(1.0)
        );
        assert_eq!(value(&set, name, &[("reason", "gpu_idle")]), Some(0.0));
    }
}
