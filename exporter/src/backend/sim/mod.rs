//! The simulated backend: deterministic synthetic H100s whose values follow workload
//! models with known behaviour, for demos, tests and `simulate --history`.
//!
//! Every value is a pure function of (scenario, GPU, time), where time is seconds since
//! the scenario started, read from a [`SimClock`]: the wall clock for the live exporter,
//! a [`ManualClock`] for history and tests.

mod builtin;
pub mod clock;
mod device;
mod format;
pub mod h100;
mod noise;
pub mod scenario;
pub mod workload;

pub use builtin::ORDER as BUILTIN_ORDER;
pub use clock::{ManualClock, SimClock};
pub use device::SimDevice;
pub use scenario::{Scenario, ScenarioError};

use crate::backend::{Backend, Device, Reading, SystemInfo, XidEvent};
use std::sync::{Arc, Mutex};

/// The Xid NVML reports when a GPU has fallen off the bus.
pub const XID_FALLEN_OFF_BUS: u64 = 79;

/// Simulated GPUs behind the [`Backend`] seam.
#[derive(Debug)]
pub struct SimBackend {
    devices: Vec<Arc<SimDevice>>,
    clock: SimClock,
    /// Scenario time up to which Xid events were drained.
    xid_drained_until: Mutex<f64>,
}

impl SimBackend {
    /// The scenario's GPUs on the given clock.
    pub fn new(scenario: Scenario, clock: SimClock) -> Self {
        let devices = scenario
            .gpus
            .into_iter()
            .enumerate()
            .map(|(index, spec)| Arc::new(SimDevice::new(index as u32, spec, clock.clone())))
            .collect();
        Self {
            devices,
            clock,
            xid_drained_until: Mutex::new(f64::NEG_INFINITY),
        }
    }

    /// The scenario's GPUs on a live clock starting now.
    pub fn from_scenario(scenario: Scenario) -> Self {
        Self::new(scenario, SimClock::live())
    }

    /// `n` GPUs (1 to 64) with the built-in workloads round-robin in the order
    /// [`BUILTIN_ORDER`], on a live clock.
    pub fn with_gpus(n: u32) -> Result<Self, ScenarioError> {
        Ok(Self::from_scenario(Scenario::builtin(n)?))
    }

    /// The clock the GPUs read.
    pub fn clock(&self) -> &SimClock {
        &self.clock
    }

    /// The simulated devices, with their scenario specs.
    pub fn sim_devices(&self) -> &[Arc<SimDevice>] {
        &self.devices
    }
}

impl Backend for SimBackend {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn system(&self) -> Reading<SystemInfo> {
        Ok(SystemInfo {
            driver_version: "580.159.04".to_string(),
            cuda_version: "13.0".to_string(),
        })
    }

    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices
            .iter()
            .map(|d| Arc::clone(d) as Arc<dyn Device>)
            .collect()
    }

    /// A failing GPU raises Xid 79 once, at its failure time.
    fn drain_xid_events(&self) -> Vec<XidEvent> {
        let now = self.clock.now_seconds();
        let mut until = self.xid_drained_until.lock().expect("lock poisoned");
        if now < *until {
            // The manual clock was moved back: a new pass over the scenario.
            *until = f64::NEG_INFINITY;
        }
        let events = self
            .devices
            .iter()
            .filter(|d| {
                d.fail_at_seconds()
                    .is_some_and(|at| at > *until && at <= now)
            })
            .map(|d| XidEvent {
                uuid: d.cached_identity().uuid.clone(),
                xid: XID_FALLEN_OFF_BUS,
            })
            .collect();
        *until = now;
        events
    }
}

#[cfg(test)]
mod tests;
