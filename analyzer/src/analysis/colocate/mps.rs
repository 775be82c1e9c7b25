//! MPS: both clients' kernels run at once. What hurts is head-of-line blocking: a
//! launch that finds the peer's kernel filling the SMs waits for it to drain, so a
//! workload of many dependent launches starves beside one of long, full kernels
//! (measured on an H100: a bandwidth loop kept ~97%, a training job beside it ~5%).
//!
//! For X beside Y, X's wall time per unit of its work alone is
//! `T_X = (1 − d_X) + d_X · (1 + sharing · u_Y · occ_busy_Y) + L_X · r_Y · u_Y · fill_Y`,
//! its progress `s_X = 1 / T_X`, and `u_Y` is how busy Y keeps the GPU *beside X*
//! (`s_Y` times Y's stretched GPU time), where
//! `fill_Y = clamp((occ_busy_Y − threshold) / (1 − threshold), 0, 1)` is how far Y's
//! kernels fill the SMs while they run. Both sides depend on each other, so the fixed
//! point is found by iteration from the duty cycles alone, as for time-slicing: a
//! peer that is itself starved (its launches waiting behind X) holds the GPU less
//! and costs X less. Reading the peer's duty beside X rather than alone is what the
//! runs chose: on runs 2 and 3 (56 pairs) it lowered the leave-one-program-out error
//! from 0.096 to 0.078 (`docs/validation/colocation-h100.md`).
//!
//! With SM limits that add up to at most 100% the two clients hold disjoint SMs, so
//! nothing blocks, but each runs its kernels on its share only.

use super::time_slicing::memory_reason;
use super::{feasible, fixed_point, infeasible, Constants, Demand, Mode, ModePrediction, SmShare};

/// Both sides' normalized progress under MPS without SM limits.
pub fn progress(a: &Demand, b: &Demand, c: &Constants) -> (f64, f64) {
    fixed_point::solve(a, b, |x, peer, peer_busy| {
        (
            gpu_time(x, peer, peer_busy, c),
            waiting(x, peer, peer_busy, c),
        )
    })
}

/// X's GPU seconds per second of its work alone: its kernels stretch while the peer's
/// warps (busy `peer_busy` of the time) share the SMs' issue slots, caches and DRAM.
fn gpu_time(x: &Demand, peer: &Demand, peer_busy: f64, c: &Constants) -> f64 {
    x.duty * (1.0 + c.mps_sharing * peer_busy * peer.occupancy_busy)
}

/// X's seconds per second of its work alone spent with launches waiting for the
/// peer's kernels to drain from the SMs.
fn waiting(x: &Demand, peer: &Demand, peer_busy: f64, c: &Constants) -> f64 {
    x.launch_rate * peer.residual_seconds * peer_busy * fill(peer, c)
}

/// How far `x`'s kernels fill the SMs while they run, 0–1.
pub fn fill(x: &Demand, c: &Constants) -> f64 {
    let t = c.mps_fill_threshold.clamp(0.0, 0.99);
    ((x.occupancy_busy - t) / (1.0 - t)).clamp(0.0, 1.0)
}

/// How much of a workload's SM activity a limit does not need, per unit of its DRAM
/// activity while busy: memory-bound kernels keep their warps resident waiting on DRAM,
/// so fewer SMs still saturate the bandwidth. Fitted on the eight calibration programs
/// alone at 50% of the SMs (run 4: the bandwidth loop kept 1.01 of its speed, the
/// embedding lookups 0.71); a fifth fitted constant, beside [`Constants`].
pub const LIMIT_DRAM_RELIEF: f64 = 0.52;

/// Both sides' progress with SM limits `share` (percent each, adding up to ≤ 100): no
/// launch waits for the other's kernels, each runs its kernels on its share of the SMs
/// (stretched where it needs more than that), and while both run, DRAM demand beyond
/// the device's bandwidth stretches both.
pub fn progress_limited(a: &Demand, b: &Demand, share: SmShare) -> (f64, f64) {
    let one = |x: &Demand, peer: &Demand, percent: u8| {
        let need = x.sm_busy * (1.0 - LIMIT_DRAM_RELIEF * x.dram_busy).max(0.0);
        let stretch = (need / (f64::from(percent) / 100.0)).max(1.0);
        let overflow = (x.dram_busy + peer.dram_busy - 1.0).max(0.0) * peer.duty;
        1.0 / ((1.0 - x.duty) + x.duty * (stretch + overflow))
    };
    (one(a, b, share.a_percent), one(b, a, share.b_percent))
}

/// The best SM split in steps of 10%, when one beats running without limits.
fn best_limits(a: &Demand, b: &Demand, uncapped: f64) -> Option<(SmShare, f64, f64)> {
    (1..10u8)
        .map(|i| SmShare {
            a_percent: i * 10,
            b_percent: 100 - i * 10,
        })
        .map(|s| {
            let (pa, pb) = progress_limited(a, b, s);
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
    if let Some((share, la, lb)) = best_limits(a, b, uncapped) {
        reason = format!(
            "{reason}; SM limits of {}% and {}% would keep them apart (predicted {la:.2} and {lb:.2}; the limit model is rougher than the one without limits: docs/colocation.md)",
            share.a_percent, share.b_percent
        );
        prediction.sm_share = Some(share);
    }
    prediction.reason = reason;
    prediction
}
