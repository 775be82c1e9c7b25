//! Which Kubernetes container holds each GPU, from the kubelet's pod-resources API:
//! `poolprof_gpu_pod_info{uuid,namespace,pod,container}` (value 1). Several
//! containers sharing one GPU (time-slicing, MPS) give one series each, which is how
//! pooling shows. Join per-GPU series onto it with
//! `poolprof_gpu_pod_info * on(uuid) group_left(gpu) poolprof_gpu_utilization_ratio`
//! (the other way round fails once two containers share a GPU; docs/kubernetes.md).
//!
//! The kubelet is asked at most every `--kubelet.pod-resources-interval`; between
//! calls the last answer is published again. When a call fails nothing is published
//! for pods (a stale owner is worse than none) and the collector's success is 0 until
//! a call succeeds. Device IDs map to `uuid` labels as `kubelet::device_id` says.

use super::{CollectError, Collector, Gpu};
use crate::kubelet::{
    nvidia_assignments, Assignments, DeviceRef, PodResourcesClient, PodResourcesError,
};
use crate::registry::MetricSet;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Default `--kubelet.pod-resources-interval`: pods come and go in seconds, and each
/// call is a round trip to the kubelet.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// How long one call may take, connection included, before the collection moves on.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(1);
/// Every metric name the pods collector can publish (tests and docs check them).
pub const POD_METRICS: &[&str] = &["poolprof_gpu_pod_info"];
const NAME: &str = "pods";
const HELP: &str =
    "1 for each Kubernetes container given the GPU (uuid) by the device plugin; join on uuid.";
const WHAT_TO_DO: &str = "poolprof_gpu_pod_info is withheld until the kubelet answers: check that the kubelet runs and that /var/lib/kubelet/pod-resources is mounted into the exporter (hostPath, read-only) and readable by its user";

/// Where the pods collector gets the kubelet's answer (the real client, or a test's).
pub trait PodResourcesSource: Send {
    /// One `List` call.
    fn list(
        &mut self,
    ) -> Result<crate::kubelet::proto::ListPodResourcesResponse, PodResourcesError>;
}

impl PodResourcesSource for PodResourcesClient {
    fn list(
        &mut self,
    ) -> Result<crate::kubelet::proto::ListPodResourcesResponse, PodResourcesError> {
        PodResourcesClient::list(self)
    }
}

/// What the last call brought, as far as the logs care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    /// No call yet.
    Unknown,
    /// The kubelet answered; `skipping` when some NVIDIA device IDs were left out.
    Answering { skipping: bool },
    /// The last call failed in this way.
    Failing(&'static str),
}

/// Publishes `poolprof_gpu_pod_info` from a [`PodResourcesSource`].
pub struct PodsCollector<S = PodResourcesClient> {
    source: S,
    interval: Duration,
    next_call: Option<Instant>,
    latest: Result<Assignments, String>,
    health: Health,
}

impl<S: PodResourcesSource> PodsCollector<S> {
    /// A collector asking `source` at most every `interval`.
    pub fn new(source: S, interval: Duration) -> Self {
        Self {
            source,
            interval,
            next_call: None,
            latest: Ok(Assignments::default()),
            health: Health::Unknown,
        }
    }

    /// Calls the kubelet when the interval has passed since the last call.
    fn refresh(&mut self) {
        let now = Instant::now();
        if self.next_call.is_some_and(|next| now < next) {
            return;
        }
        self.next_call = Some(now + self.interval);
        let (latest, health) = match self.source.list() {
            Ok(response) => match nvidia_assignments(&response) {
                Ok(found) => {
                    let skipping = found.skipped > 0;
                    (Ok(found), Health::Answering { skipping })
                }
                Err(e) => (Err(e.to_string()), Health::Failing("too_many")),
            },
            Err(e) => {
                let kind = failure_kind(&e);
                (Err(e.to_string()), Health::Failing(kind))
            }
        };
        self.log_change(health, &latest);
        self.health = health;
        self.latest = latest;
    }

    fn log_change(&self, health: Health, latest: &Result<Assignments, String>) {
        if health == self.health {
            return;
        }
        match (health, latest) {
            (Health::Failing(_), Err(error)) => {
                tracing::warn!(collector = NAME, %error, "{WHAT_TO_DO}");
            }
            (Health::Answering { skipping }, Ok(found)) => {
                if matches!(self.health, Health::Failing(_)) {
                    tracing::info!(
                        collector = NAME,
                        "the kubelet answers again; poolprof_gpu_pod_info is back"
                    );
                } else if self.health == Health::Unknown {
                    tracing::info!(
                        collector = NAME,
                        assignments = found.assignments.len(),
                        "reading GPU owners from the kubelet"
                    );
                }
                if skipping {
                    tracing::warn!(
                        collector = NAME,
                        skipped = found.skipped,
                        "some nvidia.com device IDs name no GPU uuid (a MIG device by index, or an unknown ID form) or break Kubernetes name limits; they are left out of poolprof_gpu_pod_info"
                    );
                }
            }
            _ => {}
        }
    }
}

