//! NVLink state and traffic per link (GPM's interval-averaged NVLink bandwidth is in
//! `gpm.rs`).
//!
//! Metrics:
//! - `poolprof_gpu_nvlink_active{gpu,uuid,link}`: 1 when the link is up
//! - `poolprof_gpu_nvlink_bytes_total{gpu,uuid,link,direction}` (`tx`/`rx`, where the
//!   device counts them)

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "nvlink";

/// Reads `Device::nvlinks`.
#[derive(Debug, Default)]
pub struct NvLinkCollector {
    readings: Readings,
}

impl Collector for NvLinkCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(links) = self.readings.take(gpu, "nvlinks", gpu.device.nvlinks()) else {
                continue;
            };
            for l in links {
                let link = l.link.to_string();
                out.gauge(
                    "poolprof_gpu_nvlink_active",
                    "1 when the NVLink link is up, else 0.",
                    &gpu.labels_with(&[("link", &link)]),
                    if l.active { 1.0 } else { 0.0 },
                );
                for (direction, bytes) in [("tx", l.tx_bytes), ("rx", l.rx_bytes)] {
                    let Some(bytes) = bytes else { continue };
                    out.counter(
                        "poolprof_gpu_nvlink_bytes_total",
                        "Bytes carried over the NVLink link, by direction (tx: leaving the GPU).",
                        &gpu.labels_with(&[("link", &link), ("direction", direction)]),
                        bytes as f64,
                    );
                }
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
    fn publishes_state_per_link_and_only_counted_traffic() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut NvLinkCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(
            value(&set, "poolprof_gpu_nvlink_active", &[("link", "0")]),
            Some(1.0)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_nvlink_active", &[("link", "1")]),
            Some(0.0)
        );
        let bytes = "poolprof_gpu_nvlink_bytes_total";
        assert_eq!(
            value(&set, bytes, &[("link", "0"), ("direction", "rx")]),
            Some(200.0)
        );
        assert_eq!(count(&set, bytes), 2, "link 1 has no counters");
    }
}
