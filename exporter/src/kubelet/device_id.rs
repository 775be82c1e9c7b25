//! Device IDs as the NVIDIA device plugin advertises them to the kubelet, and which
//! GPU each one names.
//!
//! - `GPU-<uuid>`: a whole GPU (the plugin's default `uuid` ID strategy).
//! - `MIG-<uuid>` (or the pre-R470 form `MIG-GPU-<uuid>/<gi>/<ci>`): a MIG device. It
//!   is kept as it is: NVML names MIG devices by their own UUID, and the exporter's
//!   per-GPU series carry the parent GPU's UUID, so these series join with other MIG
//!   tooling, not with `poolprof_gpu_*`.
//! - `<id>::<n>`: replica `n` of `<id>` under time-slicing or MPS sharing
//!   (`nvidia.com/gpu.shared` and friends); the replica suffix is dropped, since every
//!   replica is the same GPU.
//! - `<index>`: a whole GPU under the plugin's `index` ID strategy; it names the GPU
//!   whose NVML index it is.
//!
//! Anything else (a MIG device by index, `<gpu>:<instance>`, or an ID of an unknown
//! shape) names no GPU label poolprof can publish.

/// Longest device ID accepted; real ones are under 100 characters.
pub const MAX_DEVICE_ID_LEN: usize = 128;
/// Largest GPU index accepted under the `index` ID strategy.
const MAX_GPU_INDEX: u32 = 4096;

/// The GPU a device ID names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceRef {
    /// A GPU or MIG device UUID (`GPU-…`, `MIG-…`), published as the `uuid` label.
    Uuid(String),
    /// A GPU by NVML index, to be turned into its UUID by the caller.
    Index(u32),
}

/// Reads a device plugin ID; `None` when it names no GPU poolprof can label.
pub fn parse(id: &str) -> Option<DeviceRef> {
    if id.len() > MAX_DEVICE_ID_LEN {
        return None;
    }
    let device = strip_replica(id)?;
    if let Some(rest) = device
        .strip_prefix("GPU-")
        .or_else(|| device.strip_prefix("MIG-"))
    {
        let valid = !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'/'));
        return valid.then(|| DeviceRef::Uuid(device.to_string()));
    }
    let digits = !device.is_empty() && device.bytes().all(|b| b.is_ascii_digit());
    if digits {
        return device
            .parse::<u32>()
            .ok()
            .filter(|&index| index < MAX_GPU_INDEX)
            .map(DeviceRef::Index);
    }
    None
}

/// The ID without its `::<n>` replica suffix; `None` when the suffix is not a number.
fn strip_replica(id: &str) -> Option<&str> {
    match id.split_once("::") {
        None => Some(id),
        Some((device, replica))
            if !replica.is_empty() && replica.bytes().all(|b| b.is_ascii_digit()) =>
        {
            Some(device)
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "GPU-00000000-0000-4000-8000-000000000001";

    fn uuid(s: &str) -> Option<DeviceRef> {
        Some(DeviceRef::Uuid(s.to_string()))
    }

    #[test]
    fn whole_gpu_uuid_is_itself() {
        assert_eq!(parse(UUID), uuid(UUID));
    }

    #[test]
    fn shared_replicas_name_their_gpu() {
        assert_eq!(parse(&format!("{UUID}::0")), uuid(UUID));
        assert_eq!(parse(&format!("{UUID}::17")), uuid(UUID));
        assert_eq!(parse("3::2"), Some(DeviceRef::Index(3)));
    }

    #[test]
    fn mig_devices_keep_their_own_uuid() {
        let mig = "MIG-6d6b2a1c-1bd6-5b1b-a3a6-3a0b1b0c0d0e";
        assert_eq!(parse(mig), uuid(mig));
        let old = "MIG-GPU-5c3f8f5e-1c2d-4e5f-8a9b-0c1d2e3f4a5b/1/0";
        assert_eq!(parse(old), uuid(old));
        assert_eq!(parse(&format!("{mig}::4")), uuid(mig));
    }

    #[test]
    fn index_strategy_names_the_gpu_index() {
        assert_eq!(parse("0"), Some(DeviceRef::Index(0)));
        assert_eq!(parse("7"), Some(DeviceRef::Index(7)));
    }

    #[test]
    fn ids_naming_no_publishable_gpu_are_refused() {
        for id in [
            "",
            "GPU-",
            "MIG-",
            "0:1",                 // a MIG device by index: no UUID to publish
            "99999",               // past any real index
            "GPU-abc::",           // empty replica
            "GPU-abc::x",          // replica not a number
            "GPU-abc def",         // not a UUID character
            "GPU-abc\"} 1\nevil{", // would break a label if it got through
            "nvme0n1",
            "-1",
        ] {
            assert_eq!(parse(id), None, "{id:?}");
        }
        let long = format!("GPU-{}", "a".repeat(MAX_DEVICE_ID_LEN));
        assert_eq!(parse(&long), None);
    }
}
