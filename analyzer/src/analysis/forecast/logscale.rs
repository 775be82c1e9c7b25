//! The seasonal decomposition on the logarithm of a positive series: a daily profile
//! whose amplitude grows and shrinks with the level (demand, traffic, requests: busy
//! days swing more than quiet ones) is a fixed profile in logs. The additive
//! decomposition averages the swings of high and low weeks into one profile, too wide
//! for a quiet week and too narrow for a busy one; in logs the profile is a ratio and
//! scales with the level it is forecast at.

use std::sync::Arc;

use super::breaks::Regimes;
use super::candidates::{Candidate, Decomposed, DecompositionCache, Path, Rest, SeasonalNaive};
use super::decompose::Scale;
use super::ets::Season;
use crate::analysis::extent::extent;

/// The smallest value over the largest that is taken in logs as it is: below it a few
/// values near zero (an idle night) would dominate the profile in logs; a count that
/// reaches zero is lifted to it first ([`log_shift`]).
pub const MIN_RATIO: f64 = 0.01;

/// Whether `y` is positive enough to be modelled in logs: every value above zero and
/// at least [`MIN_RATIO`] of the largest.
pub fn is_positive(y: &[f64]) -> bool {
    let (min, max) = extent(y);
    positive_extent(min, max)
}

/// [`is_positive`] of a series whose least and largest values are `min` and `max`.
fn positive_extent(min: f64, max: f64) -> bool {
    min > 0.0 && min >= MIN_RATIO * max
}

/// What to add to `y` before taking logarithms, or `None` where logs do not apply: 0
/// for a positive series ([`is_positive`]); for a count whose troughs reach zero
/// ([`troughs_recur`]), the shift that lifts its least value to [`MIN_RATIO`] of its
/// largest. Bike rentals fall to 0-2 at night: without the shift no log decomposition
/// competed, and the additive one added a risen level to nights as to peaks.
pub fn log_shift(y: &[f64], seasons: &[Season]) -> Option<f64> {
    let (min, max) = extent(y);
    if positive_extent(min, max) {
        return Some(0.0);
    }
    let low = MIN_RATIO * max;
    (min >= 0.0 && max > 0.0 && troughs_recur(y, seasons, low)).then_some(low - min)
}

/// Whether the values of `y` below `low` are the troughs of its dominant season (the
/// first of `seasons`): some in at least half of its cycles, and no cycle low
/// throughout. Not the shortest season: a day's 8 hour harmonic, modelled beside it,
/// has a night in one cycle of three. Lows in a few cycles (a sensor's glitch, an
/// outage) or an idle stretch are not a profile, and in logs they would outweigh the
/// rest of the series.
fn troughs_recur(y: &[f64], seasons: &[Season], low: f64) -> bool {
    let Some(m) = seasons.first().map(|s| s.bins()).filter(|m| *m >= 2) else {
        return false;
    };
    let cycles = y.len() / m;
    let (mut with, mut idle) = (0usize, false);
    for c in y[y.len() - cycles * m..].chunks_exact(m) {
        let lows = c.iter().filter(|v| **v < low).count();
        with += usize::from(lows > 0);
        idle |= lows == m;
    }
    cycles > 0 && 2 * with >= cycles && !idle
}

/// The swing must follow the level this much better than it stays put: the squared
/// log-ratios of swings, less the level's, at most this share of their own.
pub const FOLLOWS: f64 = 0.8;

