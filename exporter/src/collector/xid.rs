//! Xid errors: the driver's fault reports, counted per GPU and code.
//!
//! Metrics:
//! - `poolprof_gpu_xid_errors_total{gpu,uuid,xid}`
//!
//! The backend hands out each event once (drained), so the counts accumulate here
//! for the life of the process. A GPU that is down keeps its counts and shows them
//! again when it comes back.

use super::{CollectError, Collector, Gpu};
use crate::backend::Backend;
use crate::registry::MetricSet;
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "xid";

/// Accumulates the backend's drained Xid events.
#[derive(Default)]
pub struct XidCollector {
    backend: Option<Arc<dyn Backend>>,
    counts: BTreeMap<(String, u64), u64>,
}

impl XidCollector {
    /// Adds events to the counts (the collection drains them from the backend).
    fn record(&mut self, events: Vec<crate::backend::XidEvent>) {
        for event in events {
            self.counts
                .entry((event.uuid, event.xid))
                .and_modify(|n| *n += 1)
                .or_insert(1);
        }
    }
}

impl Collector for XidCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn attach(&mut self, backend: &Arc<dyn Backend>) {
        self.backend = Some(backend.clone());
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        if let Some(backend) = &self.backend {
            let events = backend.drain_xid_events();
            self.record(events);
        }
        for gpu in gpus {
            let xids = self
                .counts
                .range((gpu.uuid.clone(), 0)..=(gpu.uuid.clone(), u64::MAX));
            for ((_, xid), n) in xids {
                let xid = xid.to_string();
                out.counter(
                    "poolprof_gpu_xid_errors_total",
                    "Xid errors the driver reported for this GPU, by Xid code (e.g. 79: fallen off the bus).",
                    &gpu.labels_with(&[("xid", xid.as_str())]),
                    *n as f64,
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::XidEvent;
    use crate::collector::test_device::{count, run, value, TestBackend};

    fn event(uuid: &str, xid: u64) -> XidEvent {
        XidEvent {
            uuid: uuid.into(),
            xid,
        }
    }

    #[test]
    fn counts_accumulate_per_gpu_and_code_across_drains() {
        let backend = TestBackend::healthy(2);
        let gpus: Vec<_> = backend.devices.iter().map(|d| d.gpu()).collect();
        let mut collector = XidCollector::default();
        collector.attach(&(backend.clone() as Arc<dyn Backend>));
        backend.xids.lock().unwrap().extend([
            event("GPU-test-0", 79),
            event("GPU-test-0", 79),
            event("GPU-test-1", 13),
        ]);
        let (_, result) = run(&mut collector, &gpus);
        result.unwrap();
        backend.xids.lock().unwrap().push(event("GPU-test-0", 79));
        let (set, _) = run(&mut collector, &gpus);
        let name = "poolprof_gpu_xid_errors_total";
        assert_eq!(
            value(&set, name, &[("uuid", "GPU-test-0"), ("xid", "79")]),
            Some(3.0)
        );
        assert_eq!(
            value(&set, name, &[("uuid", "GPU-test-1"), ("xid", "13")]),
            Some(1.0)
        );
        assert_eq!(count(&set, name), 2);
    }

    #[test]
    fn down_gpu_keeps_its_count_for_when_it_returns() {
        let backend = TestBackend::healthy(2);
        let gpus: Vec<_> = backend.devices.iter().map(|d| d.gpu()).collect();
        let mut collector = XidCollector::default();
        collector.attach(&(backend.clone() as Arc<dyn Backend>));
        backend.xids.lock().unwrap().push(event("GPU-test-1", 79));
        let (set, _) = run(&mut collector, &gpus[..1]);
        assert_eq!(count(&set, "poolprof_gpu_xid_errors_total"), 0);
        let (set, _) = run(&mut collector, &gpus);
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_xid_errors_total",
                &[("uuid", "GPU-test-1")]
            ),
            Some(1.0)
        );
    }
}
