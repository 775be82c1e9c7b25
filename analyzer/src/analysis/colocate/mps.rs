//! MPS: both clients' kernels run at once. What hurts is head-of-line blocking: a
//! launch that finds the peer's kernel filling the SMs waits for it to drain, so a
//! workload of many dependent launches starves beside one of long, full kernels
//! (measured on an H100: a bandwidth loop kept ~97%, a training job beside it ~5%).
//!
//! For X beside Y: `s_X = 1 / (1 + L_X · r_Y · d_Y · fill_Y + sharing · d_X · d_Y · occ_Y)`
//! where `fill_Y = clamp((occ_busy_Y − threshold) / (1 − threshold), 0, 1)` is how far
//! Y's kernels fill the SMs while they run. With SM limits that add up to at most 100%
//! the two clients hold disjoint SMs, so nothing blocks, but each runs its kernels on
//! its share only (a model of the limits, not yet measured on hardware: the predicted
//! progress is always without limits; the limits come as advice beside it).

use super::time_slicing::memory_reason;
use super::{feasible, infeasible, Constants, Demand, Mode, ModePrediction, SmShare};

/// Both sides' normalized progress under MPS without SM limits.
pub fn progress(a: &Demand, b: &Demand, c: &Constants) -> (f64, f64) {
    (side(a, b, c), side(b, a, c))
}

fn side(x: &Demand, peer: &Demand, c: &Constants) -> f64 {
    let blocking = x.launch_rate * peer.residual_seconds * peer.duty * fill(peer, c);
    1.0 / (1.0 + blocking + sharing(x, peer, c))
}

/// How far `x`'s kernels fill the SMs while they run, 0–1.
pub fn fill(x: &Demand, c: &Constants) -> f64 {
    let t = c.mps_fill_threshold.clamp(0.0, 0.99);
    ((x.occupancy_busy - t) / (1.0 - t)).clamp(0.0, 1.0)
}

fn sharing(x: &Demand, peer: &Demand, c: &Constants) -> f64 {
    c.mps_sharing * x.duty * peer.duty * peer.occupancy
}

/// Both sides' progress with SM limits `share` (percent each, adding up to ≤ 100).
pub fn progress_limited(a: &Demand, b: &Demand, share: SmShare, c: &Constants) -> (f64, f64) {
    let one = |x: &Demand, peer: &Demand, percent: u8| {
        let stretch = (x.sm_busy / (f64::from(percent) / 100.0)).max(1.0);
        1.0 / ((1.0 - x.duty) + x.duty * stretch + sharing(x, peer, c))
    };
    (one(a, b, share.a_percent), one(b, a, share.b_percent))
}

/// The best SM split in steps of 10%, when one beats running without limits.
fn best_limits(
    a: &Demand,
    b: &Demand,
    c: &Constants,
    uncapped: f64,
) -> Option<(SmShare, f64, f64)> {
    (1..10u8)
        .map(|i| SmShare {
            a_percent: i * 10,
            b_percent: 100 - i * 10,
        })
        .map(|s| {
            let (pa, pb) = progress_limited(a, b, s, c);
            (s, pa, pb)
        })
        .filter(|(_, pa, pb)| (pa + pb) / 2.0 > uncapped + 0.02)
        .max_by(|x, y| (x.1 + x.2).total_cmp(&(y.1 + y.2)))
}

/// The MPS prediction without SM limits (what was validated on hardware), with the
/// SM limits the model would set when they help, or why it cannot run.
pub fn predict(a: &Demand, b: &Demand, c: &Constants, fits: bool, capacity: f64) -> ModePrediction {
    if !fits {
        return infeasible(Mode::Mps, memory_reason(a, b, capacity));
    }
    let (pa, pb) = progress(a, b, c);
    let (fa, fb) = (fill(a, c), fill(b, c));
    let mut reason = if fa.max(fb) > 0.5 && (pa - pb).abs() > 0.3 {
        format!(
            "the {} side's kernels fill the SMs ({:.0}% occupancy while busy) and the other's launches wait behind them",
            if fa > fb { "first" } else { "second" },
            100.0 * if fa > fb { a.occupancy_busy } else { b.occupancy_busy }
        )
    } else if pa.min(pb) > 0.85 {
        "their kernels run side by side with room on the SMs".to_string()
    } else {
        "their kernels run side by side but compete for SMs and memory bandwidth".to_string()
    };
    let uncapped = (pa + pb) / 2.0;
    let mut prediction = feasible(Mode::Mps, pa, pb, String::new());
    if let Some((share, la, lb)) = best_limits(a, b, c, uncapped) {
        reason = format!(
            "{reason}; SM limits of {}% and {}% would keep them apart (predicted {la:.2} and {lb:.2}; a model of the limits, not yet measured)",
            share.a_percent, share.b_percent
        );
        prediction.sm_share = Some(share);
    }
    prediction.reason = reason;
    prediction
}