/// Whether the seasonal swing of `y` scales with its level: cycle by cycle of the
/// shortest season, each against the same cycle a longer season earlier (a Monday
/// against the Monday before, so that quiet weekends do not count as level changes),
/// the log-ratio of the swings (mean absolute deviation within the cycle) follows the
/// log-ratio of the levels (the cycle's mean) better than it stays at zero. Where the
/// level never moved, both read as noise and the answer is no: additive and
/// multiplicative profiles then forecast alike, and one candidate fewer competes.
pub fn swing_scales_with_level(y: &[f64], seasons: &[Season]) -> bool {
    let Some(m) = seasons.iter().map(|s| s.bins()).min().filter(|m| *m >= 2) else {
        return false;
    };
    let lag = seasons
        .iter()
        .map(|s| s.period() / m as f64)
        .filter(|k| (k - k.round()).abs() < 0.05)
        .map(|k| k.round() as usize)
        .max()
        .unwrap_or(1)
        .max(1);
    let cycles = y.len() / m;
    let start = y.len() - cycles * m;
    let stats: Vec<(f64, f64)> = y[start..]
        .chunks_exact(m)
        .map(|c| {
            let level = c.iter().sum::<f64>() / m as f64;
            let swing = c.iter().map(|v| (v - level).abs()).sum::<f64>() / m as f64;
            (level, swing)
        })
        .collect();
    let (mut moved, mut stayed, mut pairs) = (0.0, 0.0, 0usize);
    for i in lag..stats.len() {
        let ((l1, s1), (l0, s0)) = (stats[i], stats[i - lag]);
        if l1 > 0.0 && l0 > 0.0 && s1 > 0.0 && s0 > 0.0 {
            let (level, swing) = ((l1 / l0).ln(), (s1 / s0).ln());
            moved += (swing - level).powi(2);
            stayed += swing * swing;
            pairs += 1;
        }
    }
    pairs >= 4 && moved < FOLLOWS * stayed
}

/// Every season removed from the logarithms, simple smoothing of the rest, the
/// forecast exponentiated: a multiplicative MSTL, the additive decomposition's model
/// ([`Decomposed`]) run on logs.
pub struct LogDecomposed {
    /// The decomposition of the logs and the model of their rest.
    logs: Decomposed,
    /// Added before the logarithm and taken off after ([`log_shift`]).
    shift: f64,
}

impl LogDecomposed {
    /// The candidate for `train` with `seasons` (each fits twice), or `None` when
    /// there is no season, `train` cannot be taken in logs ([`log_shift`]), or its
    /// swing does not scale with its level ([`swing_scales_with_level`]).
    pub fn build(
        train: &[f64],
        seasons: &[Season],
        regimes: Arc<Regimes>,
    ) -> Option<LogDecomposed> {
        if seasons.is_empty() {
            return None;
        }
        let shift = log_shift(train, seasons)?;
        let shifted: Vec<f64> = train.iter().map(|v| v + shift).collect();
        if !swing_scales_with_level(&shifted, seasons) {
            return None;
        }
        let cache = Arc::new(DecompositionCache::new(regimes, Scale::Log { shift }));
        let logs = Decomposed::build(train, seasons, cache);
        Some(LogDecomposed { logs, shift })
    }

    /// The same decomposition with `rest` as the model of the rest (sharing the
    /// decompositions).
    pub fn with_rest(&self, rest: Rest) -> LogDecomposed {
        LogDecomposed {
            logs: self.logs.with_rest(rest),
            shift: self.shift,
        }
    }
}

