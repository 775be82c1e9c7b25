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

/// The prediction for a pair, every mode, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairPrediction {
    /// The workload whose name sorts first.
    pub workload_a: String,
    /// The other workload.
    pub workload_b: String,
    /// One prediction per mode, in [`Mode::ALL`] order.
    pub modes: Vec<ModePrediction>,
    /// The mode to use; None when no mode is worth it.
    pub recommended_mode: Option<Mode>,
    /// The verdict for the recommended mode (`Avoid` when none).
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

/// The model's fitted constants (see `docs/colocation.md` for how each was fitted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constants {}

impl Default for Constants {
    fn default() -> Self {
        Constants {}
    }
}

/// Predicts every mode for `a` and `b` (profiles taken alone) and recommends one.
/// The result names the pair in sorted order whatever order they are given in.
pub fn predict(
    a: &crate::analysis::profile::WorkloadProfile,
    b: &crate::analysis::profile::WorkloadProfile,
    constants: &Constants,
) -> PairPrediction {
    let _ = (a, b, constants);
    todo!("the model lands in this session")
}
