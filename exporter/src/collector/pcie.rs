//! PCIe link, throughput and replays as NVML reports them.
//!
//! Metrics:
//! - `poolprof_gpu_pcie_bytes_per_second{gpu,uuid,direction}` (`tx`/`rx`, the driver's
//!   last 20 ms window) on a GPU without GPM; with GPM the backend answers
//!   `Replaced` and the gpm collector writes the same family, averaged over the
//!   whole interval, so each GPU has one PCIe traffic series per direction
//! - `poolprof_gpu_pcie_replays_total{gpu,uuid}`
//! - `poolprof_gpu_pcie_link_generation{gpu,uuid}`
//! - `poolprof_gpu_pcie_link_width{gpu,uuid}`

use super::gpm::PCIE_HELP;
use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "pcie";

/// Reads throughput, replays and the current link.
#[derive(Debug, Default)]
pub struct PcieCollector {
    readings: Readings,
}

impl Collector for PcieCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let d = &gpu.device;
            if let Some(t) = self
                .readings
                .take(gpu, "pcie_throughput", d.pcie_throughput())
            {
                for (direction, bps) in
                    [("tx", t.tx_bytes_per_second), ("rx", t.rx_bytes_per_second)]
                {
                    out.gauge(
                        "poolprof_gpu_pcie_bytes_per_second",
                        PCIE_HELP,
                        &gpu.labels_with(&[("direction", direction)]),
                        bps,
                    );
                }
            }
            if let Some(n) = self.readings.take(gpu, "pcie_replays", d.pcie_replays()) {
                out.counter(
                    "poolprof_gpu_pcie_replays_total",
                    "PCIe replays (retransmissions after link errors).",
                    &gpu.labels(),
                    n as f64,
                );
            }
            if let Some(link) = self.readings.take(gpu, "pcie_link", d.pcie_link()) {
                out.gauge(
                    "poolprof_gpu_pcie_link_generation",
                    "Current PCIe link generation.",
                    &gpu.labels(),
                    link.generation.into(),
                );
                out.gauge(
                    "poolprof_gpu_pcie_link_width",
                    "Current PCIe link width in lanes.",
                    &gpu.labels(),
                    link.width.into(),
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
    fn publishes_throughput_replays_and_link() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut PcieCollector::default(), &[device.gpu()]);
        result.unwrap();
        let name = "poolprof_gpu_pcie_bytes_per_second";
        assert_eq!(value(&set, name, &[("direction", "tx")]), Some(1e8));
        assert_eq!(value(&set, name, &[("direction", "rx")]), Some(2e8));
        assert_eq!(
            value(&set, "poolprof_gpu_pcie_replays_total", &[]),
            Some(3.0)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_pcie_link_generation", &[]),
            Some(5.0)
        );
        assert_eq!(value(&set, "poolprof_gpu_pcie_link_width", &[]), Some(16.0));
    }

    #[test]
    fn pending_throughput_is_absent_without_error() {
        let device = TestDevice::healthy(0);
        device.set(|f| f.pcie_throughput = Err(ReadError::Pending));
        let (set, result) = run(&mut PcieCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(count(&set, "poolprof_gpu_pcie_bytes_per_second"), 0);
        assert_eq!(count(&set, "poolprof_gpu_pcie_link_width"), 1);
    }
}
