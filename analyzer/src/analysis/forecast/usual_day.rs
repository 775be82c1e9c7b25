//! The usual day beside naive. Where validation chose to hold the last value, a cluster
//! may still follow a day that four blocks did not show clearly enough to beat naive on
//! their total: real job logs of batch clusters, whose busy hours come back daily,
//! were forecast by naive in a fifth to a quarter of their windows, where half of the
//! last value and half the median of the same hour over the last week erred 0.81-0.83
//! of naive's MAE (`docs/validation/analyzer/forecast-swf-session53.md`). On a
//! simulated cluster whose level moves with the users who join and leave, the same
//! mean errs far more than naive; there it loses to naive in validation blocks. So the
//! mean replaces naive only where it beat naive in every validation block but one odd
//! one (of four) and the last value is not a state held for hours ([`applies`]).
//! Chosen on validation's weighted total instead, it forecast the job logs better
//! still, but made a simulated cluster class (5 min, pinned regimes) lose to naive
//! (`docs/validation/analyzer/usual-day-session54.md`).

use super::candidates::{middle, same_phase, Path};
use super::pinned::trailing_run;
use super::validation::{self, Origins};

/// Days the median of the same hour looks back over: a week.
pub const USUAL_DAY_CYCLES: usize = 7;
/// The last value held for a day / `HELD_SHARE` steps or more is a state of its own (a
/// cluster pinned full or idle), not an hour of the usual day: naive stays. On the job
/// logs' development half, where the mean beat naive in every block (session 53's
/// rule), it erred 0.72 of naive's MAE after a hold under a quarter of a day and 1.17
/// after a longer one.
pub const HELD_SHARE: usize = 4;

/// Whether the usual day of `day` steps replaces a naive choice on `y`, whose
/// validation forecasts from `origins` are `naive`: its last value held under a day /
/// [`HELD_SHARE`], and the mean beat naive in most blocks
/// ([`beats_naive_in_most_blocks`]).
pub fn applies(y: &[f64], day: f64, origins: &Origins, naive: &[Path]) -> bool {
    (trailing_run(y) as f64) < day / HELD_SHARE as f64
        && beats_naive_in_most_blocks(y, day, origins, naive)
}

/// For each of `h` steps after `y`: the mean of the last value and the median of the
/// same phase of a season of `m` steps over the last [`USUAL_DAY_CYCLES`] cycles (those
/// the series holds).
pub fn forecast(y: &[f64], m: f64, h: usize) -> Vec<f64> {
    let last = y[y.len() - 1];
    (1..=h)
        .map(|j| {
            let mut same = same_phase(y, j, m, USUAL_DAY_CYCLES);
            if same.is_empty() {
                return last;
            }
            0.5 * (last + middle(&mut same))
        })
        .collect()
}

/// Whether [`forecast`] erred less than `naive` (holding the last value, validation's
/// forecasts from `origins`) in every block of two or three, and in all but one of four
/// or more.
pub fn beats_naive_in_most_blocks(y: &[f64], m: f64, origins: &Origins, naive: &[Path]) -> bool {
    let (usual, naive) = block_errors(y, m, origins, naive);
    validation::wins_most_blocks(&usual, &naive)
}

/// Validation's [`validation::block_errors`] of [`forecast`] and of `naive`, from
/// `origins` of `y`.
fn block_errors(y: &[f64], m: f64, origins: &Origins, naive: &[Path]) -> (Vec<f64>, Vec<f64>) {
    let usual = |data: &[f64], p: &mut Path| p.point = forecast(data, m, p.point.len());
    let usual = validation::adjusted(y, &origins.at, naive, &usual);
    (
        validation::block_errors(y, &origins.at, &usual),
        validation::block_errors(y, &origins.at, naive),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::Noise;

    /// Naive's validation forecasts: the value before each origin, held.
    fn naive(y: &[f64], origins: &Origins) -> Vec<Path> {
        let held = |o: usize| vec![y[o - 1]; origins.steps];
        let path = |&o: &usize| Path {
            point: held(o),
            var: vec![0.0; origins.steps],
        };
        origins.at.iter().map(path).collect()
    }

    /// The hourly series' day and validation (day-long blocks) for the rule: whether
    /// the usual day beat naive in most blocks, and whether it applies.
    fn judged(y: &[f64]) -> (bool, bool) {
        let origins = Origins::plan(y.len(), 24, 48).unwrap();
        let naive = naive(y, &origins);
        (
            beats_naive_in_most_blocks(y, 24.0, &origins, &naive),
            applies(y, 24.0, &origins, &naive),
        )
    }

    /// Hourly values for `days` days around 20 with uniform noise of ±1.5, `busy`
    /// higher in the busy hours of each day (steps 8-17 of 24).
    fn hourly(days: usize, busy: f64, seed: u64) -> Vec<f64> {
        let mut noise = Noise(seed);
        (0..days * 24)
            .map(|t| {
                let at_work = (8..18).contains(&(t % 24));
                20.0 + if at_work { busy } else { 0.0 } + 3.0 * (noise.uniform() - 0.5)
            })
            .collect()
    }

    #[test]
    fn the_usual_day_is_half_the_last_value_and_half_the_weeks_median() {
        // 8 days of 4 steps: the same phase 1, 2, ..., 7 days back (the eighth is not
        // read), last value 10
        let mut y = Vec::new();
        for d in 0..8 {
            y.extend([100.0 + d as f64, 0.0, 0.0, 0.0]);
        }
        *y.last_mut().unwrap() = 10.0;
        let f = forecast(&y, 4.0, 5);
        // the next step is phase 0: median of 101..107 is 104
        assert_eq!(f[0], 0.5 * (10.0 + 104.0));
        assert_eq!(f[1], 0.5 * (10.0 + 0.0));
        assert_eq!(f[4], f[0]);
    }

    #[test]
    fn a_day_that_validation_saw_in_every_block_is_used() {
        let y = hourly(14, 6.0, 7);
        assert!(judged(&y).0);
    }

    #[test]
    fn a_day_that_validation_saw_but_on_one_holiday_is_used() {
        // the busy hours of the test above, but none two days ago: in that block,
        // holding the evening's value beat the busy hours the usual day expected
        let mut y = hourly(14, 6.0, 7);
        y[12 * 24 + 8..12 * 24 + 18]
            .iter_mut()
            .for_each(|v| *v -= 6.0);
        let origins = Origins::plan(y.len(), 24, 48).unwrap();
        let (usual, naive) = block_errors(&y, 24.0, &origins, &naive(&y, &origins));
        let lost: Vec<usize> = (0..naive.len()).filter(|&k| usual[k] >= naive[k]).collect();
        assert_eq!(lost, vec![2], "the holiday's block alone is lost");
        assert_eq!(judged(&y), (true, true));
    }

    #[test]
    fn a_level_that_moved_away_from_last_weeks_is_left_to_naive() {
        // the busy hours of the test above, and the level stepped from 20 to 60 three
        // days ago: last week's hours pull the mean back towards 20 in the blocks
        // after the step
        let mut y = hourly(14, 6.0, 7);
        y[11 * 24..].iter_mut().for_each(|v| *v += 40.0);
        assert!(!judged(&y).0);
    }

    #[test]
    fn a_value_held_for_hours_is_left_to_naive() {
        // the busy hours of the test above, the last six hours held at one value
        let mut y = hourly(14, 6.0, 7);
        let n = y.len();
        y[n - 6..].fill(20.0);
        assert!(judged(&y).0);
        assert!(!judged(&y).1);
        y[n - 5] = 21.0;
        assert!(judged(&y).1);
    }
}
