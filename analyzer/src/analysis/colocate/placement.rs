//! A workload against a GPU's free capacity: the GPU's current load (whoever runs there,
//! summed) is the peer it would meet, and the sides keep their roles whatever the names.

use serde::{Deserialize, Serialize};

use super::{predict, Constants, Mode, ModePrediction, Recommendation};
use crate::analysis::profile::WorkloadProfile;

/// The prediction for moving `workload` onto GPU `uuid` beside what runs there now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The workload to place.
    pub workload: String,
    /// The GPU it would join.
    pub uuid: String,
    /// Per mode: `progress_a` is the workload's, `progress_b` what runs there now keeps.
    pub modes: Vec<ModePrediction>,
    /// The mode with the best prediction; None when none can run.
    pub recommended_mode: Option<Mode>,
    /// The verdict for it.
    pub recommendation: Recommendation,
    /// Why, in words.
    pub reason: String,
}

/// Predicts `workload` beside `load`, the profile [`crate::analysis::profile::build::gpu_loads`]
/// made of a GPU (named by its uuid).
pub fn place(
    workload: &WorkloadProfile,
    load: &WorkloadProfile,
    constants: &Constants,
) -> Placement {
    let p = predict(workload, load, constants);
    let swapped = p.workload_a != workload.workload;
    let modes = p
        .modes
        .into_iter()
        .map(|m| if swapped { m.swapped() } else { m })
        .collect();
    Placement {
        workload: workload.workload.clone(),
        uuid: load.workload.clone(),
        modes,
        recommended_mode: p.recommended_mode,
        recommendation: p.recommendation,
        reason: p.reason,
    }
}
