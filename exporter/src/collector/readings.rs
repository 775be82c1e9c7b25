//! Turns a device [`Reading`] into "a value or nothing" with the logging rules of
//! DESIGN.md: an unsupported field is absent and logged once per (GPU, field); a
//! failed read is logged and fails the collector after the rest was collected.

use super::{CollectError, Gpu};
use crate::backend::{ReadError, Reading};
use std::collections::HashSet;

/// Per-collector memory of which fields were already reported unsupported, and the
/// failures of the current interval.
#[derive(Debug, Default)]
pub struct Readings {
    unsupported: HashSet<(String, &'static str)>,
    failures: Vec<String>,
}

impl Readings {
    /// The value of `reading`, or `None` when there is nothing to publish.
    pub fn take<T>(&mut self, gpu: &Gpu, field: &'static str, reading: Reading<T>) -> Option<T> {
        match reading {
            Ok(value) => Some(value),
            Err(ReadError::NotSupported) => {
                if self.unsupported.insert((gpu.uuid.clone(), field)) {
                    tracing::info!(gpu = %gpu.index, uuid = %gpu.uuid, field, "field not supported by this GPU; its series stays absent");
                }
                None
            }
            Err(ReadError::Replaced(by)) => {
                if self.unsupported.insert((gpu.uuid.clone(), field)) {
                    tracing::debug!(gpu = %gpu.index, uuid = %gpu.uuid, field, replaced_by = by, "field not read: another series measures the same quantity");
                }
                None
            }
            Err(ReadError::Pending) => None,
            // The runner marks the GPU down on its next interval; nothing to add here.
            Err(ReadError::GpuLost(reason)) => {
                tracing::debug!(gpu = %gpu.index, uuid = %gpu.uuid, field, %reason, "GPU lost during collection");
                None
            }
            Err(ReadError::Failed(reason)) => {
                tracing::warn!(gpu = %gpu.index, uuid = %gpu.uuid, field, %reason, "read failed");
                self.failures.push(format!(
                    "GPU {} ({}) {field}: {reason}",
                    gpu.index, gpu.uuid
                ));
                None
            }
        }
    }

    /// Ends an interval: `Err` naming every failed read, if any, and resets for the next.
    pub fn finish(&mut self, collector: &'static str) -> Result<(), CollectError> {
        if self.failures.is_empty() {
            return Ok(());
        }
        let message = std::mem::take(&mut self.failures).join("; ");
        Err(CollectError { collector, message })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::TestDevice;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn unsupported_is_logged_once_per_gpu_and_field() {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        let (a, b) = (TestDevice::healthy(0).gpu(), TestDevice::healthy(1).gpu());
        let mut readings = Readings::default();
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..3 {
                assert_eq!(
                    readings.take::<u8>(&a, "energy", Err(ReadError::NotSupported)),
                    None
                );
            }
            readings.take::<u8>(&b, "energy", Err(ReadError::NotSupported));
            readings.take::<u8>(&a, "ecc", Err(ReadError::NotSupported));
            assert_eq!(readings.take(&a, "ecc", Ok(5u8)), Some(5));
        });
        let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches("not supported").count(), 3, "{text}");
        assert!(
            readings.finish("test").is_ok(),
            "unsupported is not a failure"
        );
    }

    #[test]
    fn a_replaced_field_is_absent_logged_once_as_replaced_and_not_a_failure() {
        let logs = Captured::default();
        let writer = logs.clone();
        // At debug: a field measured elsewhere is by design, nothing to tell an operator.
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || writer.clone())
            .finish();
        let gpu = TestDevice::healthy(0).gpu();
        let mut readings = Readings::default();
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..3 {
                let reading = Err(ReadError::Replaced("poolprof_gpu_pcie_bytes_per_second"));
                assert_eq!(readings.take::<u8>(&gpu, "pcie_throughput", reading), None);
            }
        });
        let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches("another series measures").count(), 1, "{text}");
        assert!(
            text.contains("poolprof_gpu_pcie_bytes_per_second"),
            "{text}"
        );
        assert!(!text.contains("not supported"), "{text}");
        assert!(readings.finish("pcie").is_ok());
    }

    #[test]
    fn failures_are_reported_once_then_cleared() {
        let gpu = TestDevice::healthy(2).gpu();
        let mut readings = Readings::default();
        readings.take::<u8>(
            &gpu,
            "power",
            Err(ReadError::Failed("Unknown Error".into())),
        );
        readings.take::<u8>(&gpu, "clocks", Err(ReadError::GpuLost("gone".into())));
        let err = readings.finish("power").unwrap_err();
        assert_eq!(err.collector, "power");
        assert!(
            err.message
                .contains("GPU 2 (GPU-test-2) power: Unknown Error"),
            "{}",
            err.message
        );
        assert!(
            !err.message.contains("clocks"),
            "a lost GPU is the runner's business"
        );
        assert!(readings.finish("power").is_ok());
    }
}
