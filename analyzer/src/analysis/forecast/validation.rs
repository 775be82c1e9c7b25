//! Rolling-origin validation: every candidate forecasts the most recent stretches of
//! the series from the data before them, and the one with the lowest error is used.
//!
//! Origins are `ORIGINS` consecutive blocks of `hv` steps at the end of the data
//! (hv = the horizon, at most a quarter of the data). The error is the mean absolute
//! error over all origins and steps, the most recent origins weighted most; ties go to the earlier (simpler) candidate, so a
//! model is never chosen over seasonal-naive unless it did strictly better. The mean
//! of the three best is a candidate too (forecast combination), chosen where it beats
//! the best single model, or where all three model a season (seasonal-naive aside),
//! it errs at most [`SEASONAL_SLACK`] times the best, and choices made so would have
//! forecast held-out origins better. The chosen model's standardised validation errors
//! calibrate its prediction intervals.

use super::candidates::{Candidate, Path};
use super::nested;

/// Validation origins.
pub const ORIGINS: usize = 4;
/// Models averaged by the combination.
pub const COMBINED: usize = 3;
/// How much more than the best single model a mean of three seasonal models may err in
/// validation and still be used. Four origins are few: the best of twenty candidates
/// there is partly the luckiest, and models of one seasonal series that validate about
/// as well err apart, so their mean forecasts real hourly loads better than the winner
/// alone. Not for models without a season (the mean of an idle series' median and its
/// last value is a level that neither sees), nor for seasonal-naive, which copies the
/// last cycle with any glitch in it that validation never saw.
pub const SEASONAL_SLACK: f64 = 1.15;
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

/// One candidate's validation forecasts and what kind of model made them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Backtest<'a> {
    /// The forecast from each origin.
    pub paths: &'a [Path],
    /// Whether the model carries a season.
    pub seasonal: bool,
    /// Whether it is a baseline (naive, seasonal-naive).
    pub baseline: bool,
}

impl<'a> Backtest<'a> {
    /// The validation forecasts of `candidate`, from `paths`.
    pub fn of(candidate: &dyn Candidate, paths: &'a [Path]) -> Self {
        Backtest {
            paths,
            seasonal: candidate.period().is_some(),
            baseline: candidate.is_baseline(),
        }
    }

    /// Forecasts by a model without a season that is no baseline.
    #[cfg(test)]
    pub fn other(paths: &'a [Path]) -> Self {
        Backtest {
            paths,
            seasonal: false,
            baseline: false,
        }
    }
}

/// A candidate (no baseline) whose validation forecasts are given, one per origin, with
/// the season it reports.
#[cfg(test)]
pub(super) struct Given(pub Vec<Path>, pub Option<f64>);