impl<S: PodResourcesSource> Collector for PodsCollector<S> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        self.refresh();
        let found = self.latest.as_ref().map_err(|message| CollectError {
            collector: NAME,
            message: message.clone(),
        })?;
        for (uuid, namespace, pod, container) in owners(found, gpus) {
            out.info(
                "poolprof_gpu_pod_info",
                HELP,
                &[
                    ("uuid", uuid),
                    ("namespace", namespace),
                    ("pod", pod),
                    ("container", container),
                ],
            );
        }
        Ok(())
    }
}

/// One `(uuid, namespace, pod, container)` per container and GPU, replicas of one
/// GPU in one container folded together; a GPU index no GPU here answers to is
/// left out.
fn owners<'a>(
    found: &'a Assignments,
    gpus: &'a [Gpu],
) -> BTreeSet<(&'a str, &'a str, &'a str, &'a str)> {
    found
        .assignments
        .iter()
        .filter_map(|a| {
            let uuid = match &a.device {
                DeviceRef::Uuid(uuid) => uuid.as_str(),
                DeviceRef::Index(index) => gpus
                    .iter()
                    .find(|g| g.index == index.to_string())?
                    .uuid
                    .as_str(),
            };
            Some((
                uuid,
                a.namespace.as_str(),
                a.pod.as_str(),
                a.container.as_str(),
            ))
        })
        .collect()
}

