//! The collection loop: every interval, decide which GPUs answer, run every collector
//! on them, add the exporter's own health series, encode once, publish.
//!
//! Metrics written here (the rest come from one collector file each):
//! - `poolprof_gpu_up{gpu,uuid}`: 1 when the GPU answered this interval; a GPU at 0
//!   has no other series until it answers again
//! - `poolprof_gpu_info{gpu,uuid,name,pci_bus_id,driver_version,cuda_version}`
//! - `poolprof_exporter_build_info{version,backend}`
//! - `poolprof_exporter_collector_success{collector}`
//! - `poolprof_exporter_collector_duration_seconds{collector}`
//! - `process_*` (in served snapshots only, see `self_process.rs`)

use super::cpu_time::thread_cpu_seconds;
use super::{Collector, Gpu};
use crate::backend::{Backend, Device, Identity, ReadError, SystemInfo};
use crate::registry::{MetricSet, Snapshot, SnapshotStore};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One device with the identity read when the collection started.
struct Slot {
    position: usize,
    device: Arc<dyn Device>,
    identity: Option<Identity>,
}

impl Slot {
    /// Reads the identity until it has one; a GPU failing from the start gets one
    /// as soon as it answers.
    fn identity(&mut self) -> Option<&Identity> {
        if self.identity.is_none() {
            match self.device.identity() {
                Ok(identity) => self.identity = Some(identity),
                Err(e) => {
                    tracing::warn!(position = self.position, error = %e, "cannot read GPU identity")
                }
            }
        }
        self.identity.as_ref()
    }
}

/// The backend, its devices and the collectors, run together every interval.
pub struct Collection {
    backend: Arc<dyn Backend>,
    slots: Vec<Slot>,
    system: Option<SystemInfo>,
    collectors: Vec<Tracked>,
    was_up: Vec<Option<bool>>,
}

/// A collector and whether it failed last time: a failure is logged as a warning when
/// it starts, not every interval it lasts.
struct Tracked {
    collector: Box<dyn Collector>,
    failing: bool,
    /// CPU seconds the collector has used, all collections together.
    cpu_seconds: f64,
}

/// Outcome of one collection: the samples and whether it counts as a success.
struct Outcome {
    metrics: MetricSet,
    success: bool,
}

impl Collection {
    /// Reads each device's identity and the driver versions once, and hands the
    /// backend to collectors that need it (Xid events).
    pub fn new(backend: Arc<dyn Backend>, collectors: Vec<Box<dyn Collector>>) -> Self {
        let slots: Vec<Slot> = backend
            .devices()
            .into_iter()
            .enumerate()
            .map(|(position, device)| Slot {
                position,
                identity: device.identity().ok(),
                device,
            })
            .collect();
        let mut collection = Self {
            system: backend.system().ok(),
            was_up: vec![None; slots.len()],
            slots,
            backend,
            collectors: Vec::new(),
        };
        for collector in collectors {
            collection.add_collector(collector);
        }
        collection
    }

    /// Appends a collector (main adds the kernel collector this way).
    pub fn add_collector(&mut self, mut collector: Box<dyn Collector>) {
        collector.attach(&self.backend);
        self.collectors.push(Tracked {
            collector,
            failing: false,
            cpu_seconds: 0.0,
        });
    }

    /// Runs one collection and returns every sample, health series included.
    pub fn collect_once(&mut self) -> MetricSet {
        self.run().metrics
    }

    /// Runs one collection and adds this process's `process_*` series; the snapshot
    /// encodes itself in the format a scrape asks for.
    pub fn snapshot(&mut self) -> Snapshot {
        let mut outcome = self.run();
        super::self_process::write(&mut outcome.metrics);
        Snapshot::from_metrics(outcome.metrics, outcome.success)
    }

    /// Collects now and then every `interval` on a thread of its own, publishing
    /// each snapshot to `store`, until [`CollectionHandle::stop`].
    pub fn spawn(mut self, interval: Duration, store: Arc<SnapshotStore>) -> CollectionHandle {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("poolprof-collect".into())
            .spawn(move || {
                while !stopping.load(Ordering::Acquire) {
                    let next = Instant::now() + interval;
                    store.publish(self.snapshot());
                    while !stopping.load(Ordering::Acquire) {
                        let Some(left) = next.checked_duration_since(Instant::now()) else {
                            break;
                        };
                        std::thread::park_timeout(left);
                    }
                }
            })
            .expect("the OS can start one thread");
        CollectionHandle { stop, thread }
    }

