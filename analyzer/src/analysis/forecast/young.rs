//! A young regime: the series broke (a job started or ended, a cluster's load switched
//! from pinned to a partial load) after the last validation origin, so validation
//! scored every candidate on earlier regimes only. The winner there may carry a trend
//! or a profile fitted across the break, or be the last value of a noisy level that
//! its median would forecast better. Inside the regime, the choice, the last value and
//! the regime's median are validated again ([`settle`]); the choice is kept unless one
//! of the two errs strictly less.
//!
//! A break like one before the last origin, landing where that one did (a sawtooth's
//! reset, a job restarting as before), opens no young regime: validation has seen the
//! candidates cross such a jump. On the H100's run4 recording, treating every reset as
//! new took the memory series (ramped and freed) from sMAPE 42.99 to 50.83 and MASE
//! 5.70 to 6.18.

use super::breaks::{Regimes, LEVEL_WINDOW};
use super::candidates::{median, Path};
use super::hedge::moves_in_steps;
use super::pinned::{MIN_RUN, SAME};
use super::validation::Origins;
use crate::analysis::runs::runs;

/// Fewest points since the break for the regime to be validated in: a quarter of them
/// before the first inner origin is then enough for a median.
pub const MIN_YOUNG: usize = 24;
/// Origins inside the regime, at equal shares of it.
pub const INNER_ORIGINS: usize = 3;

/// What forecast a young regime best: the choice, or one of the two simple forecasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The validated choice stands.
    Choice,
    /// The last value, held.
    Naive,
    /// The median of the regime, held.
    RegimeMedian,
}

/// Where the current regime of `y` starts, if it started after the last of `origins`
/// and holds [`MIN_YOUNG`] points: after the last break (`regimes` of `y`), or the last
/// level shift where one opens a regime ([`driven_by_events`]; `seasonal`: the choice
/// has a season).
pub fn young_start(
    y: &[f64],
    regimes: &Regimes,
    origins: &Origins,
    seasonal: bool,
) -> Option<usize> {
    let last = *origins.at.last()?;
    let shift = driven_by_events(y, origins.steps, seasonal)
        .then(|| level_shift(y, last))
        .flatten();
    // a shift within a window of the break is the break, seen blurred by the medians
    let broke = y.len() - regimes.current(y).len();
    let start = match shift.filter(|&s| s > broke + SHIFT_WINDOW) {
        Some(shift) => shift,
        None if recurs(y, broke, last) => return None,
        None => broke,
    };
    (start > last && y.len() - start >= MIN_YOUNG).then_some(start)
}

/// Whether a level shift in `y` opens a regime: on a series driven by discrete events,
/// not on continuous traffic, whose level wanders. Such a series moves in steps
/// ([`moves_in_steps`]), or has sat at one value for the horizon `h` or longer (at
/// least [`MIN_RUN`] steps: pinned at 100, idle at 0) and is forecast without a season:
/// a cluster's partial load after days pinned or idle changes hardly a step exactly,
/// yet its level moves only when jobs start or end (new dev seed 24, 5 min GPU cluster
/// #9: from 32% to 70% eight hours before the end, forecast at the day's median, 35.6
/// MAE against naive's 2.7). Where the choice has a season, the medians either side of
/// a step also differ by the cycle's own ramp, and a day's rise after an outage reads
/// as a shift; a reading repeated for a dozen steps (memory at its floor between two
/// ramps) is no stretch pinned or idle.
fn driven_by_events(y: &[f64], h: usize, seasonal: bool) -> bool {
    let long = h.max(MIN_RUN);
    moves_in_steps(y) || (!seasonal && runs(y, SAME).any(|r| r.len() >= long))
}

/// Points on each side of a level shift whose medians are compared.
/// Bounds, as multiples of the jump that opens a regime, of an earlier jump that makes
/// it a repeat: a sawtooth's reset, a job restarting as it did before.
pub const LIKE_JUMP: (f64, f64) = (0.5, 2.0);
/// ... and how far, as a share of the jump, the level an earlier jump reached (the
/// median of the [`LEVEL_WINDOW`] points after it) may lie from the level this one
/// reached: a reset lands on the same floor and a restarted job at its old load, but a
/// cluster that went from idle to a partial load had only ever gone from idle to
/// pinned, and validation never saw a candidate in such a load.
pub const LIKE_LANDING: f64 = 0.25;

