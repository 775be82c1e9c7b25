//! The whole collection against the simulated fleet of `--simulate 6`: the checks the
//! end-to-end test makes through Prometheus, here without a network.

use super::runner::Collection;
use super::{default_collectors, DEVICE_METRICS, EXPORTER_METRICS, MIG_METRICS};
use crate::backend::sim::{ManualClock, Scenario, SimBackend, SimClock};
use crate::backend::Backend;
use crate::registry::MetricSet;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Position of each workload in the built-in round-robin.
const FAILING: usize = 4;
const MIG: usize = 5;

struct Fleet {
    clock: ManualClock,
    backend: Arc<SimBackend>,
    collection: Collection,
}

impl Fleet {
    fn new() -> Self {
        let clock = ManualClock::new();
        let scenario = Scenario::builtin(6).expect("6 is a valid fleet size");
        let backend = Arc::new(SimBackend::new(scenario, SimClock::Manual(clock.clone())));
        let collection = Collection::new(backend.clone() as Arc<dyn Backend>, default_collectors());
        Self {
            clock,
            backend,
            collection,
        }
    }

    fn at(&mut self, seconds: f64) -> MetricSet {
        self.clock.set(seconds);
        self.collection.collect_once()
    }

    fn uuid(&self, position: usize) -> String {
        self.backend.sim_devices()[position]
            .cached_identity()
            .uuid
            .clone()
    }
}

fn label<'a>(m: &'a prometheus::proto::Metric, name: &str) -> Option<&'a str> {
    m.get_label()
        .iter()
        .find(|l| l.name() == name)
        .map(|l| l.value())
}

/// Names of the families with at least one sample for `uuid`, `poolprof_gpu_up` aside.
fn families_of(set: &MetricSet, uuid: &str) -> BTreeSet<String> {
    set.families()
        .map(|(_, f)| f)
        .filter(|f| f.name() != "poolprof_gpu_up")
        .filter(|f| {
            f.get_metric()
                .iter()
                .any(|m| label(m, "uuid") == Some(uuid))
        })
        .map(|f| f.name().to_string())
        .collect()
}

fn up(set: &MetricSet, uuid: &str) -> Option<f64> {
    let family = set.get("poolprof_gpu_up")?;
    let metric = family
        .get_metric()
        .iter()
        .find(|m| label(m, "uuid") == Some(uuid))?;
    Some(metric.get_gauge().get_value())
}

#[test]
fn every_device_metric_is_present_with_gpu_and_uuid() {
    let mut fleet = Fleet::new();
    fleet.at(4.0);
    // The failing GPU fell off the bus at 10 s and is back at 310 s with its Xid.
    fleet.at(20.0);
    let set = fleet.at(320.0);
    for name in DEVICE_METRICS
        .iter()
        .chain(MIG_METRICS)
        .chain(EXPORTER_METRICS)
    {
        assert!(set.get(name).is_some(), "{name} missing");
    }
    for name in DEVICE_METRICS.iter().chain(MIG_METRICS) {
        for m in set.get(name).unwrap().get_metric() {
            let gpu = label(m, "gpu").unwrap_or_default();
            let uuid = label(m, "uuid").unwrap_or_default();
            assert!(
                gpu.parse::<u32>().is_ok() && uuid.starts_with("GPU-"),
                "{name}: {m:?}"
            );
        }
    }
    // every GPU has the known Xid codes at 0; the failing one has its 79 at 1
    let xid = set
        .get("poolprof_gpu_xid_errors_total")
        .unwrap()
        .get_metric();
    let counted: Vec<_> = xid
        .iter()
        .filter(|m| m.get_counter().get_value() > 0.0)
        .collect();
    assert_eq!(counted.len(), 1);
    assert_eq!(
        label(counted[0], "uuid"),
        Some(fleet.uuid(FAILING).as_str())
    );
    assert_eq!(label(counted[0], "xid"), Some("79"));
    assert_eq!(xid.len(), 6 * crate::collector::xid::KNOWN_XIDS.len());
    for m in set
        .get("poolprof_mig_memory_used_bytes")
        .unwrap()
        .get_metric()
    {
        assert!(label(m, "gpu_instance").is_some() && label(m, "mig_profile").is_some());
    }
    let success = set.get("poolprof_exporter_collector_success").unwrap();
    assert!(success
        .get_metric()
        .iter()
        .all(|m| m.get_gauge().get_value() == 1.0));
}

#[test]
fn failing_gpu_goes_down_alone_and_comes_back() {
    let mut fleet = Fleet::new();
    let failing = fleet.uuid(FAILING);
    let before = fleet.at(5.0);
    assert_eq!(up(&before, &failing), Some(1.0));
    assert!(families_of(&before, &failing).len() > 20);
    let during = fleet.at(60.0);
    assert_eq!(up(&during, &failing), Some(0.0));
    assert_eq!(
        families_of(&during, &failing),
        ["poolprof_gpu_info", "poolprof_gpu_xid_errors_total"]
            .into_iter()
            .map(String::from)
            .collect(),
        "while down, only what names the GPU and what took it down"
    );
    for position in (0..6).filter(|p| *p != FAILING) {
        let uuid = fleet.uuid(position);
        assert_eq!(up(&during, &uuid), Some(1.0));
        assert_eq!(
            families_of(&during, &uuid),
            families_of(&before, &uuid),
            "GPU {position}"
        );
    }
    let after = fleet.at(400.0);
    assert_eq!(up(&after, &failing), Some(1.0));
    assert_eq!(
        families_of(&after, &failing),
        families_of(&before, &failing)
    );
}

#[test]
fn fields_a_gpu_does_not_support_are_absent() {
    let mut fleet = Fleet::new();
    let set = fleet.at(30.0);
    let mig = fleet.uuid(MIG);
    let families = families_of(&set, &mig);
    assert!(
        !families.contains("poolprof_gpu_utilization_ratio"),
        "MIG mode has no device utilization"
    );
    assert!(families.contains("poolprof_gpu_memory_used_bytes"));
    assert!(families.contains("poolprof_mig_sm_active_ratio"));
    assert!(families_of(&set, &fleet.uuid(0)).contains("poolprof_gpu_utilization_ratio"));
}

#[test]
fn simulated_exposition_passes_promtool() {
    let mut fleet = Fleet::new();
    fleet.clock.set(320.0);
    let snapshot = fleet.collection.snapshot();
    assert_eq!(
        crate::registry::encode::tests::promtool_check(&snapshot.text()),
        ""
    );
    assert!(snapshot.success);
}
