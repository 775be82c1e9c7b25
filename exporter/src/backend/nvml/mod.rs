//! The NVML backend: real GPUs through `libnvidia-ml.so.1`, loaded at run time
//! (nvml-wrapper), so the exporter builds and runs its tests without a driver.

mod convert;
mod device;
mod error;
mod fields;
mod gpm;
mod lists;
mod mig;
mod processes;
mod reuse;
mod xid;

pub use device::NvmlDevice;
pub use error::NvmlInitError;

use crate::backend::{Backend, Device, Reading, SystemInfo, XidEvent};
use error::read_error;
use nvml_wrapper::Nvml;
use std::sync::Arc;
use std::time::Duration;
use xid::XidWatcher;

/// GPUs read through NVML.
pub struct NvmlBackend {
    nvml: &'static Nvml,
    devices: Vec<Arc<NvmlDevice>>,
    xid: Option<XidWatcher>,
}

impl NvmlBackend {
    /// Loads NVML, opens every GPU (reading per-process utilization every
    /// `process_sample_interval`) and starts watching Xid events. Fails, naming
    /// `--simulate`, when there is no library, no driver or no GPU.
    pub fn new(process_sample_interval: Duration) -> Result<Self, NvmlInitError> {
        // Leaked on purpose: devices and samples borrow it for the life of the process.
        let nvml: &'static Nvml = Box::leak(Box::new(Nvml::init()?));
        let count = nvml.device_count()?;
        if count == 0 {
            return Err(NvmlInitError::NoGpus);
        }
        let mut devices = Vec::new();
        for index in 0..count {
            match nvml.device_by_index(index) {
                Ok(handle) => devices.push(Arc::new(NvmlDevice::new(
                    nvml,
                    handle,
                    process_sample_interval,
                ))),
                Err(e) => {
                    tracing::error!(gpu = index, error = %e, "cannot open GPU; it is not exported")
                }
            }
        }
        if devices.is_empty() {
            return Err(NvmlInitError::Failed(format!(
                "none of the {count} GPUs NVML lists could be opened"
            )));
        }
        let handles: Vec<_> = devices.iter().map(|d| d.handle()).collect();
        let xid = XidWatcher::start(nvml, &handles);
        Ok(Self { nvml, devices, xid })
    }
}

impl Backend for NvmlBackend {
    fn kind(&self) -> &'static str {
        "nvml"
    }

    fn system(&self) -> Reading<SystemInfo> {
        Ok(SystemInfo {
            driver_version: self.nvml.sys_driver_version().map_err(read_error)?,
            cuda_version: convert::cuda_version(
                self.nvml.sys_cuda_driver_version().map_err(read_error)?,
            ),
        })
    }

    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices
            .iter()
            .map(|d| Arc::clone(d) as Arc<dyn Device>)
            .collect()
    }

    fn drain_xid_events(&self) -> Vec<XidEvent> {
        self.xid.as_ref().map(XidWatcher::drain).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a driver (CI, this repository's dev machines) the error must tell
    /// the operator about `--simulate`; on a GPU node the backend must find GPUs.
    #[test]
    fn new_names_simulate_without_a_driver_or_finds_gpus() {
        match NvmlBackend::new(Duration::from_secs(10)) {
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("--simulate"), "{msg}");
                assert!(msg.contains("NVIDIA") || msg.contains("NVML"), "{msg}");
            }
            Ok(backend) => {
                assert_eq!(backend.kind(), "nvml");
                assert!(!backend.devices().is_empty());
            }
        }
    }
}