fn failure_kind(error: &PodResourcesError) -> &'static str {
    match error {
        PodResourcesError::Runtime(_) => "runtime",
        PodResourcesError::Connect { .. } => "connect",
        PodResourcesError::TimedOut { .. } => "timeout",
        PodResourcesError::Call { .. } => "call",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::TestDevice;
    use crate::kubelet::proto::{
        ContainerDevices, ContainerResources, ListPodResourcesResponse, PodResources,
    };
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    /// Answers from a script, counting calls.
    #[derive(Clone, Default)]
    struct Scripted {
        answers: Arc<Mutex<VecDeque<Result<ListPodResourcesResponse, PodResourcesError>>>>,
        calls: Arc<Mutex<usize>>,
    }

    impl Scripted {
        fn then(&self, answer: Result<ListPodResourcesResponse, PodResourcesError>) -> &Self {
            self.answers.lock().unwrap().push_back(answer);
            self
        }
        fn calls(&self) -> usize {
            *self.calls.lock().unwrap()
        }
    }

    impl PodResourcesSource for Scripted {
        fn list(&mut self) -> Result<ListPodResourcesResponse, PodResourcesError> {
            *self.calls.lock().unwrap() += 1;
            self.answers
                .lock()
                .unwrap()
                .pop_front()
                .expect("a scripted answer")
        }
    }

    fn pod(namespace: &str, name: &str, container: &str, ids: &[&str]) -> PodResources {
        PodResources {
            name: name.into(),
            namespace: namespace.into(),
            containers: vec![ContainerResources {
                name: container.into(),
                devices: vec![ContainerDevices {
                    resource_name: "nvidia.com/gpu".into(),
                    device_ids: ids.iter().map(|s| s.to_string()).collect(),
                }],
            }],
        }
    }

    fn answer(pods: Vec<PodResources>) -> Result<ListPodResourcesResponse, PodResourcesError> {
        Ok(ListPodResourcesResponse {
            pod_resources: pods,
        })
    }

    fn timed_out() -> Result<ListPodResourcesResponse, PodResourcesError> {
        Err(PodResourcesError::TimedOut {
            socket: "/k.sock".into(),
            timeout: CALL_TIMEOUT,
        })
    }

    fn gpus(n: u32) -> Vec<Gpu> {
        (0..n).map(|i| TestDevice::healthy(i).gpu()).collect()
    }

    /// The published `(uuid, namespace, pod, container)` tuples.
    fn published(out: &MetricSet) -> Vec<[String; 4]> {
        let Some(family) = out.get("poolprof_gpu_pod_info") else {
            return Vec::new();
        };
        family
            .get_metric()
            .iter()
            .map(|m| {
                assert_eq!(m.get_gauge().get_value(), 1.0);
                let label = |n: &str| {
                    m.get_label()
                        .iter()
                        .find(|l| l.name() == n)
                        .map(|l| l.value().to_string())
                        .unwrap()
                };
                [
                    label("uuid"),
                    label("namespace"),
                    label("pod"),
                    label("container"),
                ]
            })
            .collect()
    }

    fn row(uuid: &str, ns: &str, pod: &str, container: &str) -> [String; 4] {
        [uuid.into(), ns.into(), pod.into(), container.into()]
    }

    #[test]
    fn containers_sharing_a_gpu_each_get_a_series() {
        let gpus = gpus(2);
        let (a, b) = (gpus[0].uuid.clone(), gpus[1].uuid.clone());
        let source = Scripted::default();
        source.then(answer(vec![
            pod("ml", "train", "trainer", &[&a, &b]),
            pod("web", "infer-0", "server", &[&format!("{a}::0")]),
            pod(
                "web",
                "infer-1",
                "server",
                &[&format!("{a}::1"), &format!("{a}::2")],
            ),
        ]));
        let mut collector = PodsCollector::new(source, Duration::ZERO);
        let mut out = MetricSet::new();
        collector.collect(&gpus, &mut out).unwrap();
        let mut want = vec![
            row(&a, "ml", "train", "trainer"),
            row(&b, "ml", "train", "trainer"),
            row(&a, "web", "infer-0", "server"),
            row(&a, "web", "infer-1", "server"),
        ];
        want.sort();
        assert_eq!(published(&out), want);
        let names: Vec<&str> = out.families().map(|(_, f)| f.name()).collect();
        assert_eq!(names, POD_METRICS);
    }

    #[test]
    fn index_ids_name_the_gpu_with_that_index() {
        let gpus = gpus(2);
        let source = Scripted::default();
        source.then(answer(vec![pod("ml", "p", "c", &["1", "1::3", "7"])]));
        let mut out = MetricSet::new();
        PodsCollector::new(source, Duration::ZERO)
            .collect(&gpus, &mut out)
            .unwrap();
        assert_eq!(published(&out), [row(&gpus[1].uuid, "ml", "p", "c")]);
    }

    #[test]
    fn asks_the_kubelet_at_most_once_per_interval() {
        let gpus = gpus(1);
        let source = Scripted::default();
        source.then(answer(vec![pod("ml", "p", "c", &[&gpus[0].uuid])]));
        let mut collector = PodsCollector::new(source.clone(), Duration::from_secs(3600));
        for _ in 0..5 {
            let mut out = MetricSet::new();
            collector.collect(&gpus, &mut out).unwrap();
            assert_eq!(
                published(&out).len(),
                1,
                "the last answer is published again"
            );
        }
        assert_eq!(source.calls(), 1);
    }

    #[test]
    fn a_failed_call_publishes_nothing_until_the_kubelet_answers_again() {
        let gpus = gpus(1);
        let uuid = gpus[0].uuid.clone();
        let source = Scripted::default();
        source
            .then(answer(vec![pod("ml", "p", "c", &[&uuid])]))
            .then(timed_out())
            .then(answer(vec![]))
            .then(answer(vec![pod("ml", "q", "c", &[&uuid])]));
        let mut collector = PodsCollector::new(source, Duration::ZERO);
        let mut run = || {
            let mut out = MetricSet::new();
            let result = collector.collect(&gpus, &mut out);
            (result, published(&out))
        };
        assert_eq!(run().1, [row(&uuid, "ml", "p", "c")]);
        let (result, rows) = run();
        let message = result.unwrap_err().message;
        assert!(message.contains("did not answer within 1s"), "{message}");
        assert!(rows.is_empty(), "no stale owner while failing");
        let (result, rows) = run();
        assert!(result.is_ok() && rows.is_empty(), "a pod removed is gone");
        assert_eq!(run().1, [row(&uuid, "ml", "q", "c")]);
    }

    #[test]
    fn an_answer_past_the_bound_is_an_error_not_a_partial_list() {
        let gpus = gpus(1);
        let ids: Vec<String> = (0..=crate::kubelet::assignments::MAX_ASSIGNMENTS)
            .map(|i| format!("{}::{i}", gpus[0].uuid))
            .collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let source = Scripted::default();
        source.then(answer(vec![pod("ml", "p", "c", &ids)]));
        let mut out = MetricSet::new();
        let err = PodsCollector::new(source, Duration::ZERO)
            .collect(&gpus, &mut out)
            .unwrap_err();
        assert!(err.message.contains("more than"), "{}", err.message);
        assert!(published(&out).is_empty());
    }

    #[test]
    fn output_passes_promtool() {
        let gpus = gpus(1);
        let source = Scripted::default();
        source.then(answer(vec![
            pod("ml", "train-0", "trainer", &[&gpus[0].uuid]),
            pod(
                "ml",
                "train-1",
                "trainer",
                &["MIG-6d6b2a1c-1bd6-5b1b-a3a6-3a0b1b0c0d0e"],
            ),
        ]));
        let mut out = MetricSet::new();
        PodsCollector::new(source, Duration::ZERO)
            .collect(&gpus, &mut out)
            .unwrap();
        let text = crate::registry::encode::text(&out);
        assert_eq!(crate::registry::encode::tests::promtool_check(&text), "");
    }
}