#[cfg(test)]
impl Candidate for Given {
    fn name(&self) -> String {
        "given".into()
    }
    fn period(&self) -> Option<f64> {
        self.1
    }
    fn forecast(&self, _: &[f64], _: usize) -> Path {
        self.0[0].clone()
    }
    fn backtest(&self, _: &[f64], _: &[usize], _: usize) -> Vec<Path> {
        self.0.clone()
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
    /// The forecast from each origin of the choice made on the other origins (none
    /// with a single origin): validation without the luck of having won there.
    pub held_out: Vec<Path>,
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
    let all: Vec<Backtest> = candidates
        .iter()
        .zip(&scored)
        .map(|(c, p)| Backtest::of(c.as_ref(), p))
        .collect();
    let pick = pick(y, &origins.at, &all, None);
    let held = nested::held_out(y, &origins.at, &all);
    let slack = pick.by_slack && slack_helps(y, &origins.at, &held, &all);
    let pick = if slack { pick } else { pick.strict(&all) };
    let held_out = nested::paths(&held, &all, slack);
    Choice {
        standardised: nested::standardised(truth, &origins.at, &held_out, &pick.paths),
        members: pick.members,
        mae: pick.mae,
        candidate_mae: pick.candidate_mae,
        paths: pick.paths,
        held_out,
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
    /// The best single candidate.
    pub single: usize,
    /// Whether the mean was chosen only for [`SEASONAL_SLACK`]: without it, `single`.
    pub by_slack: bool,
}

impl Pick {
    /// The forecast from origin `k`: without the slack, the best single model's where
    /// the mean was chosen only for it.
    pub fn path<'a>(&'a self, k: usize, slack: bool, tests: &[Backtest<'a>]) -> &'a Path {
        if self.by_slack && !slack {
            &tests[self.single].paths[k]
        } else {
            &self.paths[k]
        }
    }

    /// The choice as it is without the slack.
    fn strict(self, tests: &[Backtest]) -> Pick {
        if !self.by_slack {
            return self;
        }
        Pick {
            members: vec![self.single],
            mae: self.candidate_mae[self.single],
            paths: tests[self.single].paths.to_vec(),
            by_slack: false,
            ..self
        }
    }
}

/// Whether the choices made on all origins but one (`held`, one per origin) forecast
/// the held-out origins better with [`SEASONAL_SLACK`] than without it. Where large
/// errors that every model shares (a change none foresaw) dominate the validation
/// error, the mean and the best model look alike, but the origins without them show
/// which one was right.
fn slack_helps(y: &[f64], origins: &[usize], held: &[Pick], tests: &[Backtest]) -> bool {
    let held_out = |slack: bool| mae(y, origins, &nested::paths(held, tests, slack));
    !held.is_empty() && held_out(true) < held_out(false)
}

/// From every candidate's validation forecasts (one path per origin): the candidate
/// with the lowest [`mae_without`] origin `held`, or the best [`COMBINED`] that
/// forecast unlike each other, where their mean errs less or, for seasonal models,
/// not much more ([`seasonal_enough`]).
pub(super) fn pick(y: &[f64], origins: &[usize], tests: &[Backtest], held: Option<usize>) -> Pick {
    let candidate_mae: Vec<f64> = tests
        .iter()
        .map(|t| mae_without(y, origins, t.paths, held))
        .collect();
    let mut order: Vec<usize> = (0..tests.len()).collect();
    // Stable: among equal errors the earlier candidate stays first.
    order.sort_by(|a, b| candidate_mae[*a].total_cmp(&candidate_mae[*b]));
    let best = order[0];
    let top = distinct_best(&order, tests);
    if top.len() == COMBINED {
        let combined = average(top.iter().map(|&i| tests[i].paths));
        let mae = mae_without(y, origins, &combined, held);
        let better = mae < candidate_mae[best];
        if better || seasonal_enough(mae, &top, tests, &candidate_mae) {
            return Pick {
                members: top.to_vec(),
                mae,
                paths: combined,
                candidate_mae,
                single: best,
                by_slack: !better,
            };
        }
    }
    Pick {
        members: vec![best],
        mae: candidate_mae[best],
        paths: tests[best].paths.to_vec(),
        candidate_mae,
        single: best,
        by_slack: false,
    }
}

/// Whether `top` are seasonal models other than the baselines whose mean, erring `mae`
/// in validation, is within [`SEASONAL_SLACK`] times the best single model's error. A
/// baseline outside `top` errs at least as much as each member, so the mean never lost
/// to it.
fn seasonal_enough(mae: f64, top: &[usize], tests: &[Backtest], candidate_mae: &[f64]) -> bool {
    let best = candidate_mae[top[0]]; // `top` is in order of error
    top.iter().all(|&i| tests[i].seasonal && !tests[i].baseline) && mae < SEASONAL_SLACK * best
}

/// The first [`COMBINED`] of `order` whose validation `paths` differ: candidates that
/// forecast alike (a seasonal median that found no change of shape, and the plain one)
/// count once in a combination, where a copy adds weight but no view.
fn distinct_best(order: &[usize], tests: &[Backtest]) -> Vec<usize> {
    let mut top: Vec<usize> = Vec::with_capacity(COMBINED);
    for &i in order {
        if top.len() == COMBINED {
            break;
        }
        if top
            .iter()
            .all(|&j| !same_points(tests[i].paths, tests[j].paths))
        {
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

/// `paths` (one from each of `origins` of `y`), each adjusted by `adjust` given the
/// data before its origin: what an adjustment of the choice would have forecast there.
pub(super) fn adjusted(
    y: &[f64],
    origins: &[usize],
    paths: &[Path],
    adjust: &dyn Fn(&[f64], &mut Path),
) -> Vec<Path> {
    origins
        .iter()
        .zip(paths)
        .map(|(&o, p)| {
            let mut p = p.clone();
            adjust(&y[..o], &mut p);
            p
        })
        .collect()
}

/// Whether `adjust` ([`adjusted`]) errs no more at `origins` of `y` than `paths` as they
/// are: a rule applied after the choice (a snap to the floor) is no model that
/// validation chose, and must earn its place as one would.
pub(super) fn adjustment_holds(
    y: &[f64],
    origins: &Origins,
    paths: &[Path],
    adjust: &dyn Fn(&[f64], &mut Path),
) -> bool {
    let adjusted = adjusted(y, &origins.at, paths, adjust);
    mae(y, &origins.at, &adjusted) <= mae(y, &origins.at, paths)
}

/// The absolute errors of each of `paths` against `y` from its origin, summed: one
/// total a block.
pub(super) fn block_errors(y: &[f64], origins: &[usize], paths: &[Path]) -> Vec<f64> {
    origins
        .iter()
        .zip(paths)
        .map(|(&o, p)| {
            p.point
                .iter()
                .zip(&y[o..])
                .map(|(f, v)| (v - f).abs())
                .sum()
        })
        .collect()
}

/// Whether a rule erred less than the plain forecasts block by block (`rule` and
/// `plain`, [`block_errors`] of the same origins): in every block of two or three and
/// in all but one of four or more. Its gain must not rest on one lucky stretch of a
/// total ([`adjustment_holds`]), nor fall to one odd day (a holiday, a large job's
/// start).
pub(super) fn wins_most_blocks(rule: &[f64], plain: &[f64]) -> bool {
    let lost = rule.iter().zip(plain).filter(|(r, p)| r >= p).count();
    let spared = usize::from(plain.len() >= 4);
    plain.len() >= 2 && lost <= spared
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

    /// A forecast of `v` for `steps` steps, with unit variance.
    fn constant(v: f64, steps: usize) -> Path {
        Path {
            point: vec![v; steps],
            var: vec![1.0; steps],
        }
    }

    #[test]
    fn a_combination_takes_no_candidate_twice() {
        // one origin of four steps; truth 0. Two candidates forecast +1 alike, one -1.2
        // and one +5: the mean of +1, +1 and -1.2 (error 0.27) beats the best single
        // model (1.0), but a copy is no second view; +1, -1.2 and +5 (1.6) does not.
        let y = vec![0.0; 8];
        let at = |v: f64| vec![constant(v, 4)];
        let paths = [at(1.0), at(1.0), at(-1.2), at(5.0)];
        let all: Vec<Backtest> = paths.iter().map(|p| Backtest::other(p)).collect();
        let chosen = pick(&y, &[4], &all, None);
        assert_eq!(chosen.members, vec![0], "the best single model");
        // with three unlike ones the combination is chosen as before
        let paths = [at(1.0), at(0.9), at(-1.2), at(5.0)];
        let all: Vec<Backtest> = paths.iter().map(|p| Backtest::other(p)).collect();
        assert_eq!(pick(&y, &[4], &all, None).members, vec![1, 0, 2]);
    }

    #[test]
    fn three_seasonal_models_near_the_best_are_averaged_but_not_with_a_baseline() {
        // truth 0, one origin of four steps; every model errs on the same side, so the
        // mean of the best three errs more than the best alone (1.0)
        let y = vec![0.0; 8];
        let at = |v: f64| vec![constant(v, 4)];
        let members = |errors: [f64; 4], seasonal: bool, baseline: [bool; 4]| {
            let paths: Vec<Vec<Path>> = errors.iter().map(|&e| at(e)).collect();
            let tests: Vec<Backtest> = paths
                .iter()
                .zip(baseline)
                .map(|(p, baseline)| Backtest {
                    paths: p,
                    seasonal,
                    baseline,
                })
                .collect();
            pick(&y, &[4], &tests, None).members
        };
        // seasonal models at 1.0, 1.05 and 1.1 (mean 1.05, within 15%); naive at 3
        let naive_last = [false, false, false, true];
        assert_eq!(
            members([1.0, 1.05, 1.1, 3.0], true, naive_last),
            vec![0, 1, 2]
        );
        // the same errors from models without a season: the best alone
        assert_eq!(members([1.0, 1.05, 1.1, 3.0], false, naive_last), vec![0]);
        // seasonal-naive among the three: the best alone
        let snaive_second = [false, true, false, false];
        assert_eq!(members([1.0, 1.04, 1.1, 3.0], true, snaive_second), vec![0]);
        // farther apart (mean 1.2): the best alone
        assert_eq!(members([1.0, 1.2, 1.4, 3.0], true, naive_last), vec![0]);
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

    /// The members chosen among seasonal models erring by the given amounts at three
    /// origins of two steps (weighted 1, 2, 4) on a series of zeros.
    fn chosen(errors: [[f64; 3]; 3]) -> Vec<usize> {
        let all: Vec<Box<dyn Candidate>> = errors
            .iter()
            .map(|e| {
                let paths = e.iter().map(|&v| constant(v, 2)).collect();
                Box::new(Given(paths, Some(2.0))) as Box<dyn Candidate>
            })
            .collect();
        let origins = Origins {
            at: vec![4, 6, 8],
            steps: 2,
        };
        choose(&[0.0; 10], &[0.0; 10], &all, &origins, &|_| {}).members
    }

    #[test]
    fn a_mean_of_seasonal_models_is_used_where_it_forecast_held_out_origins_better() {
        // A errs least in validation (0.29, B 0.5, C 0.71, their mean 0.31); chosen on
        // two origins and scored on the third, the mean erred less (0.55 against 0.74)
        let apart = [[0.0, -1.0, 0.0], [1.5, 0.0, -0.5], [2.0, 1.5, 0.0]];
        assert_eq!(chosen(apart), vec![0, 1, 2]);
        // all three miss origins 0 and 2 by 8 alike (a job that stopped): the mean is
        // within 4% of A overall, but origin 1 shows A right (0 against 0.73)
        let shared = [[8.0, 0.0, 8.0], [8.0, 1.0, 8.0], [8.0, 1.2, 8.0]];
        assert_eq!(chosen(shared), vec![0]);
    }
}
