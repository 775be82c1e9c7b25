//! Memory errors: ECC counters and row remapping (Ampere and newer).
//!
//! Metrics:
//! - `poolprof_gpu_ecc_errors_total{gpu,uuid,kind}` (`kind` is `corrected` or
//!   `uncorrected`, over the GPU's lifetime)
//! - `poolprof_gpu_remapped_rows_total{gpu,uuid,cause}` (`cause` is `correctable` or
//!   `uncorrectable`)
//! - `poolprof_gpu_row_remap_pending{gpu,uuid}`: 1 until a GPU reset applies a remap
//! - `poolprof_gpu_row_remap_failed{gpu,uuid}`: 1 when a remap failed (needs service)

use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "ecc";

/// Reads `Device::ecc_errors` and `Device::remapped_rows`.
#[derive(Debug, Default)]
pub struct EccCollector {
    readings: Readings,
}

fn flag(on: bool) -> f64 {
    if on {
        1.0
    } else {
        0.0
    }
}

impl Collector for EccCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            if let Some(ecc) = self
                .readings
                .take(gpu, "ecc_errors", gpu.device.ecc_errors())
            {
                for (kind, n) in [
                    ("corrected", ecc.corrected_total),
                    ("uncorrected", ecc.uncorrected_total),
                ] {
                    out.counter(
                        "poolprof_gpu_ecc_errors_total",
                        "ECC memory errors over the GPU's lifetime, by kind (corrected single-bit, uncorrected double-bit).",
                        &gpu.labels_with(&[("kind", kind)]),
                        n as f64,
                    );
                }
            }
            if let Some(rows) = self
                .readings
                .take(gpu, "remapped_rows", gpu.device.remapped_rows())
            {
                for (cause, n) in [
                    ("correctable", rows.correctable),
                    ("uncorrectable", rows.uncorrectable),
                ] {
                    out.counter(
                        "poolprof_gpu_remapped_rows_total",
                        "Memory rows remapped, by the kind of error that caused it.",
                        &gpu.labels_with(&[("cause", cause)]),
                        n as f64,
                    );
                }
                out.gauge(
                    "poolprof_gpu_row_remap_pending",
                    "1 when a row remap waits for the next GPU reset.",
                    &gpu.labels(),
                    flag(rows.pending),
                );
                out.gauge(
                    "poolprof_gpu_row_remap_failed",
                    "1 when a row remap failed: the GPU needs service.",
                    &gpu.labels(),
                    flag(rows.failed),
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
    fn publishes_ecc_counters_and_remap_state() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut EccCollector::default(), &[device.gpu()]);
        result.unwrap();
        let ecc = "poolprof_gpu_ecc_errors_total";
        assert_eq!(value(&set, ecc, &[("kind", "corrected")]), Some(7.0));
        assert_eq!(value(&set, ecc, &[("kind", "uncorrected")]), Some(1.0));
        let rows = "poolprof_gpu_remapped_rows_total";
        assert_eq!(value(&set, rows, &[("cause", "correctable")]), Some(2.0));
        assert_eq!(
            value(&set, "poolprof_gpu_row_remap_pending", &[]),
            Some(1.0)
        );
        assert_eq!(value(&set, "poolprof_gpu_row_remap_failed", &[]), Some(0.0));
    }

    #[test]
    fn ecc_off_leaves_remap_series() {
        let device = TestDevice::healthy(0);
        device.set(|f| f.ecc = Err(ReadError::NotSupported));
        let (set, result) = run(&mut EccCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(count(&set, "poolprof_gpu_ecc_errors_total"), 0);
        assert_eq!(count(&set, "poolprof_gpu_remapped_rows_total"), 2);
    }
}