impl Candidate for LogDecomposed {
    fn name(&self) -> String {
        let periods: Vec<String> = self
            .logs
            .seasons
            .iter()
            .map(|s| format!("{}", s.period()))
            .collect();
        format!("mstl-log({})+{}", periods.join(","), self.logs.rest.name())
    }
    fn period(&self) -> Option<f64> {
        self.logs.period()
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let shift = self.shift;
        let lifted = if shift == 0.0 {
            is_positive(y)
        } else {
            y.iter().all(|v| v + shift > 0.0)
        };
        if !lifted {
            // a value at or near zero since training: the additive models cover it
            return SeasonalNaive(self.logs.seasons[0], None).forecast(y, h);
        }
        let logs = self.logs.forecast(y, h);
        // exp of the log forecast is its median; the variance by the delta method
        let (point, var) = logs
            .point
            .iter()
            .zip(&logs.var)
            .map(|(l, v)| {
                let p = l.exp();
                (p - shift, p * p * v)
            })
            .unzip();
        Path { point, var }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An hourly daily profile whose swing is proportional to a level that doubles
    /// over four weeks.
    fn multiplicative(t: usize) -> f64 {
        let level = 10.0 * 2f64.powf(t as f64 / 672.0);
        let day = 1.0 + 0.8 * (2.0 * std::f64::consts::PI * t as f64 / 24.0).sin();
        level * day
    }

    /// The additive decomposition built beside the log one for `train`.
    fn additive_decomposition(train: &[f64], day: &[Season]) -> Box<dyn Candidate> {
        super::super::candidates::build(
            train,
            &std::sync::Arc::new(super::super::breaks::Regimes::of(train)),
            train.len(),
            day,
            day,
            Some(day[0]),
            48,
        )
        .into_iter()
        .find(|c| c.name() == "mstl(24)+ets(A,N,N)")
        .expect("the additive decomposition")
    }

    fn worst_relative_error(c: &dyn Candidate, y: &[f64], h: usize) -> f64 {
        let p = c.forecast(y, h);
        p.point
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let t = multiplicative(y.len() + j);
                ((f - t) / t).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_profile_that_scales_with_the_level_is_forecast_at_the_new_level() {
        let n = 672;
        let y: Vec<f64> = (0..n).map(multiplicative).collect();
        let day = [Season::new(24.0).unwrap()];
        let train = &y[..n - 48];
        let c = LogDecomposed::build(train, &day, Arc::default()).expect("positive, scaling");
        let worst = worst_relative_error(&c, &y, 48);
        assert!(worst < 0.06, "worst relative error {worst}");
        // the additive decomposition averages the month's swings (0.8 x the mean
        // level, about 14.4) where the last day swings 0.8 x 20
        let additive = additive_decomposition(train, &day);
        let worst_additive = worst_relative_error(additive.as_ref(), &y, 48);
        assert!(worst_additive > 0.1, "additive {worst_additive}");
    }

    #[test]
    fn theta_follows_a_steady_growth_rate() {
        // the level doubles every four weeks: simple smoothing lags it by the growth
        // of about a day; half the fitted slope, in logs, carries it on
        let n = 672;
        let y: Vec<f64> = (0..n).map(multiplicative).collect();
        let day = [Season::new(24.0).unwrap()];
        let level =
            LogDecomposed::build(&y[..n - 48], &day, Arc::default()).expect("positive, scaling");
        let theta = level.with_rest(Rest::Theta);
        assert_eq!(theta.name(), "mstl-log(24)+theta");
        let (lagging, carried) = (
            worst_relative_error(&level, &y, 48),
            worst_relative_error(&theta, &y, 48),
        );
        assert!(carried < 0.6 * lagging, "theta {carried}, level {lagging}");
    }

    #[test]
    fn only_a_swing_that_follows_the_level_is_multiplicative() {
        let seasons = [Season::new(24.0).unwrap(), Season::new(168.0).unwrap()];
        let wave = |t: usize| (2.0 * std::f64::consts::PI * t as f64 / 24.0).sin();
        let weekend = |t: usize| if (t / 24) % 7 >= 5 { 0.5 } else { 1.0 };
        let level = |t: usize| 10.0 * 2f64.powf(t as f64 / 672.0);
        let jitter = |t: usize| 0.01 * ((t * 7919) % 13) as f64;
        let n = 24 * 35;
        let scaling: Vec<f64> = (0..n)
            .map(|t| level(t) * weekend(t) * (1.0 + 0.5 * wave(t)) + jitter(t))
            .collect();
        assert!(swing_scales_with_level(&scaling, &seasons));
        // the same level, a swing of fixed size (quieter at weekends): additive
        let fixed: Vec<f64> = (0..n)
            .map(|t| level(t) + 4.0 * weekend(t) * wave(t) + jitter(t))
            .collect();
        assert!(!swing_scales_with_level(&fixed, &seasons));
        // a level that never moves says nothing either way
        let flat: Vec<f64> = (0..n)
            .map(|t| 10.0 * weekend(t) * (1.0 + 0.5 * wave(t)) + jitter(t))
            .collect();
        assert!(!swing_scales_with_level(&flat, &seasons));
        assert!(LogDecomposed::build(&flat, &seasons, Arc::default()).is_none());
    }

    #[test]
    fn series_near_zero_are_not_taken_in_logs() {
        let mut y: Vec<f64> = (0..400).map(multiplicative).collect();
        assert!(is_positive(&y));
        y[100] = 0.0;
        assert!(!is_positive(&y));
        let day = [Season::new(24.0).unwrap()];
        assert!(LogDecomposed::build(&y, &day, Arc::default()).is_none());
        assert!(LogDecomposed::build(&y[200..], &[], Arc::default()).is_none());
    }

    /// Hourly rentals-like counts: a day that falls to 0-2 at night, whose peaks grow
    /// with a level that doubles over four weeks.
    fn rentals(t: usize) -> f64 {
        const DAY: [f64; 24] = [
            0.0, 0.0, 0.1, 0.0, 0.0, 0.1, 0.5, 2.0, 4.0, 3.0, 2.0, 2.5, 3.0, 2.8, 2.6, 3.0, 4.5,
            6.0, 4.0, 2.5, 1.5, 0.8, 0.4, 0.1,
        ];
        let level = 10.0 * 2f64.powf(t as f64 / 672.0);
        (level * DAY[t % 24]).round()
    }

    fn mae(c: &dyn Candidate, y: &[f64], h: usize) -> f64 {
        let p = c.forecast(&y[..y.len() - h], h);
        let future = &y[y.len() - h..];
        p.point
            .iter()
            .zip(future)
            .map(|(f, v)| (f - v).abs())
            .sum::<f64>()
            / h as f64
    }

    #[test]
    fn counts_whose_troughs_reach_zero_are_lifted_into_logs() {
        let n = 672;
        let y: Vec<f64> = (0..n).map(rentals).collect();
        let day = [Season::new(24.0).unwrap()];
        let train = &y[..n - 48];
        assert!(!is_positive(train));
        let max = train.iter().copied().fold(0.0, f64::max);
        assert_eq!(log_shift(train, &day), Some(MIN_RATIO * max));
        let logs = LogDecomposed::build(train, &day, Arc::default()).expect("troughs recur");
        // the additive profile adds the risen level to nights as to peaks
        let additive = additive_decomposition(train, &day);
        let (lifted, added) = (mae(&logs, &y, 48), mae(additive.as_ref(), &y, 48));
        assert!(lifted < 0.7 * added, "logs {lifted}, additive {added}");
    }

    #[test]
    fn lows_that_are_not_troughs_keep_a_series_out_of_logs() {
        let n = 672;
        let day = [Season::new(24.0).unwrap()];
        let positive: Vec<f64> = (0..n).map(multiplicative).collect();
        // a sensor that read zero for two days of four weeks
        let mut glitch = positive.clone();
        glitch[300..348].fill(0.0);
        assert_eq!(log_shift(&glitch, &day), None);
        // counts that were idle for a whole day
        let mut idle: Vec<f64> = (0..n).map(rentals).collect();
        assert!(log_shift(&idle, &day).is_some());
        idle[240..264].fill(0.0);
        assert_eq!(log_shift(&idle, &day), None);
        // four hours at zero each night are the day's troughs, though they fall in one
        // cycle of three of its 8 hour harmonic, modelled beside it
        let short_nights: Vec<f64> = (0..n)
            .map(|t| {
                if t % 24 < 4 {
                    0.0
                } else {
                    rentals(t).max(20.0)
                }
            })
            .collect();
        let with_harmonic = [
            day[0],
            Season::new(168.0).unwrap(),
            Season::new(8.0).unwrap(),
        ];
        assert!(log_shift(&short_nights, &with_harmonic).is_some());
        // values below zero: no shift that a later value could not undercut
        let below: Vec<f64> = (0..n).map(|t| rentals(t) - 1.0).collect();
        assert_eq!(log_shift(&below, &day), None);
        assert_eq!(log_shift(&positive, &day), Some(0.0));
    }
}
