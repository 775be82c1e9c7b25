//! A validated scenario: which simulated GPUs exist and what runs on each. Built from a
//! TOML file ([`Scenario::from_file`], format in `docs/scenario.md`) or from the built-in
//! round-robin of workloads ([`Scenario::builtin`], `--simulate N`).

use super::h100::MigProfile;
use super::workload::Load;
use std::path::Path;

/// The most GPUs one scenario may simulate (a large node has 8–16; 64 bounds the work).
pub const MAX_GPUS: usize = 64;

/// Why a scenario could not be built. Every message names the file (or flag) and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{origin}: cannot read the scenario file: {message}")]
    Read {
        /// The file.
        origin: String,
        /// The operating system's reason.
        message: String,
    },
    /// The text is not TOML of the expected shape (the message carries line and column).
    #[error("{origin}: {message}")]
    Parse {
        /// The file.
        origin: String,
        /// What the parser said.
        message: String,
    },
    /// A value is out of range or does not fit with the others.
    #[error("{origin}: {field}: {message}")]
    Invalid {
        /// The file, or the flag for built-in scenarios.
        origin: String,
        /// The field's path, e.g. `gpus[2].period_seconds`.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// The simulated GPUs, in index order.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// One entry per GPU; the position is the GPU's index.
    pub gpus: Vec<GpuSpec>,
}

/// One simulated GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSpec {
    /// What the GPU does.
    pub mode: GpuMode,
    /// Seed of the GPU's deterministic noise and bursts.
    pub seed: u64,
}

/// How a GPU is used.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuMode {
    /// One workload on the whole GPU.
    Whole(Tenant),
    /// A workload on a GPU that stops answering during a window of time.
    Failing {
        /// What runs while the GPU works.
        tenant: Tenant,
        /// Scenario second at which every read starts returning "GPU lost".
        fail_at_seconds: f64,
        /// Scenario second at which the GPU answers again; never when `None`.
        recover_at_seconds: Option<f64>,
    },
    /// MIG mode on, with these GPU instances.
    Mig(Vec<MigInstanceSpec>),
}

/// A workload with its memory and processes, on a GPU or a MIG instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Tenant {
    /// The activity model.
    pub load: Load,
    /// Device memory the workload holds.
    pub memory_used_bytes: u64,
    /// Its compute processes.
    pub processes: Vec<ProcessSpec>,
}

/// One simulated compute process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    /// Host pid.
    pub pid: u32,
    /// Process name, e.g. `python`.
    pub name: String,
    /// The `workload` label.
    pub workload: String,
    /// Memory it holds; `None` shares the tenant's memory evenly.
    pub memory_bytes: Option<u64>,
}

/// One MIG GPU instance.
#[derive(Debug, Clone, PartialEq)]
pub struct MigInstanceSpec {
    /// GPU instance id (`gpu_instance` label), numbered from 1 in file order.
    pub gpu_instance_id: u32,
    /// Its profile.
    pub profile: MigProfile,
    /// What runs in it.
    pub tenant: Tenant,
}

impl GpuSpec {
    /// The scenario-file kind: `training`, `inference`, `idle`, `memory_bound`,
    /// `failing` or `mig`.
    pub fn kind(&self) -> &'static str {
        match &self.mode {
            GpuMode::Whole(tenant) => tenant.load.kind(),
            GpuMode::Failing { .. } => "failing",
            GpuMode::Mig(_) => "mig",
        }
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
            origin: origin.clone(),
            message: format!("{e} (check the path given to --scenario)"),
        })?;
        Self::from_toml(&text, &origin)
    }

    /// Parses and validates scenario TOML; `origin` names the source in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        super::format::parse(text, origin)
    }

    /// `n` GPUs running the built-in workloads round-robin: training, inference, idle,
    /// memory_bound, failing, mig (so 6 covers all of them).
    pub fn builtin(n: u32) -> Result<Scenario, ScenarioError> {
        super::builtin::scenario(n)
    }
}
