//! A changed shape: a new release, a moved batch window or a migrated workload gives the
//! day a new profile for good. A seasonal median over cycles from both sides of the
//! change forecasts neither shape; over the cycles since the change it forecasts the
//! new one with less noise than the last cycle alone (seasonal-naive). Where the cycles
//! after a boundary are [`CONTRAST`] times nearer each other than each is to the
//! nearest of the [`LOOKBACK`] cycles before it, the shape changed there. The nearest,
//! not the mean: a weekend after five weekdays is like the weekend a week before it,
//! and a series with a weekly cycle is no new shape every Saturday.
//!
//! On the second evaluation set's structural breaks (a day's profile replaced one to
//! fourteen days before the end), the seasonal median had mixed the old and new shapes
//! wherever the change was two to five days old, and validation chose seasonal-naive
//! instead (`docs/validation/analyzer/forecast-eval-session22.md`).

use crate::analysis::grid::buckets;

/// Cycles after a boundary, at most: the seasonal median's
/// ([`super::candidates::MEDIAN_CYCLES`]).
pub const MAX_AFTER: usize = super::candidates::MEDIAN_CYCLES;
/// Cycles before a boundary searched for one like each cycle after it: a week of days.
pub const LOOKBACK: usize = 7;
/// Fewest cycles before a boundary: fewer say nothing of how the cycles usually differ.
pub const MIN_BEFORE: usize = 3;
/// How many times nearer each other the cycles on either side of a boundary must be
/// than the cycles after it are to their nearest before it.
pub const CONTRAST: f64 = 2.0;

/// Whole cycles of `p` steps at the end of `y` since its shape last changed, if it did
/// within [`MAX_AFTER`] cycles: the boundary with the highest contrast above
/// [`CONTRAST`].
pub fn cycles_since_change(y: &[f64], p: usize) -> Option<usize> {
    if p < 2 {
        return None;
    }
    let count = (y.len() / p).min(MAX_AFTER + LOOKBACK);
    // the latest cycle first
    let cycles: Vec<Vec<f64>> = (0..count)
        .map(|i| binned(&y[y.len() - (i + 1) * p..y.len() - i * p]))
        .collect();
    let d = Distances::of(&cycles);
    (1..=MAX_AFTER)
        .filter(|&after| after + MIN_BEFORE <= count)
        .filter_map(|after| Some((after, d.contrast(after)?)))
        .filter(|&(_, c)| c > CONTRAST)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(after, _)| after)
}

/// Most points a cycle is compared at: a longer one (a day of minutes) is compared by
/// the means of as many buckets ([`buckets`]), which keeps its shape and costs a
/// fifteenth.
pub const MAX_POINTS: usize = 96;

/// `cycle` as the means of at most [`MAX_POINTS`] nearly equal buckets.
pub(super) fn binned(cycle: &[f64]) -> Vec<f64> {
    buckets(cycle.len(), MAX_POINTS)
        .map(|range| cycle[range.clone()].iter().sum::<f64>() / range.len() as f64)
        .collect()
}

/// Distances between every two cycles (latest first), symmetric.
struct Distances(Vec<Vec<f64>>);

impl Distances {
    fn of(cycles: &[Vec<f64>]) -> Distances {
        let k = cycles.len();
        let swings: Vec<f64> = cycles.iter().map(|c| swing(c)).collect();
        let mut d = vec![vec![0.0; k]; k];
        for i in 0..k {
            for j in i + 1..k {
                let v = distance(&cycles[i], &cycles[j], 0.5 * (swings[i] + swings[j]));
                d[i][j] = v;
                d[j][i] = v;
            }
        }
        Distances(d)
    }

