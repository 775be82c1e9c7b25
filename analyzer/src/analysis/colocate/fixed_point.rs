//! Both sides of a pair solved together: each side's progress depends on how busy the
//! peer keeps the GPU beside it, which depends on the peer's own progress. Iterated
//! from the duty cycles alone until neither side moves.

use super::Demand;

const ITERATIONS: usize = 200;

/// Both sides' normalized progress. `side(x, peer, peer_busy)` gives X's seconds per
/// second of its work alone beside a peer busy `peer_busy` of the time, as (seconds
/// on the GPU, seconds waiting off it); X's wall time is `(1 − d_X)` plus both, and
/// how busy X keeps the GPU is its progress times its GPU seconds.
pub fn solve(
    a: &Demand,
    b: &Demand,
    side: impl Fn(&Demand, &Demand, f64) -> (f64, f64),
) -> (f64, f64) {
    let (mut ua, mut ub) = (a.duty, b.duty);
    let (mut sa, mut sb) = (1.0, 1.0);
    for _ in 0..ITERATIONS {
        let ((ga, wa), (gb, wb)) = (side(a, b, ub), side(b, a, ua));
        let (na, nb) = (
            1.0 / ((1.0 - a.duty) + ga + wa),
            1.0 / ((1.0 - b.duty) + gb + wb),
        );
        let settled = (na - sa).abs() < 1e-9 && (nb - sb).abs() < 1e-9;
        (sa, sb) = (na, nb);
        (ua, ub) = ((sa * ga).min(1.0), (sb * gb).min(1.0));
        if settled {
            break;
        }
    }
    (sa, sb)
}
