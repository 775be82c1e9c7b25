//! Rolling-origin validation: every candidate forecasts the most recent stretches of
//! the series from the data before them, and the one with the lowest error is used.
//!
//! Origins are `ORIGINS` consecutive blocks of `hv` steps at the end of the data
//! (hv = the horizon, at most a quarter of the data). The error is the mean absolute
//! error over all origins and steps, the most recent origins weighted most; ties go to the earlier (simpler) candidate, so a
//! model is never chosen over seasonal-naive unless it did strictly better. The mean
//! of the three best is a candidate too (forecast combination), chosen only when it
//! beats the best single model. The chosen model's standardised validation errors
//! calibrate its prediction intervals.

use super::candidates::{Candidate, Path};
use super::nested;

/// Validation origins.
pub const ORIGINS: usize = 4;
/// Models averaged by the combination.
pub const COMBINED: usize = 3;
/// Fewest standardised errors beyond a band's quantile for the band to be narrowed
/// below the model's own; with fewer, the analytic width is only ever widened. Four
/// origins of a 48 h horizon leave about ten beyond the 95% quantile, from four
/// stretches, too few to show a tail that real loads have (the 95% band covered 91.0%
/// of PJM's hourly loads with them, 93.2% without); the 80% band needs 100 errors.
pub const MIN_TAIL: f64 = 20.0;

/// Where to validate: prefix lengths (oldest first) and the steps forecast from each.
#[derive(Debug, Clone, PartialEq)]
pub struct Origins {
    /// Prefix lengths of the series.
    pub at: Vec<usize>,
    /// Steps forecast from each origin.
    pub steps: usize,
}

impl Origins {
    /// Origins for a series of `n` points and a horizon of `h`, each leaving at least
    /// `min_train` points before it; `None` when not even one fits.
    pub fn plan(n: usize, h: usize, min_train: usize) -> Option<Origins> {
        let steps = h.min(n / 4).max(1);
        let at: Vec<usize> = (1..=ORIGINS)
            .rev()
            .filter_map(|k| n.checked_sub(k * steps))
            .filter(|&o| o >= min_train)
            .collect();
        (!at.is_empty()).then_some(Origins { at, steps })
    }
}

/// The chosen forecaster and the errors it made in validation.
pub struct Choice {
    /// Indices of the candidates averaged (one for a single model).
    pub members: Vec<usize>,
    /// Validation MAE of the choice, and of every candidate.
    pub mae: f64,
    /// Validation MAE of each candidate, in candidate order.
    pub candidate_mae: Vec<f64>,
    /// Validation errors divided by the predicted standard deviation.
    pub standardised: Vec<f64>,
    /// The choice's forecasts from each origin.
    pub paths: Vec<Path>,
}

/// Validates `candidates` on `y` at `origins`; `post` adjusts every forecast path
/// (bounds) before it is scored. The intervals are calibrated on the errors against
/// `truth` (`y` as observed, where `y` had its holidays made ordinary: the forecasts
/// are made as after ordinary days, but the days ahead may hold a holiday too).
pub fn choose(
    y: &[f64],
    truth: &[f64],
    candidates: &[Box<dyn Candidate>],
    origins: &Origins,
    post: &dyn Fn(&mut Path),
) -> Choice {
    let scored: Vec<Vec<Path>> = candidates
        .iter()
        .map(|c| {
            let mut paths = c.backtest(y, &origins.at, origins.steps);
            paths.iter_mut().for_each(post);
            paths
        })
        .collect();
    let all: Vec<&[Path]> = scored.iter().map(|p| &p[..]).collect();
    let pick = pick(y, &origins.at, &all, None);
    Choice {
        standardised: nested::standardised(y, truth, &origins.at, &all, &pick.paths),
        members: pick.members,
        mae: pick.mae,
        candidate_mae: pick.candidate_mae,
        paths: pick.paths,
    }
}

/// The candidates a forecast is made of, and how they did in validation.
pub(super) struct Pick {
    /// Indices of the candidates averaged (one for a single model).
    pub members: Vec<usize>,
    /// Their validation error.
    pub mae: f64,
    /// Their (mean) forecasts from each origin.
    pub paths: Vec<Path>,
    /// The validation error of every candidate, in candidate order.
    pub candidate_mae: Vec<f64>,
}

