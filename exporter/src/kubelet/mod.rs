//! The kubelet's pod-resources API (`v1.PodResourcesLister`): which Kubernetes
//! container was given which device, for `poolprof_gpu_pod_info`. The collector is
//! `collector::pods`.

pub mod assignments;
pub mod client;
pub mod device_id;
pub mod proto;
pub mod socket;

pub use assignments::{nvidia_assignments, Assignment, Assignments, TooManyAssignments};
pub use client::{PodResourcesClient, PodResourcesError};
pub use device_id::DeviceRef;
pub use socket::{choose as choose_socket, SocketChoice, SocketPathError, DEFAULT_SOCKET_PATH};
