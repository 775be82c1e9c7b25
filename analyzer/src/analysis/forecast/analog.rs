//! What followed the series' own past levels like today's. A cluster's share of GPUs
//! held, a day ahead, is worth what the days it sat at this level went on to: pinned at
//! 100% it mostly stayed there, at an unusual low the jobs came back. The median of
//! what came `j` steps after the past values nearest the last one is that forecast at
//! step `j`, the value that minimises the absolute error over those analogues, with no
//! model of how the level moves (a reversion's half-life, a trend) to get wrong.

use crate::analysis::periodicity::prepare::median_in_place;

/// Share of the past values, the nearest to the last, whose futures make a step's
/// forecast: a tenth of two weeks at 5 min is 400 analogues, enough for a median that
/// a single job does not move, and near enough in level to mean something.
pub const SHARE: usize = 10;

/// Fewest analogues a step's median needs.
pub const MIN_ANALOGUES: usize = 5;

/// For `j` in `1..=h`, the median of the values `j` steps after the [`SHARE`]th of the
/// values of `y` nearest its last one (the most recent first where equally near) whose
/// next `h` values are all known and finite, each nearer to the last one than `reach`:
/// at a level the series rarely visited, the values beyond it would be its usual ones
/// and their futures its usual course, not what followed this level. The same
/// analogues make every step, so the path does not jump where some run out. `None`
/// with fewer than [`MIN_ANALOGUES`].
pub fn analogues(y: &[f64], h: usize, reach: f64) -> Option<Vec<f64>> {
    let n = y.len();
    let last = *y.last().filter(|v| v.is_finite())?;
    // where the next value that is not finite lies, from each step on: a value and
    // its horizon are known where that is past the horizon (one pass, not one per value)
    let mut next_unknown = vec![n; n + 1];
    for t in (0..n).rev() {
        next_unknown[t] = if y[t].is_finite() {
            next_unknown[t + 1]
        } else {
            t
        };
    }
    let known = |t: usize| next_unknown[t] > t + h;
    let mut nearest: Vec<usize> = (0..n.saturating_sub(h + 1))
        .filter(|&t| (y[t] - last).abs() < reach && known(t))
        .collect();
    nearest.sort_by(|&a, &b| {
        (y[a] - last)
            .abs()
            .total_cmp(&(y[b] - last).abs())
            .then(b.cmp(&a))
    });
    nearest.truncate((n.saturating_sub(h) / SHARE).max(MIN_ANALOGUES));
    if nearest.len() < MIN_ANALOGUES {
        return None;
    }
    let mut futures = vec![0.0; nearest.len()];
    let path = (1..=h)
        .map(|j| {
            for (f, &t) in futures.iter_mut().zip(&nearest) {
                *f = y[t + j];
            }
            median_in_place(&mut futures)
        })
        .collect();
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_that_stayed_is_forecast_to_stay() {
        // pinned at 100 for most of the history, with short dips to 40 that came
        // back: from 100, what followed 100 was mostly 100
        let y: Vec<f64> = (0..2000)
            .map(|t| if t % 200 < 20 { 40.0 } else { 100.0 })
            .collect();
        let f = analogues(&y, 50, f64::INFINITY).unwrap();
        assert!(f.iter().all(|v| *v == 100.0), "{f:?}");
    }

    #[test]
    fn an_unusual_low_goes_where_it_went_before() {
        // a share that sat at 60 and fell to 10 for 30 steps now and then, each time
        // back at 60; now at 10 again
        let mut y: Vec<f64> = (0..2000)
            .map(|t| if t % 250 < 30 { 10.0 } else { 60.0 })
            .collect();
        y.extend([10.0; 3]);
        let f = analogues(&y, 60, 25.0).unwrap();
        assert_eq!(f[0], 10.0, "next to the low, the low");
        assert!(f[30..].iter().all(|v| *v == 60.0), "{f:?}");
    }

    #[test]
    fn the_most_recent_of_equally_near_values_are_taken() {
        // the level 5 was followed by 0 long ago and by 9 lately: the recent ones
        let mut y = Vec::new();
        for _ in 0..30 {
            y.extend([5.0, 0.0]);
        }
        for _ in 0..30 {
            y.extend([5.0, 9.0]);
        }
        y.extend(vec![1.0; 400]);
        y.push(5.0);
        assert_eq!(analogues(&y, 1, f64::INFINITY), Some(vec![9.0]));
    }

    #[test]
    fn a_level_rarely_visited_has_only_the_analogues_within_reach() {
        // at 20 after days at 60, once before for 60 steps that went back to 60: a
        // tenth of the history reaches far past those 60 steps, into the 60s
        let mut y = vec![60.0; 1000];
        y.extend([20.0; 60]);
        y.extend([60.0; 1000]);
        y.extend([20.0; 48]);
        let near = analogues(&y, 100, 20.0).unwrap();
        assert_eq!(near[0], 20.0);
        assert_eq!(near[99], 60.0, "that stretch ended");
        let far = analogues(&y, 100, f64::INFINITY).unwrap();
        assert_eq!(far[0], 60.0, "the usual course");
        // within reach only the last 48 steps, none with a horizon's future
        let mut once = vec![60.0; 1000];
        once.extend([20.0; 48]);
        assert_eq!(analogues(&once, 100, 20.0), None);
    }

    #[test]
    fn too_few_analogues_give_none() {
        assert_eq!(analogues(&[1.0, 2.0, 3.0], 2, f64::INFINITY), None);
        // a horizon longer than the series
        assert_eq!(analogues(&[1.0; 10], 50, f64::INFINITY), None);
        assert_eq!(analogues(&[], 3, 1.0), None);
        let gaps = [1.0, f64::NAN, 2.0, f64::NAN, 2.0, 1.0, 2.0, f64::NAN, 2.0];
        assert_eq!(analogues(&gaps, 1, f64::INFINITY), None);
    }

    #[test]
    fn values_that_are_not_finite_are_never_analogues_nor_futures() {
        let mut y: Vec<f64> = (0..100).map(|t| (t % 4) as f64).collect();
        y[50] = f64::INFINITY;
        y[51] = f64::NAN;
        let f = analogues(&y, 8, f64::INFINITY).unwrap();
        assert!(f.iter().all(|v| (0.0..=3.0).contains(v)), "{f:?}");
        let mut ends = y.clone();
        ends.push(f64::NAN);
        assert_eq!(analogues(&ends, 2, f64::INFINITY), None);
    }
}
