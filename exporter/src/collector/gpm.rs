//! GPM (GPU Performance Monitoring, Hopper and newer): activity ratios averaged over
//! the interval between two samples, so they show how a workload uses the SMs, the
//! tensor cores and DRAM, not just whether a kernel ran.
//!
//! Metrics (each absent where the device does not offer it):
//! - `poolprof_gpu_sm_active_ratio{gpu,uuid}`
//! - `poolprof_gpu_sm_occupancy_ratio{gpu,uuid}`
//! - `poolprof_gpu_graphics_engine_active_ratio{gpu,uuid}`
//! - `poolprof_gpu_tensor_any_active_ratio{gpu,uuid}`: any tensor pipe busy
//! - `poolprof_gpu_tensor_active_ratio{gpu,uuid,kind}` (`hmma`, `imma`, `dfma`)
//! - `poolprof_gpu_dram_active_ratio{gpu,uuid}`
//! - `poolprof_gpu_pipe_active_ratio{gpu,uuid,pipe}` (`fp64`, `fp32`, `fp16`, `integer`)
//! - `poolprof_gpu_pcie_bytes_per_second{gpu,uuid,direction}` (`tx`/`rx`; the pcie
//!   collector writes it from NVML instead on a GPU without GPM)
//! - `poolprof_gpu_nvlink_bytes_per_second{gpu,uuid,direction}` (`tx`/`rx`, all links)
//!
//! The MIG collector writes the same set per instance under `poolprof_mig_`.

use super::scope::Scope;
use super::{CollectError, Collector, Gpu, Readings};
use crate::backend::GpmMetrics;
use crate::registry::MetricSet;

const NAME: &str = "gpm";

/// Reads `Device::gpm`.
#[derive(Debug, Default)]
pub struct GpmCollector {
    readings: Readings,
}

/// HELP of `poolprof_gpu_pcie_bytes_per_second`, which the pcie collector writes
/// instead for a GPU without GPM: the same for both, since they share the family.
pub(crate) const PCIE_HELP: &str = "PCIe traffic of the GPU by direction (tx: leaving the GPU), in bytes per second: averaged over the collection interval (GPM), or the driver's last 20 ms window on a GPU without GPM.";

/// Writes every GPM metric present in `gpm` for `scope` with `labels`.
pub(crate) fn write_gpm(
    out: &mut MetricSet,
    scope: Scope,
    labels: &[(&str, &str)],
    gpm: &GpmMetrics,
) {
    let mut put = |name: &str, help: &str, extra: Option<(&str, &str)>, value: Option<f64>| {
        let Some(value) = value else { return };
        let mut all = labels.to_vec();
        all.extend(extra);
        out.gauge(&scope.metric(name), &scope.help(help), &all, value);
    };
    put(
        "sm_active_ratio",
        "Fraction of time at least one warp was active on an SM, averaged over the SMs of {the} (GPM).",
        None,
        gpm.sm_active,
    );
    put(
        "sm_occupancy_ratio",
        "Resident warps over the maximum an SM can hold, averaged over the SMs of {the} (GPM).",
        None,
        gpm.sm_occupancy,
    );
    put(
        "graphics_engine_active_ratio",
        "Fraction of time the graphics/compute engine of {the} was busy (GPM; with NVML, over the last 30 s).",
        None,
        gpm.graphics_engine_active,
    );
    put(
        "tensor_any_active_ratio",
        "Fraction of time any tensor pipe of {the} was busy (GPM); the share of each kind is in tensor_active_ratio{kind}.",
        None,
        gpm.tensor_any,
    );
    let tensor = "Fraction of time the tensor pipes of {the} were busy with one kind of operation (hmma: half precision, imma: integer, dfma: double) (GPM).";
    for (kind, v) in [
        ("hmma", gpm.tensor_hmma),
        ("imma", gpm.tensor_imma),
        ("dfma", gpm.tensor_dfma),
    ] {
        put("tensor_active_ratio", tensor, Some(("kind", kind)), v);
    }
    put(
        "dram_active_ratio",
        "DRAM bandwidth {the} used over its peak (GPM).",
        None,
        gpm.dram_active,
    );
    let pipe = "Fraction of time each arithmetic pipe of {the} was busy (GPM).";
    for (name, v) in [
        ("fp64", gpm.pipe_fp64),
        ("fp32", gpm.pipe_fp32),
        ("fp16", gpm.pipe_fp16),
        ("integer", gpm.pipe_integer),
    ] {
        put("pipe_active_ratio", pipe, Some(("pipe", name)), v);
    }
    // The GPU family is shared with the pcie collector (GPUs without GPM): one HELP.
    let pcie = match scope {
        Scope::Gpu => PCIE_HELP,
        _ => "PCIe traffic of {the} averaged over the collection interval, by direction (GPM).",
    };
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
        "NVLink traffic of {the} over all links averaged over the collection interval, by direction (GPM).";
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
                write_gpm(out, Scope::Gpu, &gpu.labels(), &gpm);
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
            value(&set, "poolprof_gpu_tensor_any_active_ratio", &[]),
            Some(0.3)
        );
        assert_eq!(count(&set, "poolprof_gpu_tensor_any_active_ratio"), 1);
        assert_eq!(count(&set, "poolprof_gpu_tensor_active_ratio"), 3);
        let kinds = set.get("poolprof_gpu_tensor_active_ratio").unwrap();
        assert!(
            kinds.get_metric().iter().all(|m| m
                .get_label()
                .iter()
                .all(|l| l.name() != "kind" || l.value() != "any")),
            "the total is not one of the kinds, so sum by kind does not count it twice"
        );
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
        assert_eq!(count(&set, "poolprof_gpu_tensor_active_ratio"), 2);
        device.set(|f| f.gpm = Err(ReadError::Pending));
        let (set, result) = run(&mut collector, &[device.gpu()]);
        result.unwrap();
        assert_eq!(set.sample_count(), 0);
    }
}