/// Whether the jump at break `start` has a like one (same sign, size within
/// [`LIKE_JUMP`], landing within [`LIKE_LANDING`] of where this one did) before `last`:
/// validation has scored the candidates across such a jump already, so the regime
/// after it is not new to it.
fn recurs(y: &[f64], start: usize, last: usize) -> bool {
    if start == 0 || start <= last {
        return false;
    }
    let jump = y[start] - y[start - 1];
    let (low, high) = (LIKE_JUMP.0 * jump.abs(), LIKE_JUMP.1 * jump.abs());
    let landing = |t: usize| median(y[t..(t + LEVEL_WINDOW).min(y.len())].to_vec());
    let landed = landing(start);
    (1..last).any(|t| {
        let d = y[t] - y[t - 1];
        d.signum() == jump.signum()
            && (low..=high).contains(&d.abs())
            && (landing(t) - landed).abs() <= LIKE_LANDING * jump.abs()
    })
}

pub const SHIFT_WINDOW: usize = 20;
/// A level shift moves the median by more than this many noise deviations (the noise
/// estimated from the median one-step change): a shift too gradual or too small for a
/// break (a cluster's partial load moving from 67% to 47% under ±5% of noise).
pub const SHIFT_SIGMAS: f64 = 4.0;
/// ... and by more than this many deviations of the values on either side (their
/// median absolute deviation, scaled to normal): on bursty traffic the medians of 20
/// points wander far more than the one-step noise says, and a wander is no regime.
pub const SHIFT_SPREADS: f64 = 3.0;

/// The last level shift after `after`: where the median of the [`SHIFT_WINDOW`] points
/// after a step differs most from that of those before, within the last stretch where
/// it differs by more than [`SHIFT_SIGMAS`] noise deviations, if it differs by
/// [`SHIFT_SPREADS`] spreads. None on a series whose median step there is zero (held values: the breaks
/// find its changes).
fn level_shift(y: &[f64], after: usize) -> Option<usize> {
    let w = SHIFT_WINDOW;
    let from = after.max(w);
    if y.len() < from + w {
        return None;
    }
    let steps: Vec<f64> = y[from - w..]
        .windows(2)
        .map(|d| (d[1] - d[0]).abs())
        .collect();
    // the median |step| of white noise is 0.954 of its deviation
    let sigma = median(steps) / 0.954;
    if sigma <= 0.0 {
        return None;
    }
    let gap = |t: usize| (median(y[t..t + w].to_vec()) - median(y[t - w..t].to_vec())).abs();
    let limit = SHIFT_SIGMAS * sigma;
    let latest = (from..=y.len() - w).rev().find(|&t| gap(t) > limit)?;
    let first = (from..=latest)
        .rev()
        .take_while(|&t| gap(t) > limit)
        .last()
        .unwrap_or(latest);
    let at = (first..=latest).max_by(|a, b| gap(*a).total_cmp(&gap(*b)))?;
    let spread = |v: &[f64]| {
        let m = median(v.to_vec());
        median(v.iter().map(|x| (x - m).abs()).collect()) / 0.6745
    };
    let wide = spread(&y[at - w..at]).max(spread(&y[at..at + w]));
    (gap(at) > SHIFT_SPREADS * wide).then_some(at)
}

/// Origins inside the regime `y[start..]`: [`INNER_ORIGINS`] at equal shares of it,
/// each forecasting to the end of `y` (at most `h` steps).
fn inner_origins(n: usize, start: usize) -> Vec<usize> {
    let len = n - start;
    (1..=INNER_ORIGINS)
        .map(|k| start + k * len / (INNER_ORIGINS + 1))
        .collect()
}

/// A constant path of `h` steps with variance `var`.
fn flat(value: f64, h: usize, var: f64) -> Path {
    Path {
        point: vec![value; h],
        var: vec![var; h],
    }
}

