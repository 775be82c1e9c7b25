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
