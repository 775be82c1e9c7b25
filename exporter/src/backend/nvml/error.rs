//! How NVML's errors become the backend's: per-read [`ReadError`]s, and the one
//! start-up error that tells the operator what to do instead.

use crate::backend::ReadError;
use nvml_wrapper::error::NvmlError;

/// Why NVML could not be started. Every message names `--simulate`, the way to run
/// the exporter on a machine without NVIDIA GPUs.
#[derive(Debug, thiserror::Error)]
pub enum NvmlInitError {
    /// `libnvidia-ml.so.1` is not installed or not on the library path.
    #[error(
        "cannot load the NVIDIA management library libnvidia-ml.so.1 ({0}): this machine has \
         no NVIDIA driver, or the library is not on the loader path (LD_LIBRARY_PATH). \
         Install the NVIDIA driver, or run `poolprof-exporter --simulate 8` for synthetic GPUs"
    )]
    LibraryNotFound(String),
    /// The library loaded but the kernel driver is not running.
    #[error(
        "the NVIDIA kernel driver is not loaded (NVML: {0}): check `nvidia-smi` on this node, \
         or run `poolprof-exporter --simulate 8` for synthetic GPUs"
    )]
    DriverNotLoaded(String),
    /// The driver runs but NVML found no GPU.
    #[error(
        "NVML found no GPU on this node: check that the GPUs are visible to this process \
         (container runtime, NVIDIA_VISIBLE_DEVICES), or run `poolprof-exporter --simulate 8` \
         for synthetic GPUs"
    )]
    NoGpus,
    /// Any other failure of `nvmlInit` or of counting the devices.
    #[error(
        "NVML failed to start: {0}. Check `nvidia-smi` on this node, or run \
         `poolprof-exporter --simulate 8` for synthetic GPUs"
    )]
    Failed(String),
}

impl From<NvmlError> for NvmlInitError {
    fn from(err: NvmlError) -> Self {
        match err {
            NvmlError::LibloadingError(e) => Self::LibraryNotFound(e.to_string()),
            NvmlError::LibraryNotFound => Self::LibraryNotFound(err.to_string()),
            NvmlError::FailedToLoadSymbol(s) => {
                Self::LibraryNotFound(format!("the library lacks nvmlInit_v2: {s}"))
            }
            NvmlError::DriverNotLoaded => Self::DriverNotLoaded(err.to_string()),
            other => Self::Failed(other.to_string()),
        }
    }
}

/// Maps one failed NVML read to what collectors understand.
///
/// A missing symbol means an older driver without that entry point: to the
/// collectors that is the same as a device without the field. `Unknown` stays a
/// plain failure of this read, because NVML also uses it for transient faults of one
/// query while the rest of the device answers; only errors that mean the whole device
/// is gone become `GpuLost`.
pub fn read_error(err: NvmlError) -> ReadError {
    match err {
        NvmlError::NotSupported
        | NvmlError::FunctionNotFound
        | NvmlError::FailedToLoadSymbol(_) => ReadError::NotSupported,
        NvmlError::GpuLost | NvmlError::ResetRequired | NvmlError::IrqIssue => {
            ReadError::GpuLost(err.to_string())
        }
        other => ReadError::Failed(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_supported_and_missing_symbols_mean_absent() {
        assert_eq!(read_error(NvmlError::NotSupported), ReadError::NotSupported);
        assert_eq!(
            read_error(NvmlError::FailedToLoadSymbol("nvmlGpmSampleGet".into())),
            ReadError::NotSupported
        );
        assert_eq!(
            read_error(NvmlError::FunctionNotFound),
            ReadError::NotSupported
        );
    }

    #[test]
    fn lost_and_reset_required_mean_the_gpu_is_gone() {
        assert!(matches!(
            read_error(NvmlError::GpuLost),
            ReadError::GpuLost(m) if m.contains("fell off the bus")
        ));
        assert!(matches!(
            read_error(NvmlError::ResetRequired),
            ReadError::GpuLost(m) if m.contains("reset")
        ));
    }

    #[test]
    fn other_errors_fail_only_this_read_and_keep_the_message() {
        assert!(matches!(
            read_error(NvmlError::NoPermission),
            ReadError::Failed(m) if m.contains("permission")
        ));
        assert!(matches!(
            read_error(NvmlError::Unknown),
            ReadError::Failed(_)
        ));
    }

    #[test]
    fn every_init_error_names_simulate() {
        let errors = [
            NvmlInitError::from(NvmlError::LibraryNotFound),
            NvmlInitError::from(NvmlError::DriverNotLoaded),
            NvmlInitError::from(NvmlError::NoPermission),
            NvmlInitError::from(NvmlError::FailedToLoadSymbol("x".into())),
            NvmlInitError::NoGpus,
        ];
        for e in errors {
            assert!(e.to_string().contains("--simulate"), "{e}");
        }
    }

    #[test]
    fn init_errors_say_which_part_is_missing() {
        assert!(matches!(
            NvmlInitError::from(NvmlError::DriverNotLoaded),
            NvmlInitError::DriverNotLoaded(_)
        ));
        assert!(NvmlInitError::from(NvmlError::LibraryNotFound)
            .to_string()
            .contains("libnvidia-ml.so.1"));
        assert!(NvmlInitError::from(NvmlError::NoPermission)
            .to_string()
            .contains("permission"));
    }
}