/// Validates, inside the young regime of `y` that starts at `start`, the choice
/// (`choice` forecasts a number of steps from a prefix of `y`), the last value and the
/// median of the regime so far; the first of them (in that order) with the lowest error.
pub fn settle(
    y: &[f64],
    start: usize,
    h: usize,
    choice: &dyn Fn(&[f64], usize) -> Path,
) -> Settled {
    let at = inner_origins(y.len(), start);
    let steps = |o: usize| (y.len() - o).min(h);
    let score = |f: &dyn Fn(&[f64], usize) -> Path| {
        let (mut sum, mut count) = (0.0, 0usize);
        for &o in &at {
            let path = f(&y[..o], steps(o));
            sum += path
                .point
                .iter()
                .zip(&y[o..])
                .map(|(p, v)| (p - v).abs())
                .sum::<f64>();
            count += path.point.len();
        }
        sum / count.max(1) as f64
    };
    let naive = |p: &[f64], s: usize| flat(p[p.len() - 1], s, 0.0);
    let level = |p: &[f64], s: usize| flat(median(p[start..].to_vec()), s, 0.0);
    let scores = [
        (Settled::Choice, score(choice)),
        (Settled::Naive, score(&naive)),
        (Settled::RegimeMedian, score(&level)),
    ];
    scores
        .iter()
        .fold(scores[0], |best, s| if s.1 < best.1 { *s } else { best })
        .0
}

/// The forecast `h` steps after `y` of a young regime starting at `start` that
/// [`settle`] gave to `settled`, with the variance of a random walk (naive) or of the
/// regime around its median; `None` where the choice stands.
pub fn forecast(y: &[f64], start: usize, h: usize, settled: Settled) -> Option<(Path, String)> {
    let regime = &y[start..];
    match settled {
        Settled::Choice => None,
        Settled::Naive => {
            let s2 = mean_square_step(regime);
            let mut p = flat(regime[regime.len() - 1], h, 0.0);
            p.var = (1..=h).map(|j| s2 * j as f64).collect();
            Some((p, "naive".into()))
        }
        Settled::RegimeMedian => {
            let level = median(regime.to_vec());
            let s2 = regime.iter().map(|v| (v - level).powi(2)).sum::<f64>() / regime.len() as f64;
            Some((flat(level, h, s2), "regime-median".into()))
        }
    }
}

/// Mean square of the one-step changes of `y` (0 with fewer than two points).
fn mean_square_step(y: &[f64]) -> f64 {
    let n = y.len().saturating_sub(1).max(1);
    y.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum::<f64>() / n as f64
}

#[cfg(test)]
mod tests {
    use super::super::breaks::since_last_break;
    use super::*;
    use crate::analysis::fixtures::{forecast_steps, Noise};

    /// Uniform draws in (-1, 1) from a fixed xorshift stream.
    fn noise(seed: u64, n: usize) -> Vec<f64> {
        let mut e = Noise(seed);
        (0..n).map(|_| e.uniform() * 2.0 - 1.0).collect()
    }

    #[test]
    fn only_a_regime_after_the_last_origin_is_young() {
        // pinned at 100 until step 900, then a noisy partial load
        let y = held_then_load(1000, (900, 100.0), 40.0, None, 3);
        let origins = |last: usize| Origins {
            at: vec![last - 100, last],
            steps: 100,
        };
        assert_eq!(
            young_start(&y, &Regimes::of(&y), &origins(880), false),
            Some(900)
        );
        assert_eq!(
            young_start(&y, &Regimes::of(&y), &origins(900), false),
            None,
            "validated on it"
        );
        assert_eq!(
            young_start(&y[..910], &Regimes::of(&y[..910]), &origins(880), false),
            None,
            "too short"
        );
    }

