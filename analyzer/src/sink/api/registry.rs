//! Hand-given profiles (`POST /register`), kept in a JSON file that survives restarts.
//! Every change rewrites the file atomically: a temporary file in the same folder,
//! synced, then renamed over the old one, so a crash leaves the old or the new file.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::analysis::classify::Boundedness;
use crate::analysis::profile::{Coverage, ProfileSignal as S, Window, WorkloadProfile};

/// The most profiles a registry holds.
pub const MAX_REGISTERED: usize = 10_000;
/// The largest registry file read, bytes.
const MAX_FILE_BYTES: u64 = 32 << 20;

/// A profile as the earlier pooling profiler's clients register it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// The workload's id.
    pub workload_id: String,
    /// `compute`, `memory` or `mixed` (our class labels are accepted too).
    pub kernel_type: String,
    /// FLOP per DRAM byte.
    #[serde(default)]
    pub arithmetic_intensity: Option<f64>,
    /// Free text, at most 1024 characters.
    #[serde(default)]
    pub description: Option<String>,
    /// poolprof's own: the fraction of time the GPU runs its kernels (default 0.9: a busy job).
    #[serde(default)]
    pub duty_cycle: Option<f64>,
    /// poolprof's own: the GPU memory it needs, bytes.
    #[serde(default)]
    pub memory_bytes: Option<f64>,
    /// When it was registered, unix seconds (set by the server).
    #[serde(default)]
    pub registered_at: f64,
}

/// Why a registration or the registry file was refused.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The registration is invalid; the message says which field and why.
    #[error("{0}")]
    Invalid(String),
    /// The file cannot be read, parsed or written.
    #[error("registry file {path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
}

impl Registration {
    /// The class the registration declares.
    pub fn class(&self) -> Result<Boundedness, RegistryError> {
        match self.kernel_type.as_str() {
            "compute" | "compute_bound" | "compute-bound" => Ok(Boundedness::ComputeBound),
            "memory" | "memory_bound" | "memory-bound" => Ok(Boundedness::MemoryBound),
            "mixed" => Ok(Boundedness::Mixed),
            "latency_bound" | "latency" => Ok(Boundedness::LatencyBound),
            "idle" => Ok(Boundedness::Idle),
            other => Err(RegistryError::Invalid(format!(
                "kernel_type {other:?}: use compute, memory or mixed (or compute_bound, memory_bound, latency_bound, idle)"
            ))),
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), RegistryError> {
        super::reply::check_id(&self.workload_id).map_err(RegistryError::Invalid)?;
        self.class()?;
        let bad = |m: String| Err(RegistryError::Invalid(m));
        if let Some(ai) = self.arithmetic_intensity {
            if !ai.is_finite() || ai < 0.0 {
                return bad(format!(
                    "arithmetic_intensity {ai}: must be a finite number >= 0"
                ));
            }
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() > 1024)
        {
            return bad("description: at most 1024 characters".into());
        }
        if let Some(d) = self.duty_cycle {
            if !(0.0..=1.0).contains(&d) {
                return bad(format!("duty_cycle {d}: must be 0 to 1"));
            }
        }
        if let Some(m) = self.memory_bytes {
            if !m.is_finite() || m < 0.0 {
                return bad(format!("memory_bytes {m}: must be a finite number >= 0"));
            }
        }
        Ok(())
    }

    /// The profile the model reads for it: a declared class becomes typical GPM
    /// activity of that class at the declared duty cycle (documented in docs/api.md).
    pub fn profile(&self) -> WorkloadProfile {
        let duty = self.duty_cycle.unwrap_or(0.9);
        let (tensor, dram, occupancy) = match self.class() {
            Ok(Boundedness::ComputeBound) => (0.5, 0.2, 0.4),
            Ok(Boundedness::MemoryBound) => (0.02, 0.8, 0.7),
            Ok(Boundedness::LatencyBound) => (0.02, 0.05, 0.05),
            Ok(Boundedness::Idle) => (0.0, 0.0, 0.0),
            _ => (0.3, 0.5, 0.5),
        };
        let w = Window {
            start: self.registered_at,
            end: self.registered_at,
        };
        let mut p = WorkloadProfile::new(self.workload_id.clone(), Coverage::Declared)
            .with(S::Busy, duty, w)
            .with(S::SmActive, duty * 0.9, w)
            .with(S::SmOccupancy, duty * 0.9 * occupancy, w)
            .with(S::TensorActive, duty * tensor, w)
            .with(S::DramActive, duty * dram, w);
        if let Some(m) = self.memory_bytes {
            p = p.with(S::MemoryBytes, m, w);
        }
        p
    }
}

/// The registered profiles and the file that keeps them.
#[derive(Debug)]
pub struct Registry {
    path: PathBuf,
    entries: Mutex<BTreeMap<String, Registration>>,
}

impl Registry {
    /// Opens `path`, creating nothing until the first registration; a file that
    /// exists must parse (it is never overwritten when it does not).
    pub fn open(path: &Path) -> Result<Registry, RegistryError> {
        let err = |message: String| RegistryError::File {
            path: path.to_path_buf(),
            message,
        };
        let entries = match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(err(format!("cannot read it: {e}"))),
            Ok(m) if m.len() > MAX_FILE_BYTES => {
                return Err(err(format!(
                    "larger than {MAX_FILE_BYTES} bytes; is this the right file?"
                )))
            }
            Ok(_) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| err(format!("cannot read it: {e}")))?;
                let list: Vec<Registration> = serde_json::from_str(&text).map_err(|e| {
                    err(format!(
                        "not a list of registrations ({e}); fix or move it away, then restart"
                    ))
                })?;
                list.into_iter()
                    .map(|r| (r.workload_id.clone(), r))
                    .collect()
            }
        };
        Ok(Registry {
            path: path.to_path_buf(),
            entries: Mutex::new(entries),
        })
    }

    /// Adds or replaces a registration and writes the file before answering.
    pub fn register(&self, r: Registration) -> Result<(), RegistryError> {
        r.validate()?;
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_REGISTERED && !entries.contains_key(&r.workload_id) {
            return Err(RegistryError::Invalid(format!(
                "the registry holds {MAX_REGISTERED} profiles, its limit"
            )));
        }
        let mut next = entries.clone();
        next.insert(r.workload_id.clone(), r);
        self.write(&next)?;
        *entries = next;
        Ok(())
    }

    /// The registration for `id`.
    pub fn get(&self, id: &str) -> Option<Registration> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Every registration, by id.
    pub fn all(&self) -> Vec<Registration> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn write(&self, entries: &BTreeMap<String, Registration>) -> Result<(), RegistryError> {
        let err = |message: String| RegistryError::File {
            path: self.path.clone(),
            message,
        };
        let list: Vec<&Registration> = entries.values().collect();
        let text =
            serde_json::to_vec_pretty(&list).map_err(|e| err(format!("cannot encode: {e}")))?;
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tmp = dir.join(format!(
            ".{}.tmp",
            self.path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("registry")
        ));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.path)?;
            std::fs::File::open(dir)?.sync_all()
        };
        write().map_err(|e| {
            err(format!(
                "cannot write it: {e}; check the folder exists and is writable"
            ))
        })
    }
}