    fn run(&mut self) -> Outcome {
        let mut out = MetricSet::new();
        if self.system.is_none() {
            self.system = self.backend.system().ok();
        }
        let gpus = self.up_gpus(&mut out);
        let mut succeeded = 0;
        for tracked in &mut self.collectors {
            succeeded += usize::from(run_collector(tracked, &gpus, &mut out));
        }
        out.info(
            "poolprof_exporter_build_info",
            "The exporter's version and the backend it reads (nvml or sim).",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("backend", self.backend.kind()),
            ],
        );
        // A collector failing on one field must not make the exporter unready; a
        // collection where every collector failed does.
        let success = self.collectors.is_empty() || succeeded > 0;
        Outcome {
            metrics: out,
            success,
        }
    }

    /// Writes `poolprof_gpu_up` and `poolprof_gpu_info`, and returns the GPUs that
    /// answered a basic read this interval.
    fn up_gpus(&mut self, out: &mut MetricSet) -> Vec<Gpu> {
        let (driver, cuda) = match &self.system {
            Some(s) => (s.driver_version.clone(), s.cuda_version.clone()),
            None => ("unknown".to_string(), "unknown".to_string()),
        };
        let mut gpus = Vec::with_capacity(self.slots.len());
        for (slot, was_up) in self.slots.iter_mut().zip(&mut self.was_up) {
            let position = slot.position;
            let identity = slot.identity().cloned();
            let up = identity.is_some() && answers(slot.device.as_ref());
            if *was_up != Some(up) {
                log_transition(position, identity.as_ref(), up, was_up.is_none());
                *was_up = Some(up);
            }
            let (index, uuid) = match &identity {
                Some(id) => (id.index.to_string(), id.uuid.clone()),
                None => (position.to_string(), "unknown".to_string()),
            };
            let labels = [("gpu", index.as_str()), ("uuid", uuid.as_str())];
            out.gauge(
                "poolprof_gpu_up",
                "1 when the GPU answered this collection; at 0 its readings are absent, its identity and Xid counts stay.",
                &labels,
                if up { 1.0 } else { 0.0 },
            );
            // The identity stays while the GPU is down: that is when an operator needs
            // to know which GPU it is.
            let Some(id) = identity else {
                continue;
            };
            out.info(
                "poolprof_gpu_info",
                "GPU identity and driver stack; join on uuid.",
                &[
                    ("gpu", &index),
                    ("uuid", &uuid),
                    ("name", &id.name),
                    ("pci_bus_id", &id.pci_bus_id),
                    ("driver_version", &driver),
                    ("cuda_version", &cuda),
                ],
            );
            if !up {
                continue;
            }
            gpus.push(Gpu {
                index,
                uuid,
                device: slot.device.clone(),
            });
        }
        gpus
    }
}

/// A GPU is up when a basic read succeeds or says only that it has no value to give.
fn answers(device: &dyn Device) -> bool {
    matches!(
        device.memory(),
        Ok(_) | Err(ReadError::NotSupported | ReadError::Replaced(_) | ReadError::Pending)
    )
}

fn log_transition(position: usize, identity: Option<&Identity>, up: bool, first: bool) {
    let uuid = identity.map_or("unknown", |id| id.uuid.as_str());
    match (up, first) {
        (true, true) => tracing::debug!(position, uuid, "GPU up"),
        (true, false) => tracing::info!(position, uuid, "GPU answers again; its series are back"),
        (false, _) => tracing::warn!(
            position,
            uuid,
            "GPU does not answer; poolprof_gpu_up is 0 and its readings are withheld"
        ),
    }
}

