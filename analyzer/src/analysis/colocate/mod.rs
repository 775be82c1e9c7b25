//! Co-location: may workloads A and B share a GPU, how, and what will it cost each?
//!
//! For each sharing mode the model predicts each side's normalized progress (its
//! throughput beside the peer over its throughput alone); the pair's score is their
//! mean (DESIGN.md, "Co-location score"). The recommendation picks the mode with the
//! best score that fits, and says why.

use serde::{Deserialize, Serialize};

/// How two workloads share one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Two processes, no MPS: the driver time-slices their contexts.
    TimeSlicing,
    /// The MPS server runs both clients' kernels at once, optionally with SM caps.
    Mps,
    /// Each workload in its own MIG instance.
    Mig,
}

impl Mode {
    /// Every mode, in the order they are reported.
    pub const ALL: [Mode; 3] = [Mode::TimeSlicing, Mode::Mps, Mode::Mig];

    /// The `mode` label value.
    pub fn label(self) -> &'static str {
        match self {
            Mode::TimeSlicing => "time_slicing",
            Mode::Mps => "mps",
            Mode::Mig => "mig",
        }
    }
}

/// The verdict on a pair, as the earlier pooling profiler's clients expect it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recommendation {
    /// Both keep most of their speed.
    Good,
    /// Sharing helps overall but one side pays noticeably.
    Caution,
    /// Do not share: it fits badly, or one side would be starved.
    Avoid,
}

impl Recommendation {
    /// The `recommendation` label value.
    pub fn label(self) -> &'static str {
        match self {
            Recommendation::Good => "good",
            Recommendation::Caution => "caution",
            Recommendation::Avoid => "avoid",
        }
    }
}

/// MPS SM limits per side (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`), percent 1–100.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SmShare {
    /// Workload A's percentage.
    pub a_percent: u8,
    /// Workload B's percentage.
    pub b_percent: u8,
}

/// MIG profiles per side, e.g. `3g.40gb` and `4g.40gb`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigPlan {
    /// Workload A's profile.
    pub a_profile: String,
    /// Workload B's profile.
    pub b_profile: String,
}

/// The prediction for one sharing mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModePrediction {
    /// The mode.
    pub mode: Mode,
    /// Whether the pair can run this way at all (memory fits, a MIG layout exists).
    pub feasible: bool,
    /// A's throughput beside B over alone, 0–1 (0 when infeasible).
    pub progress_a: f64,
    /// B's throughput beside A over alone, 0–1 (0 when infeasible).
    pub progress_b: f64,
    /// (progress_a + progress_b) / 2.
    pub score: f64,
    /// MPS: the SM limits the model chose (None: uncapped is best, or not MPS).
    pub sm_share: Option<SmShare>,
    /// MIG: the instance profiles that fit each side.
    pub mig: Option<MigPlan>,
    /// Why, in words.
    pub reason: String,
}

impl ModePrediction {
    /// The same prediction with A and B exchanged: progress, SM share and MIG profiles.
    pub fn swapped(mut self) -> ModePrediction {
        std::mem::swap(&mut self.progress_a, &mut self.progress_b);
        if let Some(s) = self.sm_share.as_mut() {
            std::mem::swap(&mut s.a_percent, &mut s.b_percent);
        }
        if let Some(plan) = self.mig.as_mut() {
            std::mem::swap(&mut plan.a_profile, &mut plan.b_profile);
        }
        self
    }
}

/// The prediction for a pair, every mode, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairPrediction {
    /// The workload whose name sorts first.
    pub workload_a: String,
    /// The other workload.
    pub workload_b: String,
    /// One prediction per mode, in [`Mode::ALL`] order.
    pub modes: Vec<ModePrediction>,
    /// The mode with the best prediction (the simpler one when close); None when no
    /// mode can run the pair. Read it with `recommendation`: it may be `Avoid`.
    pub recommended_mode: Option<Mode>,
    /// The verdict for the recommended mode (`Avoid` when none can run).
    pub recommendation: Recommendation,
    /// Why, in words.
    pub reason: String,
}

impl PairPrediction {
    /// The prediction for `mode`.
    pub fn mode(&self, mode: Mode) -> Option<&ModePrediction> {
        self.modes.iter().find(|m| m.mode == mode)
    }

    /// The recommended mode's prediction.
    pub fn best(&self) -> Option<&ModePrediction> {
        self.recommended_mode.and_then(|m| self.mode(m))
    }
}

pub mod calibrate;
pub mod constants;
pub mod demand;
pub mod evaluate;
pub mod fixed_point;
pub mod mig;
pub mod mps;
pub mod placement;
pub mod recommend;
pub mod time_slicing;

pub use constants::Constants;
pub use demand::Demand;
pub use placement::{place, Placement};

use crate::analysis::profile::WorkloadProfile;

/// Predicts every mode for `a` and `b` (profiles taken alone) and recommends one.
/// The result names the pair in sorted order whatever order they are given in.
pub fn predict(a: &WorkloadProfile, b: &WorkloadProfile, constants: &Constants) -> PairPrediction {
    let (a, b) = if a.workload <= b.workload {
        (a, b)
    } else {
        (b, a)
    };
    let (da, db) = (Demand::of(a), Demand::of(b));
    let capacity = gpu_memory(a, b);
    let fits = da.memory_bytes + db.memory_bytes <= capacity * MEMORY_HEADROOM;
    let modes = vec![
        time_slicing::predict(&da, &db, constants, fits, capacity),
        mps::predict(&da, &db, constants, fits, capacity),
        mig::predict(&da, &db, a.gpu_name.as_deref().or(b.gpu_name.as_deref())),
    ];
    recommend::choose(a.workload.clone(), b.workload.clone(), modes)
}

/// Share of the GPU's memory two workloads may fill together: the CUDA contexts, the
/// allocator's slack and fragmentation need the rest.
pub const MEMORY_HEADROOM: f64 = 0.95;

/// The GPU's memory: what the profiles saw, else an H100's 80 GiB.
fn gpu_memory(a: &WorkloadProfile, b: &WorkloadProfile) -> f64 {
    match (a.gpu_memory_bytes, b.gpu_memory_bytes) {
        (Some(x), Some(y)) => x.min(y),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => 80.0 * GIB,
    }
}

/// Bytes in a GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Bytes as GiB with one decimal, for reasons.
pub(crate) fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / GIB)
}

/// A mode that cannot run: memory does not fit, or no layout exists.
pub(crate) fn infeasible(mode: Mode, reason: String) -> ModePrediction {
    ModePrediction {
        mode,
        feasible: false,
        progress_a: 0.0,
        progress_b: 0.0,
        score: 0.0,
        sm_share: None,
        mig: None,
        reason,
    }
}

/// A feasible mode's prediction with its score.
pub(crate) fn feasible(
    mode: Mode,
    progress_a: f64,
    progress_b: f64,
    reason: String,
) -> ModePrediction {
    let (pa, pb) = (progress_a.clamp(0.0, 1.0), progress_b.clamp(0.0, 1.0));
    ModePrediction {
        mode,
        feasible: true,
        progress_a: pa,
        progress_b: pb,
        score: (pa + pb) / 2.0,
        sm_share: None,
        mig: None,
        reason,
    }
}

#[cfg(test)]
mod tests;
