//! Which container holds which NVIDIA device, read out of a kubelet answer and
//! checked against Kubernetes' own name limits before any of it becomes a label.

use super::device_id::{self, DeviceRef};
use super::proto::ListPodResourcesResponse;

/// Resources of the NVIDIA device plugin start with this (`nvidia.com/gpu`,
/// `nvidia.com/gpu.shared`, `nvidia.com/mig-1g.10gb`, renamed resources).
pub const NVIDIA_RESOURCE_PREFIX: &str = "nvidia.com/";
/// Most NVIDIA device IDs one answer may hold; past it the answer is refused whole
/// rather than published in part (a 100-replica time-sliced 8-GPU node needs 800).
pub const MAX_ASSIGNMENTS: usize = 4096;
/// Kubernetes limits a namespace to a DNS label.
const MAX_NAMESPACE_LEN: usize = 63;
/// Kubernetes limits a pod name to a DNS subdomain.
const MAX_POD_LEN: usize = 253;
/// Kubernetes limits a container name to a DNS label.
const MAX_CONTAINER_LEN: usize = 63;

/// One NVIDIA device given to one container.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assignment {
    /// The GPU the device ID names.
    pub device: DeviceRef,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The container's name.
    pub container: String,
}

/// The NVIDIA devices of one kubelet answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assignments {
    /// Devices with valid names and a device ID that names a GPU.
    pub assignments: Vec<Assignment>,
    /// NVIDIA device IDs left out: an ID naming no GPU label, or a name breaking
    /// Kubernetes' limits. Logged, never published.
    pub skipped: usize,
}

/// Why an answer was refused whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the kubelet listed more than {MAX_ASSIGNMENTS} NVIDIA device assignments; pod info is withheld rather than published in part"
)]
pub struct TooManyAssignments;

/// The NVIDIA devices in `response`, each with the container holding it.
pub fn nvidia_assignments(
    response: &ListPodResourcesResponse,
) -> Result<Assignments, TooManyAssignments> {
    let mut out = Assignments::default();
    let mut seen = 0usize;
    for pod in &response.pod_resources {
        for container in &pod.containers {
            let ids = container
                .devices
                .iter()
                .filter(|d| d.resource_name.starts_with(NVIDIA_RESOURCE_PREFIX))
                .flat_map(|d| &d.device_ids);
            for id in ids {
                seen += 1;
                if seen > MAX_ASSIGNMENTS {
                    return Err(TooManyAssignments);
                }
                let names_ok = valid_name(&pod.namespace, MAX_NAMESPACE_LEN)
                    && valid_name(&pod.name, MAX_POD_LEN)
                    && valid_name(&container.name, MAX_CONTAINER_LEN);
                match device_id::parse(id).filter(|_| names_ok) {
                    Some(device) => out.assignments.push(Assignment {
                        device,
                        namespace: pod.namespace.clone(),
                        pod: pod.name.clone(),
                        container: container.name.clone(),
                    }),
                    None => out.skipped += 1,
                }
            }
        }
    }
    Ok(out)
}

/// Non-empty, within `max` bytes, and only the characters Kubernetes names use.
fn valid_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::proto::{ContainerDevices, ContainerResources, PodResources};

    fn devices(resource: &str, ids: &[&str]) -> ContainerDevices {
        ContainerDevices {
            resource_name: resource.into(),
            device_ids: ids.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn pod(
        namespace: &str,
        name: &str,
        containers: &[(&str, Vec<ContainerDevices>)],
    ) -> PodResources {
        PodResources {
            name: name.into(),
            namespace: namespace.into(),
            containers: containers
                .iter()
                .map(|(c, d)| ContainerResources {
                    name: c.to_string(),
                    devices: d.clone(),
                })
                .collect(),
        }
    }

    fn response(pods: Vec<PodResources>) -> ListPodResourcesResponse {
        ListPodResourcesResponse {
            pod_resources: pods,
        }
    }

    #[test]
    fn keeps_nvidia_devices_with_their_container() {
        let answer = response(vec![
            pod(
                "ml",
                "train-0",
                &[
                    (
                        "trainer",
                        vec![devices("nvidia.com/gpu", &["GPU-a", "GPU-b"])],
                    ),
                    ("sidecar", vec![]),
                ],
            ),
            pod(
                "web",
                "infer-1",
                &[(
                    "server",
                    vec![devices("nvidia.com/gpu.shared", &["GPU-a::3"])],
                )],
            ),
        ]);
        let got = nvidia_assignments(&answer).unwrap();
        let summary: Vec<_> = got
            .assignments
            .iter()
            .map(|a| {
                (
                    a.device.clone(),
                    a.namespace.as_str(),
                    a.pod.as_str(),
                    a.container.as_str(),
                )
            })
            .collect();
        let uuid = |s: &str| DeviceRef::Uuid(s.into());
        assert_eq!(
            summary,
            [
                (uuid("GPU-a"), "ml", "train-0", "trainer"),
                (uuid("GPU-b"), "ml", "train-0", "trainer"),
                (uuid("GPU-a"), "web", "infer-1", "server"),
            ]
        );
        assert_eq!(got.skipped, 0);
    }

    #[test]
    fn other_vendors_resources_are_ignored_not_skipped() {
        let answer = response(vec![pod(
            "net",
            "router",
            &[(
                "main",
                vec![
                    devices("intel.com/sriov", &["0000:3b:02.0"]),
                    devices("amd.com/gpu", &["GPU-x"]),
                ],
            )],
        )]);
        assert_eq!(nvidia_assignments(&answer).unwrap(), Assignments::default());
    }

    #[test]
    fn bad_names_and_ids_are_skipped_and_counted() {
        let gpu = || vec![devices("nvidia.com/gpu", &["GPU-a"])];
        let answer = response(vec![
            pod("", "nameless-ns", &[("c", gpu())]),
            pod("ns", &"p".repeat(254), &[("c", gpu())]),
            pod("ns", "p", &[(&"c".repeat(64), gpu())]),
            pod("ns", "p", &[("C\"}", gpu())]),
            pod(
                "ns",
                "p",
                &[("c", vec![devices("nvidia.com/gpu", &["0:1", "bogus"])])],
            ),
            pod("ns", "ok", &[("c", gpu())]),
        ]);
        let got = nvidia_assignments(&answer).unwrap();
        assert_eq!(got.skipped, 6);
        assert_eq!(got.assignments.len(), 1);
        assert_eq!(got.assignments[0].pod, "ok");
    }

    #[test]
    fn refuses_an_answer_past_the_bound() {
        let ids: Vec<String> = (0..=MAX_ASSIGNMENTS)
            .map(|i| format!("GPU-a::{i}"))
            .collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let answer = response(vec![pod(
            "ns",
            "p",
            &[("c", vec![devices("nvidia.com/gpu", &ids)])],
        )]);
        assert_eq!(nvidia_assignments(&answer), Err(TooManyAssignments));
        let answer = response(vec![pod(
            "ns",
            "p",
            &[(
                "c",
                vec![devices("nvidia.com/gpu", &ids[..MAX_ASSIGNMENTS])],
            )],
        )]);
        assert_eq!(
            nvidia_assignments(&answer).unwrap().assignments.len(),
            MAX_ASSIGNMENTS
        );
    }
}