/// Runs one collector, contained: an error or a panic costs only its own series.
fn run_collector(tracked: &mut Tracked, gpus: &[Gpu], out: &mut MetricSet) -> bool {
    let collector = tracked.collector.as_mut();
    let name = collector.name();
    let started = Instant::now();
    let cpu_started = thread_cpu_seconds();
    let mut part = MetricSet::new();
    let result = catch_unwind(AssertUnwindSafe(|| collector.collect(gpus, &mut part)));
    let elapsed = started.elapsed().as_secs_f64();
    if let (Some(before), Some(after)) = (cpu_started, thread_cpu_seconds()) {
        tracked.cpu_seconds += (after - before).max(0.0);
    }
    let success = match result {
        Ok(outcome) => {
            match (&outcome, tracked.failing) {
                (Ok(()), true) => tracing::info!(collector = name, "collector succeeds again"),
                (Ok(()), false) => {}
                (Err(e), true) => {
                    tracing::debug!(collector = name, error = %e, "collector still failing")
                }
                (Err(e), false) => {
                    tracing::warn!(collector = name, error = %e, "collector failed; its other series are still served")
                }
            }
            out.merge(part);
            outcome.is_ok()
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            tracing::error!(collector = name, panic = %message, "collector panicked; its series are dropped this interval");
            false
        }
    };
    tracked.failing = !success;
    let labels = [("collector", name)];
    out.gauge(
        "poolprof_exporter_collector_success",
        "1 when the collector succeeded in the last collection, else 0.",
        &labels,
        if success { 1.0 } else { 0.0 },
    );
    out.gauge(
        "poolprof_exporter_collector_duration_seconds",
        "How long the collector took in the last collection, in seconds.",
        &labels,
        elapsed,
    );
    out.counter(
        "poolprof_exporter_collector_cpu_seconds_total",
        "CPU time the collection thread has spent in the collector, in seconds.",
        &labels,
        tracked.cpu_seconds,
    );
    success
}

