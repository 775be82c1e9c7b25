//! The messages of the kubelet's `v1.PodResourcesLister/List` call, written by hand
//! with prost's derive so the build needs no `protoc`. Field numbers follow
//! `k8s.io/kubelet/pkg/apis/podresources/v1/api.proto`. Fields poolprof does not read
//! (CPU ids, memory, topology, dynamic resources) are left out: protobuf decoders
//! skip unknown fields, so a kubelet sending them still decodes.

/// The request of `List`: it has no fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListPodResourcesRequest {}

/// Every pod on the node with the devices its containers were given.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListPodResourcesResponse {
    /// One entry per pod.
    #[prost(message, repeated, tag = "1")]
    pub pod_resources: Vec<PodResources>,
}

/// One pod.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PodResources {
    /// The pod's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The pod's namespace.
    #[prost(string, tag = "2")]
    pub namespace: String,
    /// Its containers, init containers included.
    #[prost(message, repeated, tag = "3")]
    pub containers: Vec<ContainerResources>,
}

/// One container of a pod.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerResources {
    /// The container's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Devices given to it by device plugins, grouped by resource.
    #[prost(message, repeated, tag = "2")]
    pub devices: Vec<ContainerDevices>,
}

/// The devices of one extended resource given to a container.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ContainerDevices {
    /// The resource, e.g. `nvidia.com/gpu` or `nvidia.com/mig-1g.10gb`.
    #[prost(string, tag = "1")]
    pub resource_name: String,
    /// The IDs the device plugin advertised, e.g. `GPU-…`, `GPU-…::2`, `MIG-…`.
    #[prost(string, repeated, tag = "2")]
    pub device_ids: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// The kubelet's full `ContainerResources`/`ContainerDevices`, with the fields
    /// poolprof leaves out, to check that a real answer decodes.
    #[derive(Clone, PartialEq, prost::Message)]
    struct FullContainer {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, repeated, tag = "2")]
        devices: Vec<FullDevices>,
        #[prost(int64, repeated, tag = "3")]
        cpu_ids: Vec<i64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct FullDevices {
        #[prost(string, tag = "1")]
        resource_name: String,
        #[prost(string, repeated, tag = "2")]
        device_ids: Vec<String>,
        #[prost(message, optional, tag = "3")]
        topology: Option<Topology>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Topology {
        #[prost(message, repeated, tag = "1")]
        nodes: Vec<NumaNode>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct NumaNode {
        #[prost(int64, tag = "1")]
        id: i64,
    }

    #[test]
    fn decodes_an_answer_carrying_fields_it_does_not_read() {
        let full = FullContainer {
            name: "trainer".into(),
            devices: vec![FullDevices {
                resource_name: "nvidia.com/gpu".into(),
                device_ids: vec!["GPU-a".into(), "GPU-b::3".into()],
                topology: Some(Topology {
                    nodes: vec![NumaNode { id: 1 }],
                }),
            }],
            cpu_ids: vec![4, 5],
        };
        let decoded = ContainerResources::decode(full.encode_to_vec().as_slice()).unwrap();
        assert_eq!(decoded.name, "trainer");
        assert_eq!(decoded.devices.len(), 1);
        assert_eq!(decoded.devices[0].resource_name, "nvidia.com/gpu");
        assert_eq!(decoded.devices[0].device_ids, ["GPU-a", "GPU-b::3"]);
    }

    #[test]
    fn wire_bytes_match_the_proto_field_numbers() {
        let pod = PodResources {
            name: "p".into(),
            namespace: "n".into(),
            containers: vec![],
        };
        // Field 1 (name), length-delimited: tag byte 0x0a; field 2 (namespace): 0x12.
        assert_eq!(pod.encode_to_vec(), [0x0a, 1, b'p', 0x12, 1, b'n']);
        let response = ListPodResourcesResponse {
            pod_resources: vec![pod],
        };
        assert_eq!(
            response.encode_to_vec()[0],
            0x0a,
            "pod_resources is field 1"
        );
    }
}