    /// For the boundary `after` cycles from the end: the mean distance of each cycle
    /// after it to its nearest before it, over the mean distance between two cycles
    /// on the same side ([`MIN_BEFORE`] cycles before it); `None` where the cycles on
    /// each side are identical.
    fn contrast(&self, after: usize) -> Option<f64> {
        let k = self.0.len();
        let nearest = |i: usize| {
            (after..k)
                .map(|j| self.0[i][j])
                .fold(f64::INFINITY, f64::min)
        };
        let across = (0..after).map(nearest).sum::<f64>() / after as f64;
        let sides = [0..after, after..after + MIN_BEFORE];
        let within: Vec<f64> = sides
            .iter()
            .flat_map(|side| {
                side.clone()
                    .flat_map(move |i| (i + 1..side.end).map(move |j| self.0[i][j]))
            })
            .collect();
        let within = within.iter().sum::<f64>() / within.len() as f64;
        (within > 0.0).then(|| across / within)
    }
}

/// Mean absolute deviation of `cycle` from its mean.
pub(super) fn swing(cycle: &[f64]) -> f64 {
    let n = cycle.len() as f64;
    let mean = cycle.iter().sum::<f64>() / n;
    cycle.iter().map(|v| (v - mean).abs()).sum::<f64>() / n
}

/// Mean absolute difference of `a` and `b`, step by step.
pub(super) fn mean_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64
}

/// [`mean_abs_diff`] of `a` and `b`, in units of `swing` (their mean [`swing`]): a
/// level shift is a change as much as a new shape.
fn distance(a: &[f64], b: &[f64], swing: f64) -> f64 {
    let diff = mean_abs_diff(a, b);
    if swing > 0.0 {
        diff / swing
    } else if diff > 0.0 {
        f64::INFINITY
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `days` days of 24 steps: `old` for all but the last `new_days`, which follow
    /// `new`; a little noise from a fixed sequence.
    fn series(days: usize, new_days: usize, old: fn(f64) -> f64, new: fn(f64) -> f64) -> Vec<f64> {
        let mut state = 7u64;
        (0..days * 24)
            .map(|t| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let noise = ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 4.0;
                let hour = (t % 24) as f64;
                let shape = if t >= (days - new_days) * 24 {
                    new
                } else {
                    old
                };
                100.0 + shape(hour) + noise
            })
            .collect()
    }

    fn morning(h: f64) -> f64 {
        40.0 * (-(h - 9.0).powi(2) / 8.0).exp()
    }

    fn evening(h: f64) -> f64 {
        40.0 * (-(h - 20.0).powi(2) / 8.0).exp()
    }

    #[test]
    fn the_cycles_since_a_new_shape_are_counted() {
        for new_days in 1..=MAX_AFTER {
            let y = series(21, new_days, morning, evening);
            assert_eq!(
                cycles_since_change(&y, 24),
                Some(new_days),
                "{new_days} new days"
            );
        }
    }

    #[test]
    fn an_unchanged_shape_or_an_old_change_is_no_change() {
        assert_eq!(
            cycles_since_change(&series(21, 0, morning, morning), 24),
            None
        );
        let old = series(21, MAX_AFTER + 3, morning, evening);
        assert_eq!(
            cycles_since_change(&old, 24),
            None,
            "older than the median's cycles"
        );
    }

    #[test]
    fn a_weekend_like_the_one_a_week_before_is_no_change() {
        // five morning days and two evening days a week, ending on the weekend
        let mut y = series(21, 0, morning, morning);
        for (t, v) in y.iter_mut().enumerate() {
            if (t / 24) % 7 >= 5 {
                *v += evening((t % 24) as f64) - morning((t % 24) as f64);
            }
        }
        assert_eq!(cycles_since_change(&y, 24), None);
        // the same series without its weeks before the last: the weekend is new
        let short = &y[y.len() - 7 * 24..];
        assert_eq!(cycles_since_change(short, 24), Some(2));
    }

    #[test]
    fn constant_and_short_series_have_no_change() {
        assert_eq!(cycles_since_change(&[5.0; 240], 24), None);
        assert_eq!(cycles_since_change(&[5.0; 30], 24), None);
        assert_eq!(cycles_since_change(&[1.0, 2.0, 3.0], 1), None);
    }
}