/// The running collection thread.
#[derive(Debug)]
pub struct CollectionHandle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl CollectionHandle {
    /// Stops after the collection in progress, if any, and waits for the thread.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        if self.thread.join().is_err() {
            tracing::error!("collection thread panicked");
        }
    }

    /// Whether the thread has ended.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ReadError;
    use crate::collector::test_device::{count, value, TestBackend};
    use crate::collector::{default_collectors, CollectError};

    struct Failing;
    impl Collector for Failing {
        fn name(&self) -> &'static str {
            "failing"
        }
        fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
            out.gauge("poolprof_test_partial", "Partial.", &gpus[0].labels(), 1.0);
            Err(CollectError {
                collector: "failing",
                message: "broken".into(),
            })
        }
    }

    struct Panicking;
    impl Collector for Panicking {
        fn name(&self) -> &'static str {
            "panicking"
        }
        fn collect(&mut self, _: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
            out.gauge("poolprof_test_panicked", "Never served.", &[], 1.0);
            panic!("collector bug");
        }
    }

    /// Spins for `ms` milliseconds of this thread's CPU in every collection.
    struct Busy(u64);
    impl Collector for Busy {
        fn name(&self) -> &'static str {
            "busy"
        }
        fn collect(&mut self, _: &[Gpu], _: &mut MetricSet) -> Result<(), CollectError> {
            let start = thread_cpu_seconds().unwrap();
            let mut x = 0u64;
            while thread_cpu_seconds().unwrap() - start < self.0 as f64 / 1000.0 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            Ok(())
        }
    }

    #[test]
    fn each_collector_cpu_time_adds_up_over_collections() {
        let backend = TestBackend::healthy(1);
        let mut collection = collection(&backend);
        collection.add_collector(Box::new(Busy(20)));
        let busy = [("collector", "busy")];
        let cpu = |set: &MetricSet| {
            value(set, "poolprof_exporter_collector_cpu_seconds_total", &busy).unwrap()
        };
        let first = cpu(&collection.collect_once());
        let second = cpu(&collection.collect_once());
        assert!((0.020..0.5).contains(&first), "{first}");
        assert!(second >= first + 0.020, "a counter: {first} then {second}");
        let set = collection.collect_once();
        let memory = [("collector", "memory")];
        let idle = value(
            &set,
            "poolprof_exporter_collector_cpu_seconds_total",
            &memory,
        );
        assert!(idle.is_some_and(|s| s < 0.020), "{idle:?}");
    }

    fn collection(backend: &Arc<TestBackend>) -> Collection {
        Collection::new(backend.clone(), default_collectors())
    }

    /// Every sample in `set` carrying `uuid`, by family name, except `poolprof_gpu_up`.
    fn series_of(set: &MetricSet, uuid: &str) -> Vec<String> {
        set.families()
            .filter(|(_, f)| f.name() != "poolprof_gpu_up")
            .filter(|(_, f)| {
                f.get_metric().iter().any(|m| {
                    m.get_label()
                        .iter()
                        .any(|l| l.name() == "uuid" && l.value() == uuid)
                })
            })
            .map(|(_, f)| f.name().to_string())
            .collect()
    }

    #[test]
    fn healthy_gpus_are_up_with_identity_and_health_series() {
        let backend = TestBackend::healthy(2);
        let set = collection(&backend).collect_once();
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_up",
                &[("gpu", "1"), ("uuid", "GPU-test-1")]
            ),
            Some(1.0)
        );
        let info = [
            ("uuid", "GPU-test-0"),
            ("name", "NVIDIA H100 80GB HBM3"),
            ("pci_bus_id", "00000000:18:00.0"),
            ("driver_version", "580.159.04"),
            ("cuda_version", "13.0"),
        ];
        assert_eq!(value(&set, "poolprof_gpu_info", &info), Some(1.0));
        let build = [("version", env!("CARGO_PKG_VERSION")), ("backend", "test")];
        assert_eq!(
            value(&set, "poolprof_exporter_build_info", &build),
            Some(1.0)
        );
        let collectors = default_collectors().len();
        assert_eq!(
            count(&set, "poolprof_exporter_collector_success"),
            collectors
        );
        assert_eq!(
            count(&set, "poolprof_exporter_collector_duration_seconds"),
            collectors
        );
        let success = set.get("poolprof_exporter_collector_success").unwrap();
        assert!(success
            .get_metric()
            .iter()
            .all(|m| m.get_gauge().get_value() == 1.0));
    }

    #[test]
    fn lost_gpu_goes_down_alone_and_comes_back() {
        let backend = TestBackend::healthy(3);
        let mut collection = collection(&backend);
        let healthy = series_of(&collection.collect_once(), "GPU-test-1");
        assert!(healthy.len() > 20, "{healthy:?}");
        backend.devices[1].set(|f| f.memory = Err(ReadError::GpuLost("fallen off the bus".into())));
        let set = collection.collect_once();
        assert_eq!(
            value(&set, "poolprof_gpu_up", &[("uuid", "GPU-test-1")]),
            Some(0.0)
        );
        // readings are withheld; what names the GPU and what took it down stay
        assert_eq!(
            series_of(&set, "GPU-test-1"),
            ["poolprof_gpu_info", "poolprof_gpu_xid_errors_total"]
        );
        assert_eq!(series_of(&set, "GPU-test-0"), healthy);
        assert_eq!(series_of(&set, "GPU-test-2"), healthy);
        backend.devices[1]
            .set(|f| f.memory = crate::collector::test_device::Fields::healthy(1).memory);
        let set = collection.collect_once();
        assert_eq!(
            value(&set, "poolprof_gpu_up", &[("uuid", "GPU-test-1")]),
            Some(1.0)
        );
        assert_eq!(series_of(&set, "GPU-test-1"), healthy);
    }

    #[test]
    fn gpu_without_identity_at_start_is_down_until_it_answers() {
        let backend = TestBackend::healthy(2);
        backend.devices[1].set(|f| f.identity = Err(ReadError::GpuLost("no answer".into())));
        let mut collection = collection(&backend);
        let set = collection.collect_once();
        assert_eq!(
            value(
                &set,
                "poolprof_gpu_up",
                &[("gpu", "1"), ("uuid", "unknown")]
            ),
            Some(0.0)
        );
        assert_eq!(value(&set, "poolprof_gpu_up", &[("gpu", "0")]), Some(1.0));
        backend.devices[1]
            .set(|f| f.identity = crate::collector::test_device::Fields::healthy(1).identity);
        let set = collection.collect_once();
        assert_eq!(
            value(&set, "poolprof_gpu_up", &[("uuid", "GPU-test-1")]),
            Some(1.0)
        );
        assert_eq!(count(&set, "poolprof_gpu_up"), 2);
    }

    #[test]
    fn failing_and_panicking_collectors_are_contained() {
        let backend = TestBackend::healthy(1);
        let mut collection = collection(&backend);
        collection.add_collector(Box::new(Failing));
        collection.add_collector(Box::new(Panicking));
        let set = collection.collect_once();
        let success = "poolprof_exporter_collector_success";
        assert_eq!(value(&set, success, &[("collector", "failing")]), Some(0.0));
        assert_eq!(
            value(&set, success, &[("collector", "panicking")]),
            Some(0.0)
        );
        assert_eq!(value(&set, success, &[("collector", "memory")]), Some(1.0));
        assert_eq!(
            count(&set, "poolprof_test_partial"),
            1,
            "a failing collector's samples stay"
        );
        assert_eq!(
            count(&set, "poolprof_test_panicked"),
            0,
            "a panicked collector's samples go"
        );
        assert_eq!(count(&set, "poolprof_gpu_memory_used_bytes"), 1);
        assert!(
            collection.snapshot().success,
            "one broken collector does not fail readiness"
        );
    }

    #[test]
    fn all_collectors_failing_is_not_a_success() {
        let backend = TestBackend::healthy(1);
        let mut collection = Collection::new(backend, vec![Box::new(Failing), Box::new(Panicking)]);
        assert!(!collection.snapshot().success);
    }

    #[test]
    fn every_collector_output_passes_promtool() {
        let backend = TestBackend::healthy(2);
        backend.xids.lock().unwrap().push(crate::backend::XidEvent {
            uuid: "GPU-test-0".into(),
            xid: 79,
        });
        backend.devices[1].set(|f| f.memory = Err(ReadError::Failed("timeout".into())));
        let snapshot = collection(&backend).snapshot();
        assert_eq!(
            crate::registry::encode::tests::promtool_check(&snapshot.text()),
            ""
        );
        let om = String::from_utf8(snapshot.openmetrics().to_vec()).unwrap();
        assert!(om.contains("# TYPE poolprof_gpu_xid_errors counter\n"));
        assert!(om.ends_with("# EOF\n"));
    }

    #[test]
    fn published_names_are_exactly_the_documented_lists() {
        use crate::backend::{Memory, MigInstance};
        use crate::collector::{DEVICE_METRICS, EXPORTER_METRICS, MIG_METRICS};
        let backend = TestBackend::healthy(1);
        backend.xids.lock().unwrap().push(crate::backend::XidEvent {
            uuid: "GPU-test-0".into(),
            xid: 48,
        });
        let memory = Memory {
            total_bytes: 10,
            used_bytes: 4,
            free_bytes: 6,
            reserved_bytes: None,
        };
        let gpm = crate::collector::test_device::Fields::healthy(0)
            .gpm
            .unwrap();
        let instance = MigInstance {
            gpu_instance_id: 1,
            profile: "1g.10gb".into(),
            uuid: Some("MIG-test".into()),
            memory: Some(memory),
            gpm: Some(gpm),
        };
        backend.devices[0].set(|f| f.mig = Ok(vec![instance]));
        let set = collection(&backend).collect_once();
        let mut published: Vec<&str> = set.families().map(|(_, f)| f.name()).collect();
        let mut documented: Vec<&str> = [DEVICE_METRICS, MIG_METRICS, EXPORTER_METRICS].concat();
        published.sort_unstable();
        documented.sort_unstable();
        assert_eq!(published, documented);
        for name in DEVICE_METRICS.iter().chain(MIG_METRICS) {
            let family = set.get(name).unwrap();
            let labelled = |m: &prometheus::proto::Metric| {
                ["gpu", "uuid"]
                    .iter()
                    .all(|l| m.get_label().iter().any(|p| p.name() == *l))
            };
            assert!(
                family.get_metric().iter().all(labelled),
                "{name} lacks gpu/uuid"
            );
        }
    }

    #[test]
    fn stop_does_not_wait_for_a_long_interval() {
        let store = Arc::new(SnapshotStore::new());
        let handle =
            collection(&TestBackend::healthy(1)).spawn(Duration::from_secs(3600), store.clone());
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.latest().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            store.latest().is_some(),
            "the first collection runs at once"
        );
        let started = Instant::now();
        handle.stop();
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn spawned_collection_publishes_until_stopped() {
        let backend = TestBackend::healthy(1);
        let store = Arc::new(SnapshotStore::new());
        let handle = collection(&backend).spawn(Duration::from_millis(20), store.clone());
        let deadline = Instant::now() + Duration::from_secs(10);
        while store.latest().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let first = store.latest().expect("a snapshot within 10 s");
        assert!(store.succeeded_within(Duration::from_secs(10)));
        assert!(first.text().starts_with(b"# HELP"));
        while Arc::ptr_eq(&first, &store.latest().unwrap()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            !Arc::ptr_eq(&first, &store.latest().unwrap()),
            "collects again each interval"
        );
        let started = Instant::now();
        handle.stop();
        assert!(started.elapsed() < Duration::from_secs(5));
        let last = store.latest().unwrap();
        std::thread::sleep(Duration::from_millis(60));
        assert!(
            Arc::ptr_eq(&last, &store.latest().unwrap()),
            "no collection after stop"
        );
    }
}
