//! Time-slicing: the driver gives the GPU to one context at a time, so a workload's
//! GPU time stretches while its peer is busy, and each launch that finds the peer's
//! kernel running waits for part of it.
//!
//! For workload X beside Y: X's GPU time per unit of work is
//! `g_X = d_X · (1 + sharing · u_Y) + launch_wait · L_X · r_Y · u_Y`, its progress
//! `s_X = 1 / ((1 − d_X) + g_X)`, and `u_X = min(1, s_X · g_X)` is how busy X keeps
//! the GPU beside Y. Both sides depend on each other; the fixed point is found by
//! iteration from the duty cycles alone.

use super::{feasible, fixed_point, gib, infeasible, Constants, Demand, Mode, ModePrediction};

/// Both sides' normalized progress under time-slicing.
pub fn progress(a: &Demand, b: &Demand, c: &Constants) -> (f64, f64) {
    fixed_point::solve(a, b, |x, peer, peer_busy| {
        (gpu_time(x, peer, peer_busy, c), 0.0)
    })
}

/// X's GPU seconds per second of its work alone, beside a peer busy `peer_busy` of the time.
fn gpu_time(x: &Demand, peer: &Demand, peer_busy: f64, c: &Constants) -> f64 {
    x.duty * (1.0 + c.ts_sharing * peer_busy)
        + c.ts_launch_wait * x.launch_rate * peer.residual_seconds * peer_busy
}

/// The time-slicing prediction, or why it cannot run.
pub fn predict(a: &Demand, b: &Demand, c: &Constants, fits: bool, capacity: f64) -> ModePrediction {
    if !fits {
        return infeasible(Mode::TimeSlicing, memory_reason(a, b, capacity));
    }
    let (pa, pb) = progress(a, b, c);
    let reason = format!(
        "duty cycles {:.0}% and {:.0}%: {}",
        a.duty * 100.0,
        b.duty * 100.0,
        if a.duty + b.duty <= 0.8 {
            "the GPU is mostly idle between their kernels, so turns rarely collide"
        } else if a.duty.min(b.duty) >= 0.6 {
            "both keep the GPU busy, so each gets about half of it"
        } else {
            "the busier one holds the GPU while the other waits for its turn"
        }
    );
    feasible(Mode::TimeSlicing, pa, pb, reason)
}

/// Why two workloads cannot share the GPU's memory.
pub(crate) fn memory_reason(a: &Demand, b: &Demand, capacity: f64) -> String {
    format!(
        "memory does not fit: {} + {} is more than {:.0}% of the GPU's {}",
        gib(a.memory_bytes),
        gib(b.memory_bytes),
        super::MEMORY_HEADROOM * 100.0,
        gib(capacity)
    )
}