    #[test]
    fn a_noisy_level_settles_on_its_median_and_a_walk_on_its_last_value() {
        let e = noise(7, 400);
        // the choice holds the level before the break (0), validated on it alone
        let stale = |_: &[f64], s: usize| flat(0.0, s, 1.0);
        // a partial load, ±5 around 40, since step 200: the median beats the last value
        let level: Vec<f64> = (0..400)
            .map(|t| if t < 200 { 0.0 } else { 40.0 + 5.0 * e[t] })
            .collect();
        assert_eq!(settle(&level, 200, 288, &stale), Settled::RegimeMedian);
        let (p, name) = forecast(&level, 200, 5, Settled::RegimeMedian).unwrap();
        assert_eq!(name, "regime-median");
        assert!((p.point[0] - 40.0).abs() < 1.0, "{:?}", p.point);
        // a drifting walk since step 200: the last value beats the median
        let mut v = 50.0;
        let walk: Vec<f64> = (0..400)
            .map(|t| {
                if t >= 200 {
                    v += 0.5 + e[t];
                }
                if t < 200 {
                    0.0
                } else {
                    v
                }
            })
            .collect();
        assert_eq!(settle(&walk, 200, 288, &stale), Settled::Naive);
        let (p, _) = forecast(&walk, 200, 5, Settled::Naive).unwrap();
        assert_eq!(p.point, vec![walk[399]; 5]);
        // a choice no worse than the last value stands (ties keep it)
        let last = |p: &[f64], s: usize| flat(p[p.len() - 1], s, 0.0);
        assert_eq!(settle(&walk, 200, 288, &last), Settled::Choice);
        assert_eq!(forecast(&walk, 200, 5, Settled::Choice), None);
    }

    #[test]
    fn a_level_shift_under_noise_starts_a_young_regime() {
        // pinned at 100 for 600 steps, then a partial load ±5 around 67% that falls to
        // 47% at step 900: a step of 20, too small for a break under that noise, but
        // the medians either side are 20 apart
        let y = held_then_load(1000, (600, 100.0), 67.0, Some((900, 47.0)), 11);
        assert_eq!(
            since_last_break(&y).len(),
            400,
            "the pinned stretch's end only"
        );
        let origins = Origins {
            at: vec![780, 880],
            steps: 100,
        };
        assert_young_near(&y, &origins, 900);
        // the same load without the shift: no young regime
        let flat = held_then_load(1000, (600, 100.0), 67.0, None, 11);
        assert_eq!(
            young_start(&flat, &Regimes::of(&flat), &origins, false),
            None
        );
        // the shift on continuous traffic (no held stretch): a wander, not a regime
        assert_eq!(
            young_start(
                &y[600..],
                &Regimes::of(&y[600..]),
                &origins_less(&origins, 600),
                false
            ),
            None
        );
        assert!(level_shift(&y[600..], 280).is_some());
        // held values (a count that moves in steps): left to the breaks
        let held: Vec<f64> = (0..1000).map(|t| (t / 50 % 3) as f64).collect();
        assert_eq!(level_shift(&held, 880), None);
    }

    #[test]
    fn a_partial_load_after_an_idle_stretch_shifts_into_a_young_regime() {
        // idle at 0 for 300 steps (longer than the horizon), then a partial load ±5
        // around 32% that moves to 60% at step 1900: too few unchanged steps to move in
        // steps, but a stretch held at one value says jobs drive it (as new dev seed 24,
        // 5 min GPU cluster #9)
        let y = held_then_load(2000, (300, 0.0), 32.0, Some((1900, 60.0)), 24);
        assert!(!moves_in_steps(&y));
        assert_eq!(
            since_last_break(&y).len(),
            1700,
            "too small a step for a break"
        );
        let origins = Origins {
            at: vec![1612, 1712],
            steps: 288,
        };
        assert_young_near(&y, &origins, 1900);
        // forecast with a season, the step may be the cycle's own ramp
        assert_eq!(young_start(&y, &Regimes::of(&y), &origins, true), None);
        // the same load never held at one value (cut at 300), or idle for less than
        // the horizon (cut at 100: 200 steps at 0): continuous traffic, a wander
        for cut in [300, 100] {
            assert_eq!(
                young_start(
                    &y[cut..],
                    &Regimes::of(&y[cut..]),
                    &origins_less(&origins, cut),
                    false
                ),
                None
            );
        }
    }

