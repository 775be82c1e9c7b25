//! From per-mode predictions to one recommendation: the best-scoring mode that can
//! run, preferring the simpler one when scores are close, with a verdict and a reason.

use super::{Mode, ModePrediction, PairPrediction, Recommendation};

/// Predicted progress each side must keep for "good": with the model's error on
/// unseen programs (MAE under 0.08), a side predicted at 0.75 stays above 0.5.
pub const GOOD_SIDE: f64 = 0.75;
/// Predicted score below which sharing is not worth it: 0.5 is taking turns.
pub const CAUTION_SCORE: f64 = 0.6;
/// Predicted progress under which one side counts as starved.
pub const STARVED_SIDE: f64 = 0.3;
/// Scores this close count as equal, and the simpler mode wins.
const TIE: f64 = 0.02;

/// How much setting a mode up costs an operator: time-slicing needs nothing, MPS a
/// daemon, MIG a reconfigured GPU.
fn effort(mode: Mode) -> u8 {
    match mode {
        Mode::TimeSlicing => 0,
        Mode::Mps => 1,
        Mode::Mig => 2,
    }
}

/// The verdict for one mode's prediction.
pub fn verdict(p: &ModePrediction) -> Recommendation {
    let worst = p.progress_a.min(p.progress_b);
    if !p.feasible || p.score < CAUTION_SCORE || worst < STARVED_SIDE {
        Recommendation::Avoid
    } else if worst >= GOOD_SIDE {
        Recommendation::Good
    } else {
        Recommendation::Caution
    }
}

/// Picks the mode for the pair `a`, `b` from `modes`.
pub fn choose(
    workload_a: String,
    workload_b: String,
    modes: Vec<ModePrediction>,
) -> PairPrediction {
    let top = modes
        .iter()
        .filter(|m| m.feasible)
        .map(|m| m.score)
        .fold(f64::NEG_INFINITY, f64::max);
    let best = modes
        .iter()
        .filter(|m| m.feasible && m.score + TIE >= top)
        .min_by_key(|m| effort(m.mode));
    let (recommended_mode, recommendation, reason) = match best {
        None => (
            None,
            Recommendation::Avoid,
            format!(
                "no mode can run them together: {}",
                modes.first().map_or("", |m| m.reason.as_str())
            ),
        ),
        Some(m) => {
            let v = verdict(m);
            let why = format!(
                "{}: predicted progress {:.2} and {:.2} (score {:.2}); {}",
                m.mode.label(),
                m.progress_a,
                m.progress_b,
                m.score,
                m.reason
            );
            match v {
                Recommendation::Avoid => (
                    Some(m.mode),
                    v,
                    format!("not worth sharing; the best mode is {why}"),
                ),
                _ => (Some(m.mode), v, why),
            }
        }
    };
    PairPrediction {
        workload_a,
        workload_b,
        modes,
        recommended_mode,
        recommendation,
        reason,
    }
}