/// From every candidate's validation `paths` (one per origin): the candidate with the
/// lowest [`mae_without`] origin `held`, or the best [`COMBINED`] that forecast unlike
/// each other, where their mean errs less.
pub(super) fn pick(y: &[f64], origins: &[usize], paths: &[&[Path]], held: Option<usize>) -> Pick {
    let candidate_mae: Vec<f64> = paths
        .iter()
        .map(|p| mae_without(y, origins, p, held))
        .collect();
    let mut order: Vec<usize> = (0..paths.len()).collect();
    // Stable: among equal errors the earlier candidate stays first.
    order.sort_by(|a, b| candidate_mae[*a].total_cmp(&candidate_mae[*b]));
    let best = order[0];
    let top = distinct_best(&order, paths);
    if top.len() == COMBINED {
        let combined = average(top.iter().map(|&i| paths[i]));
        let mae = mae_without(y, origins, &combined, held);
        if mae < candidate_mae[best] {
            return Pick {
                members: top.to_vec(),
                mae,
                paths: combined,
                candidate_mae,
            };
        }
    }
    Pick {
        members: vec![best],
        mae: candidate_mae[best],
        paths: paths[best].to_vec(),
        candidate_mae,
    }
}

/// The first [`COMBINED`] of `order` whose validation `paths` differ: candidates that
/// forecast alike (a seasonal median that found no change of shape, and the plain one)
/// count once in a combination, where a copy adds weight but no view.
fn distinct_best(order: &[usize], paths: &[&[Path]]) -> Vec<usize> {
    let mut top: Vec<usize> = Vec::with_capacity(COMBINED);
    for &i in order {
        if top.len() == COMBINED {
            break;
        }
        if top.iter().all(|&j| !same_points(paths[i], paths[j])) {
            top.push(i);
        }
    }
    top
}

/// Whether two candidates' validation paths forecast the same points.
fn same_points(a: &[Path], b: &[Path]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.point == q.point)
}

/// Element-wise mean of several candidates' paths (point and variance).
pub fn average<'a>(sets: impl Iterator<Item = &'a [Path]>) -> Vec<Path> {
    let sets: Vec<&[Path]> = sets.collect();
    let k = sets.len() as f64;
    (0..sets[0].len())
        .map(|o| {
            let len = sets[0][o].point.len();
            let mean = |f: &dyn Fn(&Path) -> &Vec<f64>| -> Vec<f64> {
                (0..len)
                    .map(|j| sets.iter().map(|s| f(&s[o])[j]).sum::<f64>() / k)
                    .collect()
            };
            Path {
                point: mean(&|p| &p.point),
                var: mean(&|p| &p.var),
            }
        })
        .collect()
}

/// Mean absolute error, origin `k` (oldest 0) weighted `2^k`: the most recent
/// stretch says most about the next (a job that just went idle), about half the whole.
pub(super) fn mae(y: &[f64], origins: &[usize], paths: &[Path]) -> f64 {
    mae_without(y, origins, paths, None)
}

/// [`mae`] with origin `held` (if any) left out.
pub(super) fn mae_without(
    y: &[f64],
    origins: &[usize],
    paths: &[Path],
    held: Option<usize>,
) -> f64 {
    let (mut sum, mut weights) = (0.0, 0.0);
    for (k, (&o, p)) in origins.iter().zip(paths).enumerate() {
        if Some(k) == held {
            continue;
        }
        let w = (1u64 << k.min(30)) as f64;
        for (j, f) in p.point.iter().enumerate() {
            if let Some(v) = y.get(o + j) {
                sum += w * (v - f).abs();
                weights += w;
            }
        }
    }
    if weights == 0.0 || sum.is_nan() {
        f64::INFINITY
    } else {
        sum / weights
    }
}

pub(super) fn standardise(y: &[f64], origins: &[usize], paths: &[Path]) -> Vec<f64> {
    let mut out = Vec::new();
    for (&o, p) in origins.iter().zip(paths) {
        for (j, (f, v)) in p.point.iter().zip(&p.var).enumerate() {
            if let Some(actual) = y.get(o + j) {
                let sd = v.max(0.0).sqrt();
                let e = actual - f;
                out.push(if sd > 0.0 {
                    (e / sd).abs()
                } else if e == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                });
            }
        }
    }
    out
}

