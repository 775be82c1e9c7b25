//! MIG instances of one GPU: id, profile, UUID, memory and GPM per GPU instance.

use super::error::read_error;
use super::gpm::GpmState;
use crate::backend::{Memory, MigInstance, ReadError, Reading};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{nvmlReturn_enum_NVML_SUCCESS, NVML_DEVICE_MIG_ENABLE};

/// The profile from a MIG device's name: NVML names them
/// `NVIDIA H100 80GB HBM3 MIG 1g.10gb`; the profile is the word after `MIG`.
pub fn profile_from_name(name: &str) -> Option<&str> {
    let mut words = name.split_whitespace();
    words.by_ref().find(|w| *w == "MIG")?;
    words.next().filter(|p| p.contains('g') && p.contains('.'))
}

/// Whether MIG mode is on now. A GPU without MIG support has it off.
pub fn enabled(device: &Device<'static>) -> Reading<bool> {
    match device.mig_mode() {
        Ok(mode) => Ok(mode.current == NVML_DEVICE_MIG_ENABLE),
        Err(NvmlError::NotSupported) => Ok(false),
        Err(e) => Err(read_error(e)),
    }
}

/// The GPU instance id of a MIG device handle (not wrapped by nvml-wrapper 0.13).
fn gpu_instance_id(nvml: &Nvml, mig: &Device<'static>) -> Reading<u32> {
    let get = nvml
        .lib()
        .nvmlDeviceGetGpuInstanceId
        .as_ref()
        .map_err(|_| ReadError::NotSupported)?;
    let mut id: u32 = 0;
    // SAFETY: the handle comes from this library; `id` outlives the call.
    let status = unsafe { get(mig.handle(), &mut id) };
    if status != nvmlReturn_enum_NVML_SUCCESS {
        return Err(read_error(NvmlError::from(status)));
    }
    Ok(id)
}

/// Reads every MIG device of `parent`, which has MIG on (see [`enabled`]).
pub fn instances(
    nvml: &'static Nvml,
    parent: &Device<'static>,
    gpm: Option<&GpmState>,
) -> Reading<Vec<MigInstance>> {
    let count = parent.mig_device_count().map_err(read_error)?;
    let mut out = Vec::new();
    for index in 0..count {
        // Unpopulated slots answer NotFound; they are simply not instances.
        let Ok(mig) = parent.mig_device_by_index(index) else {
            continue;
        };
        let gi = gpu_instance_id(nvml, &mig)?;
        let name = mig.name().map_err(read_error)?;
        let profile = profile_from_name(&name).unwrap_or(&name).to_string();
        let memory = mig.memory_info().ok().map(|m| Memory {
            total_bytes: m.total,
            used_bytes: m.used,
            free_bytes: m.free,
            reserved_bytes: Some(m.reserved),
        });
        let gpm = gpm.and_then(|state| {
            let sample = parent.gpm_mig_sample(gi).ok()?;
            state.advance(Some(gi), sample).ok()
        });
        out.push(MigInstance {
            gpu_instance_id: gi,
            profile,
            uuid: mig.uuid().ok(),
            memory,
            gpm,
        });
    }
    if let Some(state) = gpm {
        let live: Vec<u32> = out.iter().map(|i| i.gpu_instance_id).collect();
        state.retain_instances(&live);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_is_the_word_after_mig() {
        assert_eq!(
            profile_from_name("NVIDIA H100 80GB HBM3 MIG 1g.10gb"),
            Some("1g.10gb")
        );
        assert_eq!(
            profile_from_name("NVIDIA A100-SXM4-40GB MIG 3g.20gb"),
            Some("3g.20gb")
        );
        assert_eq!(
            profile_from_name("NVIDIA H100 MIG 1g.10gb+me"),
            Some("1g.10gb+me")
        );
    }

    #[test]
    fn names_without_a_profile_give_none() {
        assert_eq!(profile_from_name("NVIDIA H100 80GB HBM3"), None);
        assert_eq!(profile_from_name("NVIDIA H100 MIG"), None);
        assert_eq!(profile_from_name("NVIDIA H100 MIG device"), None);
    }
}
