//! A series whose steps barely remember the one before (jobs started per interval, a
//! bursty count): its last value is mostly noise. Validation can still choose naive
//! there, by ties: at origins where the series sat at its median (a count at 0), naive
//! and the median forecast alike. Off the median (a count of 2 at the end), holding the
//! last value for the whole horizon misses nearly every step; the median of the window,
//! which naive tied with, is the constant that errs least. So it is where the choice
//! holds any one level: a burst at the end opens a regime, and the median since that
//! break is the burst's.

use super::candidates::median;
use crate::analysis::periodicity::acf;

/// Lag-1 autocorrelation about the median below which a series forgets its last step:
/// on the tenants set's development seeds, GPUs held and nodes busy measured 0.99 (the
/// median; 0.96 and 0.95 at the 10th percentile, none under 0.5), jobs started 0.27
/// (0.12 to 0.47 from the 10th to the 90th percentile;
/// `docs/validation/analyzer/forecast-eval-session37.md`).
pub const MAX_LAG1: f64 = 0.5;

/// The median of `y` where `y` forgets its last step (its lag-1 autocorrelation about
/// the median is under [`MAX_LAG1`]); `None` where the last value carries over, or
/// where `y` has no spread to measure that on.
pub fn level(y: &[f64]) -> Option<f64> {
    if y.len() < 3 {
        return None;
    }
    let centre = median(y.to_vec());
    let spread = y.iter().any(|v| (v - centre).abs() > 0.0);
    (spread && acf::about(y, centre, 1) < MAX_LAG1).then_some(centre)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::scattered_counts;

    #[test]
    fn a_scattered_count_forgets_its_last_step_and_a_held_level_does_not() {
        let counts = scattered_counts(500, 1);
        assert_eq!(level(&counts), Some(0.0));
        // GPUs held by jobs of 40-120 steps: the level carries over
        let held: Vec<f64> = (0..500)
            .map(|t| [16.0, 24.0, 8.0, 40.0, 32.0][(t / 40 + t / 97) % 5])
            .collect();
        assert_eq!(level(&held), None);
        assert_eq!(level(&[5.0; 100]), None, "no spread");
        assert_eq!(level(&[1.0, 2.0]), None, "too short");
    }
}