    /// `n` steps held at `held.1` until step `held.0`, then a partial load ±5 around
    /// `level` that moves to `moved.1` at step `moved.0`, if given (noise of `seed`).
    fn held_then_load(
        n: usize,
        held: (usize, f64),
        level: f64,
        moved: Option<(usize, f64)>,
        seed: u64,
    ) -> Vec<f64> {
        let e = noise(seed, n);
        (0..n)
            .map(|t| match moved {
                _ if t < held.0 => held.1,
                Some((at, to)) if t >= at => to + 5.0 * e[t],
                _ => level + 5.0 * e[t],
            })
            .collect()
    }

    /// Asserts that `y` has a young regime starting within two steps of `at`.
    fn assert_young_near(y: &[f64], origins: &Origins, at: usize) {
        let start = young_start(y, &Regimes::of(y), origins, false).expect("young");
        assert!(start.abs_diff(at) <= 2, "{start}");
    }

    /// `o` with every origin `by` steps earlier (for `y[by..]`).
    fn origins_less(o: &Origins, by: usize) -> Origins {
        Origins {
            at: o.at.iter().map(|a| a - by).collect(),
            steps: o.steps,
        }
    }

    #[test]
    fn a_reset_like_earlier_ones_is_no_young_regime() {
        // memory that grows by 1 a step and is freed every 120 steps: the last reset,
        // after the last origin, is the fourth of its kind, not a new regime
        let y: Vec<f64> = (0..510).map(|t| (t % 120) as f64).collect();
        let origins = Origins {
            at: vec![380, 460],
            steps: 40,
        };
        assert_eq!(
            since_last_break(&y).len(),
            30,
            "the reset at 480 is a break"
        );
        assert_eq!(young_start(&y, &Regimes::of(&y), &origins, false), None);
        // a first drop of its size (a job that frees twice what it ever freed) is new
        let mut fresh = y.clone();
        fresh[480..].iter_mut().for_each(|v| *v -= 200.0);
        assert!(recurs(&y, 480, 460) && !recurs(&fresh, 480, 460));
        assert_eq!(
            young_start(&fresh, &Regimes::of(&fresh), &origins, false),
            Some(480)
        );
    }

    #[test]
    fn a_jump_like_an_earlier_one_to_another_level_is_a_young_regime() {
        // idle, pinned at 100 from step 300 to 600, idle again, then a partial load ±5
        // around 60 from step 900: the jump up is of the size of the one at 300, but
        // lands 40 away from where that one did, in a load validation never saw
        let e = noise(13, 1000);
        let y: Vec<f64> = (0..1000)
            .map(|t| match t {
                _ if t >= 900 => 60.0 + 5.0 * e[t],
                _ if (300..600).contains(&t) => 100.0,
                _ => 0.0,
            })
            .collect();
        let origins = Origins {
            at: vec![780, 880],
            steps: 100,
        };
        assert!(!recurs(&y, 900, 880));
        assert_eq!(
            young_start(&y, &Regimes::of(&y), &origins, false),
            Some(900)
        );
        // the same jump landing at the old load (a job restarting as before) recurs
        let mut again = y.clone();
        again[900..]
            .iter_mut()
            .zip(&e[900..])
            .for_each(|(v, e)| *v = 98.0 + 2.0 * e);
        assert!(recurs(&again, 900, 880));
        assert_eq!(
            young_start(&again, &Regimes::of(&again), &origins, false),
            None
        );
    }

    #[test]
    fn a_partial_load_after_a_pinned_stretch_forecasts_its_median() {
        // 5 min steps, two weeks: pinned at 100 for days, a partial load ±5 around 40
        // for the last 150 steps; the day ahead is that load (validation, four days
        // back, never saw it): its median, not its last noisy sample
        let n = 288 * 14;
        let e = noise(5, n);
        let y: Vec<f64> = (0..n)
            .map(|t| match t {
                _ if t >= n - 150 => 40.0 + 5.0 * e[t],
                _ if t >= n - 1500 => 100.0,
                _ => 60.0 + 5.0 * e[t],
            })
            .collect();
        let f = forecast_steps(&y, 300.0, 288);
        assert_eq!(f.model, "regime-median");
        assert!(
            f.point.iter().all(|p| (p - 40.0).abs() < 1.0),
            "{:?}",
            f.point
        );
    }
}