/// How much to widen (or narrow) the analytic band of `coverage` so that it would have
/// covered that share of the standardised validation errors; narrowed only with
/// [`MIN_TAIL`] of them beyond the band.
pub fn calibration(standardised: &[f64], coverage: f64, z: f64) -> f64 {
    if standardised.is_empty() {
        return 1.0;
    }
    let mut s = standardised.to_vec();
    let at = ((s.len() as f64 * coverage).ceil() as usize).clamp(1, s.len()) - 1;
    let q = *s.select_nth_unstable_by(at, f64::total_cmp).1;
    let factor = if q.is_finite() { q / z } else { f64::MAX };
    if (s.len() as f64 * (1.0 - coverage)) < MIN_TAIL {
        factor.max(1.0)
    } else {
        factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_combination_takes_no_candidate_twice() {
        // one origin of four steps; truth 0. Two candidates forecast +1 alike, one -1.2
        // and one +5: the mean of +1, +1 and -1.2 (error 0.27) beats the best single
        // model (1.0), but a copy is no second view; +1, -1.2 and +5 (1.6) does not.
        let y = vec![0.0; 8];
        let at = |v: f64| {
            vec![Path {
                point: vec![v; 4],
                var: vec![1.0; 4],
            }]
        };
        let paths = [at(1.0), at(1.0), at(-1.2), at(5.0)];
        let all: Vec<&[Path]> = paths.iter().map(|p| &p[..]).collect();
        let chosen = pick(&y, &[4], &all, None);
        assert_eq!(chosen.members, vec![0], "the best single model");
        // with three unlike ones the combination is chosen as before
        let paths = [at(1.0), at(0.9), at(-1.2), at(5.0)];
        let all: Vec<&[Path]> = paths.iter().map(|p| &p[..]).collect();
        assert_eq!(pick(&y, &[4], &all, None).members, vec![1, 0, 2]);
    }

    #[test]
    fn origins_are_consecutive_blocks_at_the_end() {
        let o = Origins::plan(1000, 48, 100).unwrap();
        assert_eq!(o.at, vec![808, 856, 904, 952]);
        assert_eq!(o.steps, 48);
        let short = Origins::plan(40, 48, 20).unwrap();
        assert_eq!(short.steps, 10);
        assert_eq!(short.at, vec![20, 30]);
        assert_eq!(Origins::plan(10, 5, 20), None);
    }

    #[test]
    fn calibration_matches_the_errors_quantile() {
        let s: Vec<f64> = (1..=1000).map(|i| i as f64 / 500.0).collect();
        // 95% of the errors lie within 1.9: the band at z = 1.96 narrows slightly.
        let f = calibration(&s, 0.95, 1.96);
        assert!((f - 1.9 / 1.96).abs() < 1e-9, "{f}");
        assert_eq!(
            calibration(&s[..10], 0.95, 1.96),
            1.0,
            "few errors never narrow"
        );
    }

    #[test]
    fn a_band_narrows_only_where_enough_errors_lie_beyond_it() {
        // 200 errors, as four origins of a 48 h horizon give, all within 1: 80% of them
        // lie within 0.8 and 40 beyond, so the 80% band narrows to them; 10 lie beyond
        // the 95% quantile, too few to show the tail, and the 95% band keeps the
        // model's width
        let s: Vec<f64> = (1..=200).map(|i| i as f64 / 200.0).collect();
        let f80 = calibration(&s, 0.80, 1.2816);
        assert!((f80 - 0.8 / 1.2816).abs() < 1e-9, "{f80}");
        assert_eq!(calibration(&s, 0.95, 1.96), 1.0);
        // with 1,000 such errors, 50 lie beyond it: the 95% band narrows too
        let s: Vec<f64> = (1..=1000).map(|i| i as f64 / 1000.0).collect();
        assert!((calibration(&s, 0.95, 1.96) - 0.95 / 1.96).abs() < 1e-9);
    }
}
