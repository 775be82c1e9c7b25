//! Xid errors: the driver's fault reports, counted per GPU and code.
//!
//! Metrics:
//! - `poolprof_gpu_xid_errors_total{gpu,uuid,xid}`
//!
//! The backend hands out each event once (drained), so the counts accumulate here
//! for the life of the process. A GPU keeps its counts while it is down (an Xid 79 is
//! what takes it down, and that is when it must be seen), and the codes of
//! [`KNOWN_XIDS`] start at 0 for every GPU so that `increase()` sees the first event.

use super::{CollectError, Collector, Gpu};
use crate::backend::Backend;
use crate::registry::MetricSet;
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "xid";

/// Xid codes published at 0 before they happen: the ones operators alert on (NVIDIA's
/// Xid catalogue: 13 graphics engine exception, 31 MMU fault, 43 reset channel, 48
/// double-bit ECC, 63/64 row remapping, 74 NVLink, 79 fallen off the bus, 92 high
/// single-bit ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP errors). Other
/// codes appear at their first event.
pub const KNOWN_XIDS: [u64; 14] = [13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 154];

/// Accumulates the backend's drained Xid events.
#[derive(Default)]
pub struct XidCollector {
    backend: Option<Arc<dyn Backend>>,
    counts: BTreeMap<(String, u64), u64>,
    /// The `gpu` label of every GPU seen answering, by uuid: its counts stay published
    /// while it is down.
    seen: BTreeMap<String, String>,
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
            if !self.seen.contains_key(&gpu.uuid) {
                self.seen.insert(gpu.uuid.clone(), gpu.index.clone());
                for xid in KNOWN_XIDS {
                    self.counts.entry((gpu.uuid.clone(), xid)).or_insert(0);
                }
            }
        }
        for (uuid, index) in &self.seen {
            let xids = self
                .counts
                .range((uuid.clone(), 0)..=(uuid.clone(), u64::MAX));
            for ((_, xid), n) in xids {
                let xid = xid.to_string();
                out.counter(
                    "poolprof_gpu_xid_errors_total",
                    "Xid errors the driver reported for this GPU, by Xid code (e.g. 79: fallen off the bus); kept while the GPU is down.",
                    &[("gpu", index), ("uuid", uuid), ("xid", xid.as_str())],
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
        // the known codes are there at 0 for both GPUs, so increase() sees a first event
        assert_eq!(count(&set, name), 2 * KNOWN_XIDS.len());
        assert_eq!(
            value(&set, name, &[("uuid", "GPU-test-1"), ("xid", "48")]),
            Some(0.0)
        );
    }

    #[test]
    fn a_code_outside_the_known_ones_appears_at_its_first_event() {
        let backend = TestBackend::healthy(1);
        let gpus: Vec<_> = backend.devices.iter().map(|d| d.gpu()).collect();
        let mut collector = XidCollector::default();
        collector.attach(&(backend.clone() as Arc<dyn Backend>));
        let (set, _) = run(&mut collector, &gpus);
        assert_eq!(
            value(&set, "poolprof_gpu_xid_errors_total", &[("xid", "999")]),
            None
        );
        backend.xids.lock().unwrap().push(event("GPU-test-0", 999));
        let (set, _) = run(&mut collector, &gpus);
        assert_eq!(
            value(&set, "poolprof_gpu_xid_errors_total", &[("xid", "999")]),
            Some(1.0)
        );
    }

    #[test]
    fn a_gpu_that_goes_down_keeps_its_counts_while_down() {
        let backend = TestBackend::healthy(2);
        let gpus: Vec<_> = backend.devices.iter().map(|d| d.gpu()).collect();
        let mut collector = XidCollector::default();
        collector.attach(&(backend.clone() as Arc<dyn Backend>));
        let name = "poolprof_gpu_xid_errors_total";
        let fell = [("uuid", "GPU-test-1"), ("xid", "79")];
        let (set, _) = run(&mut collector, &gpus);
        assert_eq!(value(&set, name, &fell), Some(0.0));
        // GPU 1 falls off the bus: only GPU 0 answers, GPU 1's Xid 79 is still seen
        backend.xids.lock().unwrap().push(event("GPU-test-1", 79));
        let (set, _) = run(&mut collector, &gpus[..1]);
        assert_eq!(value(&set, name, &fell), Some(1.0));
        assert_eq!(
            value(
                &set,
                name,
                &[("uuid", "GPU-test-1"), ("gpu", "1"), ("xid", "79")]
            ),
            Some(1.0)
        );
    }
}
