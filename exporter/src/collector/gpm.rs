//! GPM (GPU Performance Monitoring, Hopper and newer): activity ratios averaged over
//! the interval between two samples, so they show how a workload uses the SMs, the
//! tensor cores and DRAM, not just whether a kernel ran.
//!
//! Metrics (each absent where the device does not offer it):
//! - `poolprof_gpu_sm_active_ratio{gpu,uuid}`
//! - `poolprof_gpu_sm_occupancy_ratio{gpu,uuid}`
//! - `poolprof_gpu_graphics_engine_active_ratio{gpu,uuid}`
//! - `poolprof_gpu_tensor_active_ratio{gpu,uuid,kind}` (`any`, `hmma`, `imma`, `dfma`;
//!   `any` covers the others, so do not sum across `kind`)
//! - `poolprof_gpu_dram_active_ratio{gpu,uuid}`
//! - `poolprof_gpu_pipe_active_ratio{gpu,uuid,pipe}` (`fp64`, `fp32`, `fp16`, `integer`)
//! - `poolprof_gpu_pcie_bytes_per_second{gpu,uuid,direction}` (`tx`/`rx`)
//! - `poolprof_gpu_nvlink_bytes_per_second{gpu,uuid,direction}` (`tx`/`rx`, all links)
//!
//! The MIG collector writes the same set per instance under `poolprof_mig_`.

use super::{CollectError, Collector, Gpu, Readings};
use crate::backend::GpmMetrics;
use crate::registry::MetricSet;

const NAME: &str = "gpm";

/// Reads `Device::gpm`.
#[derive(Debug, Default)]
pub struct GpmCollector {
    readings: Readings,
}

/// Writes every GPM metric present in `gpm` under `prefix` (`poolprof_gpu` or
/// `poolprof_mig`) with `labels`.
pub(crate) fn write_gpm(
    out: &mut MetricSet,
    prefix: &str,
    labels: &[(&str, &str)],
    gpm: &GpmMetrics,
) {
    let mut put = |name: &str, help: &str, extra: Option<(&str, &str)>, value: Option<f64>| {
        let Some(value) = value else { return };
        let mut all = labels.to_vec();
        all.extend(extra);
        out.gauge(&format!("{prefix}_{name}"), help, &all, value);
    };
    put(
        "sm_active_ratio",
        "Fraction of time at least one warp was active on an SM, averaged over SMs (GPM).",
        None,
        gpm.sm_active,
    );
    put(
        "sm_occupancy_ratio",
        "Resident warps over the maximum an SM can hold, averaged over SMs (GPM).",
        None,
        gpm.sm_occupancy,
    );
    put(
        "graphics_engine_active_ratio",
        "Fraction of time the graphics/compute engine was busy (GPM; with NVML, over the last 10 s).",
        None,
        gpm.graphics_engine_active,
    );
    let tensor =
        "Fraction of time the tensor pipes were busy, by kind; any covers the others (GPM).";
    for (kind, v) in [
        ("any", gpm.tensor_any),
        ("hmma", gpm.tensor_hmma),
        ("imma", gpm.tensor_imma),
        ("dfma", gpm.tensor_dfma),
    ] {
        put("tensor_active_ratio", tensor, Some(("kind", kind)), v);
    }
    put(
        "dram_active_ratio",
        "DRAM bandwidth used over peak (GPM).",
        None,
        gpm.dram_active,
    );
    let pipe = "Fraction of time each arithmetic pipe was busy (GPM).";
    for (name, v) in [
        ("fp64", gpm.pipe_fp64),
        ("fp32", gpm.pipe_fp32),
        ("fp16", gpm.pipe_fp16),
        ("integer", gpm.pipe_integer),
    ] {
        put("pipe_active_ratio", pipe, Some(("pipe", name)), v);
    }
    let pcie = "PCIe traffic averaged over the collection interval, by direction (GPM).";
    put(
        "pcie_bytes_per_second",
        pcie,
        Some(("direction", "tx")),
        gpm.pcie_tx_bytes_per_second,
    );
    put(
        "pcie_bytes_per_second",
        pcie,
        Some(("direction", "rx")),
        gpm.pcie_rx_bytes_per_second,
    );
    let nvlink =
        "NVLink traffic over all links averaged over the collection interval, by direction (GPM).";
    put(
        "nvlink_bytes_per_second",
        nvlink,
        Some(("direction", "tx")),
        gpm.nvlink_tx_bytes_per_second,
    );
    put(
        "nvlink_bytes_per_second",
        nvlink,
        Some(("direction", "rx")),
        gpm.nvlink_rx_bytes_per_second,
    );
}

impl Collector for GpmCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            if let Some(gpm) = self.readings.take(gpu, "gpm", gpu.device.gpm()) {
                write_gpm(out, "poolprof_gpu", &gpu.labels(), &gpm);
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
    fn publishes_every_gpm_metric_with_its_labels() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut GpmCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_sm_active_ratio",
                &[("uuid", "GPU-test-0")]
            ),
            Some(0.9)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_sm_occupancy_ratio", &[]),
            Some(0.45)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_graphics_engine_active_ratio", &[]),
            Some(0.9)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_tensor_active_ratio", &[("kind", "any")]),
            Some(0.3)
        );
        assert_eq!(count(&set, "poolprof_gpu_tensor_active_ratio"), 4);
        assert_eq!(
            value(&set, "poolprof_gpu_dram_active_ratio", &[]),
            Some(0.18)
        );
        assert_eq!(
            value(&set, "poolprof_gpu_pipe_active_ratio", &[("pipe", "fp32")]),
            Some(0.2)
        );
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_pcie_bytes_per_second",
                &[("direction", "rx")]
            ),
            Some(2e9)
        );
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_nvlink_bytes_per_second",
                &[("direction", "tx")]
            ),
            Some(3e9)
        );
    }

    #[test]
    fn missing_fields_and_first_pending_sample_are_absent() {
        let device = TestDevice::healthy(0);
        device.set(|f| f.gpm.as_mut().unwrap().tensor_imma = None);
        let mut collector = GpmCollector::default();
        let (set, _) = run(&mut collector, &[device.gpu()]);
        assert_eq!(count(&set, "poolprof_gpu_tensor_active_ratio"), 3);
        device.set(|f| f.gpm = Err(ReadError::Pending));
        let (set, result) = run(&mut collector, &[device.gpu()]);
        result.unwrap();
        assert_eq!(set.sample_count(), 0);
    }
}
