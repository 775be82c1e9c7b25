//! The models a forecast is chosen from, behind one trait.
//!
//! A candidate's parameters are estimated once, on the data before the validation
//! origins ([`build`]); [`Candidate::forecast`] then runs the model with those
//! parameters over any prefix and forecasts from its end, so validating at several
//! origins costs a pass over the data each, not an optimisation each. Adding a model
//! is one `impl` and one line in [`build`].

use std::sync::{Arc, Mutex};

use super::breaks::{carries_line, carries_trend, shorter, Regimes, MIN_SEGMENT};
use super::decay::decay;
use super::decompose::{Growing, Scale, Seasonals};
use super::ets::{self, EtsModel, EtsSpec, Season, Trend};
use super::linear::{least_squares_line, LinearFit};
use super::logscale::LogDecomposed;
use super::memo::Memo;
use super::pinned::{trailing_run, MIN_RUN};
use super::seasonal_ar::{self, SeasonalAr};
use super::shape_change::cycles_since_change;

/// Evaluations the optimiser may spend per ETS model.
const MAX_EVALS: usize = 30;
/// Evaluations for simple smoothing of the seasonally adjusted series: one parameter,
/// which the simplex settles in far fewer steps than the seasonal models' two or more.
const LEVEL_EVALS: usize = 20;
/// Evaluations for a model started from the optimum of the one it extends.
const WARM_EVALS: usize = 15;

/// A forecast path: point forecasts and prediction variances, step 1 first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Path {
    /// Point forecasts.
    pub point: Vec<f64>,
    /// Prediction variances (analytic; calibrated later on validation errors).
    pub var: Vec<f64>,
}

/// A forecasting model with its parameters fixed.
pub trait Candidate: Send + Sync {
    /// The model's name, e.g. `snaive(24)` or `ets(A,Ad,A)`.
    fn name(&self) -> String;
    /// The season reported with the forecast, in steps.
    fn period(&self) -> Option<f64> {
        None
    }
    /// Whether this is a baseline (naive, seasonal-naive) that a forecast must beat.
    fn is_baseline(&self) -> bool {
        false
    }
    /// Whether the forecast is the last value, held (naive).
    fn holds_last(&self) -> bool {
        false
    }
    /// Whether the forecast is one level, held: no season and no trend (naive, a
    /// recent median, simple smoothing).
    fn holds_a_level(&self) -> bool {
        self.holds_last()
    }
    /// Forecasts `h` steps after `y`.
    fn forecast(&self, y: &[f64], h: usize) -> Path;
    /// Forecasts `h` steps from each origin (a prefix length of `y`).
    fn backtest(&self, y: &[f64], origins: &[usize], h: usize) -> Vec<Path> {
        origins.iter().map(|&o| self.forecast(&y[..o], h)).collect()
    }
}

/// The last value, held; a random walk's variance.
pub struct Naive;

impl Candidate for Naive {
    fn name(&self) -> String {
        "naive".into()
    }
    fn is_baseline(&self) -> bool {
        true
    }
    fn holds_last(&self) -> bool {
        true
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let last = y.last().copied().unwrap_or(0.0);
        let s2 = mean_square_diff(y, 1);
        Path {
            point: vec![last; h],
            var: (1..=h).map(|j| s2 * j as f64).collect(),
        }
    }
}

/// The value one season earlier (`k` seasons earlier beyond the first). With regimes,
/// only from the current one: a phase not seen since the last break (a job resumed
/// less than a cycle ago) holds the last value instead of copying the idle stretch.
pub struct SeasonalNaive(pub Season, pub Option<Arc<Regimes>>);

impl Candidate for SeasonalNaive {
    fn name(&self) -> String {
        format!("snaive({})", trim(self.0.period()))
    }
    fn period(&self) -> Option<f64> {
        Some(self.0.period())
    }
    fn is_baseline(&self) -> bool {
        true
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let n = y.len();
        let m = self.0.period();
        let lag = m.round().max(1.0) as usize;
        let s2 = mean_square_diff(y, lag);
        let start = self.1.as_ref().map_or(0, |r| n - r.current(y).len());
        let (point, var) = (1..=h)
            .map(|j| {
                let cycles = (j as f64 / m).ceil();
                let at = (n as f64 + j as f64 - 1.0 - cycles * m).round();
                let at = (at.max(0.0) as usize).min(n - 1);
                let v = if at < start { y[n - 1] } else { y[at] };
                (v, s2 * cycles)
            })
            .unzip();
        Path { point, var }
    }
}

/// The seasonal ARIMA (1,0,0)(0,1,1) of a season ([`SeasonalAr`]): coefficients from
/// the training data, its errors run again over the recent window of each prefix.
pub struct SeasonalArima(pub SeasonalAr, pub Season);

impl SeasonalArima {
    /// The model fitted to the recent part of `train`, where it holds enough cycles.
    pub fn build(train: &[f64], season: Season) -> Option<SeasonalArima> {
        let m = season.bins();
        let window = recent(train, seasonal_ar::WINDOW_CYCLES * m);
        SeasonalAr::fit(window, m).map(|fit| SeasonalArima(fit, season))
    }
}

impl Candidate for SeasonalArima {
    fn name(&self) -> String {
        format!("sarima({})", trim(self.1.period()))
    }
    fn period(&self) -> Option<f64> {
        Some(self.1.period())
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        self.0
            .forecast(recent(y, seasonal_ar::WINDOW_CYCLES * self.0.m), h)
    }
}

/// The median of the last `k` values since the last break, held: the level a bursty
/// or pinned series returns to, robust to the last burst, and the current regime's.
pub struct RecentMedian(pub usize, pub Arc<Regimes>);

impl Candidate for RecentMedian {
    fn name(&self) -> String {
        format!("median({})", self.0)
    }
    fn holds_a_level(&self) -> bool {
        true
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let y = self.1.current(y);
        let k = self.0.clamp(1, y.len());
        let last = &y[y.len() - k..];
        let level = median(last.to_vec());
        let s2 = last.iter().map(|v| (v - level).powi(2)).sum::<f64>() / k as f64;
        Path {
            point: vec![level; h],
            var: vec![s2; h],
        }
    }
}

/// Cycles a seasonal median looks back over.
pub const MEDIAN_CYCLES: usize = 5;

/// Which cycles a seasonal median looks back over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookback {
    /// The cycles since the last break (a level shift, a resumed job).
    SinceBreak,
    /// The same, and since the shape last changed ([`cycles_since_change`]).
    SinceShapeChange,
}

/// At each phase, the median of the same phase over the last [`MEDIAN_CYCLES`] cycles
/// of the current regime (at least one), and where its [`Lookback`] says so, of the
/// current shape: seasonal-naive without the noise of a single cycle, and without the
/// cycles of an idle stretch a job has just resumed from or of an old shape. Both are
/// candidates: on the H100 recordings, iteration cycles that drift in phase look like
/// new shapes, and the median since every such change lost to the plain one (sMAPE
/// 25.60 -> 26.03 where it replaced it).
pub struct SeasonalMedian(pub Season, pub Arc<Regimes>, pub Lookback);

impl Candidate for SeasonalMedian {
    fn name(&self) -> String {
        let kind = match self.2 {
            Lookback::SinceBreak => "smedian",
            Lookback::SinceShapeChange => "smedian-shape",
        };
        format!("{kind}({})", trim(self.0.period()))
    }
    fn period(&self) -> Option<f64> {
        Some(self.0.period())
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let m = self.0.period();
        let since_break = regime_cycles(self.1.current(y).len(), m);
        let cycles = match self.2 {
            Lookback::SinceBreak => since_break,
            Lookback::SinceShapeChange => cycles_since_change(y, m.round() as usize)
                .map_or(since_break, |k| k.min(since_break)),
        };
        let mut errors = 0.0;
        // one buffer for every step: this runs for every step of every origin
        let mut buf = [0.0; MEDIAN_CYCLES];
        let point: Vec<f64> = (1..=h)
            .map(|j| {
                let mut k = 0;
                for t in phase_steps(y.len(), j, m, cycles.min(MEDIAN_CYCLES)) {
                    buf[k] = y[t];
                    k += 1;
                }
                let same = &mut buf[..k];
                let v = middle(same);
                errors += same.iter().map(|s| (s - v).powi(2)).sum::<f64>() / k.max(1) as f64;
                v
            })
            .collect();
        let s2 = errors / h.max(1) as f64;
        Path {
            var: vec![s2; h],
            point,
        }
    }
}

/// The median of a few values (0 for none), the mean of the two middle ones for an
/// even count: the seasonal median since a change of shape often has two or four
/// cycles, and the upper of the two middle values biased it upwards (second set's
/// structural breaks 7.63 -> 7.54 sMAPE on 12 development seeds, first set's hourly
/// multiplicative 10.59 -> 10.46).
pub(super) fn middle(values: &mut [f64]) -> f64 {
    let k = values.len();
    if k == 0 {
        return 0.0;
    }
    values.sort_unstable_by(f64::total_cmp);
    if k % 2 == 1 {
        values[k / 2]
    } else {
        0.5 * (values[k / 2 - 1] + values[k / 2])
    }
}

/// The values of `y` at the phase of step `j` after it (1 is the first) in a season of
/// `m` steps, the latest cycle first, over at most `cycles` cycles.
pub(super) fn same_phase(y: &[f64], j: usize, m: f64, cycles: usize) -> Vec<f64> {
    phase_steps(y.len(), j, m, cycles).map(|t| y[t]).collect()
}

/// The steps of a series of `n` values at the phase of step `j` after it, as
/// [`same_phase`] reads them.
fn phase_steps(n: usize, j: usize, m: f64, cycles: usize) -> impl Iterator<Item = usize> {
    let base = n as f64 + j as f64 - 1.0 - (j as f64 / m).ceil() * m;
    (0..cycles)
        .map(move |c| (base - c as f64 * m).round())
        .take_while(|t| *t >= 0.0)
        .map(|t| t as usize)
}

/// Cycles of `m` steps a seasonal median looks back over in a regime of `len` steps:
/// the whole cycles in it, 1 to [`MEDIAN_CYCLES`].
fn regime_cycles(len: usize, m: f64) -> usize {
    ((len as f64 / m).floor() as usize).clamp(1, MEDIAN_CYCLES)
}

/// The least-squares line over the window since its last break.
pub struct Line(pub Arc<Regimes>);

impl Candidate for Line {
    fn name(&self) -> String {
        "linear".into()
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let segment = self.0.current(y);
        if !carries_line(segment, h) {
            return Naive.forecast(y, h);
        }
        let y = segment;
        let (point, var) = LinearFit::fit(y).forecast(h);
        Path { point, var }
    }
}

/// Exponential smoothing with one season (or none); parameters from the training data.
pub struct Ets(pub EtsModel, pub Arc<Regimes>, pub Arc<EtsStarts>);

/// The initial states of the ETS candidates' windows, by the length of the prefix
/// forecast from and of the window run over: the three trends share the season and the
/// windows, so each window is decomposed once instead of three times.
#[derive(Debug, Default)]
pub struct EtsStarts(Memo<(usize, usize), Arc<ets::Decomposition>>);

impl EtsStarts {
    /// The decomposition of `window` (a suffix of a prefix of `prefix_len` steps).
    fn get(
        &self,
        prefix_len: usize,
        window: &[f64],
        season: Option<Season>,
    ) -> Arc<ets::Decomposition> {
        self.0.get_or((prefix_len, window.len()), || {
            Arc::new(ets::Decomposition::of(window, season))
        })
    }
}

impl Candidate for Ets {
    fn name(&self) -> String {
        self.0.spec.name()
    }
    fn period(&self) -> Option<f64> {
        self.0.spec.season.map(|s| s.period())
    }
    fn holds_a_level(&self) -> bool {
        self.0.spec.trend == Trend::None && self.0.spec.season.is_none()
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let spec = self.0.spec;
        let prefix_len = y.len();
        let bins = spec.season.map_or(0, |s| s.bins());
        let segment = self.1.current(y);
        let y = recent(y, 3 * bins);
        let segment = shorter(segment, y);
        // A trend is the current ramp's, not one spanning a reset, nor one that a break
        // has just kicked; without enough data since the break, no trend. Nor one whose
        // seasonal states would have to start before a held stretch ended (a job resumed
        // from idle less than three seasons ago: they would climb out of the idle level).
        // Across a level shift the trend carries on, and so does the model.
        let before = &y[..y.len() - segment.len()];
        let across = segment.len() < MIN_SEGMENT.max(3 * bins) && trailing_run(before) >= MIN_RUN;
        let carried = || match spec.season {
            None => carries_line(segment, h),
            Some(_) => carries_trend(segment, h),
        };
        if spec.trend != Trend::None && (across || !carried()) {
            return match spec.season {
                None => Naive.forecast(y, h),
                Some(season) => SeasonalNaive(season, None).forecast(y, h),
            };
        }
        // The states run over the current regime where it holds three seasons: a level
        // smoothed slowly would otherwise still remember an idle stretch.
        let y = if segment.len() >= MIN_SEGMENT.max(3 * bins) {
            segment
        } else {
            y
        };
        let start = self.2.get(prefix_len, y, spec.season);
        let (point, var) = self.0.run_from(y, &start).forecast(h);
        Path { point, var }
    }
}

/// Decompositions by prefix length, shared by the candidates that decompose the same
/// way, so that each origin is decomposed once; the prefixes' regimes are shared with
/// every candidate. The origins come earliest first, and a profile's sums are carried
/// from one to the next ([`Growing`]).
pub struct DecompositionCache {
    by_length: Memo<usize, Arc<Split>>,
    regimes: Arc<Regimes>,
    scale: Scale,
    growing: Mutex<Growing>,
}

/// A decomposition and the series adjusted by it.
type Split = (Seasonals, Vec<f64>);

impl DecompositionCache {
    /// An empty cache for prefixes whose regimes are `regimes`, decomposed on `scale`.
    pub fn new(regimes: Arc<Regimes>, scale: Scale) -> Self {
        DecompositionCache {
            by_length: Memo::default(),
            regimes,
            scale,
            growing: Mutex::default(),
        }
    }

    /// The seasonals of `y` (of its part since the last break, where that holds three of
    /// the longest cycles) on the cache's scale, and that part adjusted by them.
    fn get(&self, y: &[f64], seasons: &[Season]) -> Arc<Split> {
        self.by_length.get_or(y.len(), || {
            let y = self.scale.of(profile_part(&self.regimes, y, seasons));
            let mut growing = self.growing.lock().unwrap_or_else(|e| e.into_inner());
            let seasonals = Seasonals::of_growing(&y, seasons, &mut growing);
            let adjusted = seasonals.adjust(&y);
            Arc::new((seasonals, adjusted))
        })
    }
}

/// The part of the prefix `y` a seasonal profile is estimated on: the current regime
/// where it holds three of the longest cycles (a profile averaged over an idle stretch
/// or across a level shift is neither), else all of `y`.
pub(super) fn profile_part<'a>(regimes: &Regimes, y: &'a [f64], seasons: &[Season]) -> &'a [f64] {
    let longest = seasons.iter().map(|s| s.bins()).max().unwrap_or(0);
    let segment = regimes.current(y);
    if segment.len() >= 3 * longest {
        segment
    } else {
        y
    }
}

/// What forecasts the rest of a decomposition (the series without its seasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rest {
    /// ETS(A,N,N): simple smoothing, the level carried flat.
    Level,
    /// Theta: simple smoothing plus half the line's slope.
    Theta,
    /// AR(1) around the last cycle's mean: the deviation fades ([`decay`]).
    Decay,
}

impl Rest {
    /// The model's name after `mstl(…)+`.
    pub fn name(self) -> &'static str {
        match self {
            Rest::Level => "ets(A,N,N)",
            Rest::Theta => "theta",
            Rest::Decay => "ar(1)",
        }
    }
}

/// Every season removed by [`Seasonals`], then a non-seasonal model of the rest
/// ([`Rest`]); forecasts on the scale of its cache.
pub struct Decomposed {
    /// The seasons, dominant first.
    pub seasons: Vec<Season>,
    /// Decompositions shared with the other decomposed candidates.
    pub cache: Arc<DecompositionCache>,
    /// ETS without season, fitted to the seasonally adjusted training data.
    pub fit: EtsModel,
    /// The model of the rest.
    pub rest: Rest,
}

impl Decomposed {
    /// ETS(A,N,N) fitted to `train` adjusted by `cache`'s decomposition with `seasons`;
    /// a damped trend there was rarely chosen and costs another optimisation.
    pub fn build(train: &[f64], seasons: &[Season], cache: Arc<DecompositionCache>) -> Self {
        let adjusted = cache.get(train, seasons).1.clone();
        let spec = EtsSpec {
            trend: Trend::None,
            season: None,
        };
        let decomposition = ets::Decomposition::of(&adjusted, None);
        let fit = ets::optimise(&adjusted, spec, LEVEL_EVALS, &decomposition, None);
        Decomposed {
            seasons: seasons.to_vec(),
            cache,
            fit,
            rest: Rest::Level,
        }
    }

    /// The same decomposition with `rest` as the model of the rest (sharing the
    /// decompositions).
    pub fn with_rest(&self, rest: Rest) -> Self {
        Decomposed {
            seasons: self.seasons.clone(),
            cache: self.cache.clone(),
            fit: self.fit,
            rest,
        }
    }

    /// Simple smoothing of the `adjusted` rest, with Theta's drift where that is the
    /// model.
    fn smoothed(&self, adjusted: &[f64], h: usize) -> Path {
        let fit = self.fit.run(recent(adjusted, 0));
        let (mut point, var) = fit.forecast(h);
        if self.rest == Rest::Theta {
            // Theta(2) as simple smoothing with drift: half the slope of the line,
            // phased in as the level forgets its start.
            let (_, slope) = least_squares_line(adjusted);
            let a = self.fit.alpha();
            let fade = (1.0 - a).powi(adjusted.len().min(i32::MAX as usize) as i32) / a;
            for (j, p) in point.iter_mut().enumerate() {
                *p += 0.5 * slope * (j as f64 + 1.0 / a - fade);
            }
        }
        Path { point, var }
    }
}

impl Candidate for Decomposed {
    fn name(&self) -> String {
        let periods: Vec<String> = self.seasons.iter().map(|s| trim(s.period())).collect();
        format!("mstl({})+{}", periods.join(","), self.rest.name())
    }
    fn period(&self) -> Option<f64> {
        self.seasons.first().map(|s| s.period())
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let decomposition = self.cache.get(y, &self.seasons);
        let (seasonals, adjusted) = (&decomposition.0, &decomposition.1);
        let Path { mut point, var } = match self.rest {
            Rest::Decay => {
                let cycle = self.seasons.iter().map(|s| s.bins()).max().unwrap_or(0);
                decay(adjusted, cycle, h)
            }
            Rest::Level | Rest::Theta => self.smoothed(adjusted, h),
        };
        for (p, s) in point.iter_mut().zip(seasonals.extend(h)) {
            *p += s;
        }
        Path { point, var }
    }
}

/// The candidates fitted to the first `train_len` steps of `series` (scaled to ±1;
/// `regimes` its [`Regimes`], which the caller reads too),
/// to forecast from its prefixes, with `seasons` (each fits twice in that part):
/// naive, seasonal-naive and the seasonal median (each [`Lookback`]) per season, the median of the last `recent` values, the line, ETS with the `dominant`
/// season and trend none / damped (or with none and trend none / additive / damped),
/// and with any of the `decomposed`
/// seasons (a subset of `seasons`) the decomposition by all of those with ETS(A,N,N),
/// Theta or AR(1) on the rest ([`Rest`]), additive and, where the swing scales with
/// the level, in logs.
pub fn build(
    series: &[f64],
    regimes: &Arc<Regimes>,
    train_len: usize,
    seasons: &[Season],
    decomposed: &[Season],
    dominant: Option<Season>,
    recent: usize,
) -> Vec<Box<dyn Candidate>> {
    let train = &series[..train_len];
    let mut out: Vec<Box<dyn Candidate>> = vec![Box::new(Naive)];
    for s in seasons {
        out.push(Box::new(SeasonalNaive(*s, Some(regimes.clone()))));
    }
    for s in seasons {
        for lookback in [Lookback::SinceBreak, Lookback::SinceShapeChange] {
            out.push(Box::new(SeasonalMedian(*s, regimes.clone(), lookback)));
        }
    }
    out.push(Box::new(RecentMedian(recent, regimes.clone())));
    if train.len() < 10 {
        return out;
    }
    for s in seasons {
        if let Some(c) = SeasonalArima::build(train, *s) {
            out.push(Box::new(c));
        }
    }
    out.push(Box::new(Line(regimes.clone())));
    // The additive trend starts from the level-only optimum and the damped trend from
    // the additive one: each nests the one before, so a short search from there does
    // what a full one from cold starts would, at less than half the evaluations.
    let starts = Arc::new(EtsStarts::default());
    let start = starts.get(train.len(), train, dominant);
    let mut previous: Option<EtsModel> = None;
    for trend in [Trend::None, Trend::Additive, Trend::Damped] {
        let spec = EtsSpec {
            trend,
            season: dominant,
        };
        let fit = match &previous {
            None => ets::optimise(train, spec, MAX_EVALS, &start, None),
            Some(near) => ets::optimise(train, spec, WARM_EVALS, &start, Some(near)),
        };
        previous = Some(fit);
        // With a season, the undamped trend only starts the damped one's search: carried
        // undamped through two days, a trend fitted across a level shift or a busy
        // week misses more than it catches (without it, the first set's hourly
        // day+week 7.57 -> 7.35 sMAPE, better on all eight dev seeds; low counts 83.33
        // -> 83.84; `docs/validation/analyzer/forecast-eval-session23.md`).
        if trend == Trend::Additive && dominant.is_some() {
            continue;
        }
        out.push(Box::new(Ets(fit, regimes.clone(), starts.clone())));
    }
    if !decomposed.is_empty() {
        let cache = Arc::new(DecompositionCache::new(regimes.clone(), Scale::Linear));
        let level = Decomposed::build(train, decomposed, cache);
        let (theta, fading) = (level.with_rest(Rest::Theta), level.with_rest(Rest::Decay));
        out.push(Box::new(level));
        out.push(Box::new(theta));
        out.push(Box::new(fading));
        // the same in logs, for a positive series whose profile scales with its level
        if let Some(log) = LogDecomposed::build(train, decomposed, regimes.clone()) {
            let (theta, fading) = (log.with_rest(Rest::Theta), log.with_rest(Rest::Decay));
            out.push(Box::new(log));
            out.push(Box::new(theta));
            out.push(Box::new(fading));
        }
    }
    out
}

/// Steps a model with fixed parameters re-runs its states over, at least: more than
/// the optimiser's [`ets::OPTIMISE_POINTS`], because the initial states come from a
/// decomposition of these steps: a seasonal profile estimated on four weeks of hourly
/// data forecast the day+week class better than on three (the multiplicative class a
/// little worse; `docs/validation/analyzer/forecast-eval-session15.md`, section 2), at
/// no measurable cost.
pub const RERUN_POINTS: usize = 768;

/// The last [`RERUN_POINTS`] values of `y`, or `at_least` if more: a model with fixed
/// parameters forgets older data, so its states are run over this much only.
fn recent(y: &[f64], at_least: usize) -> &[f64] {
    let keep = RERUN_POINTS.max(at_least).min(y.len());
    &y[y.len() - keep..]
}

/// The median of `v` (0 for none).
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        crate::analysis::periodicity::prepare::median_in_place(&mut v)
    }
}

/// Mean square of the lag-`lag` differences (0 when there are none).
fn mean_square_diff(y: &[f64], lag: usize) -> f64 {
    if y.len() <= lag {
        return 0.0;
    }
    let n = y.len() - lag;
    y.windows(lag + 1)
        .map(|w| (w[lag] - w[0]).powi(2))
        .sum::<f64>()
        / n as f64
}

/// A period for a model name: whole numbers without decimals.
fn trim(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seasonal_naive_repeats_the_last_season() {
        let y: Vec<f64> = (0..50).map(|i| (i % 10) as f64).collect();
        let p = SeasonalNaive(Season::new(10.0).unwrap(), None).forecast(&y, 25);
        let expected: Vec<f64> = (50..75).map(|i| (i % 10) as f64).collect();
        assert_eq!(p.point, expected);
        assert_eq!(p.var[0], 0.0);
    }

    #[test]
    fn a_seasonal_median_of_two_cycles_is_their_mean() {
        // no break between the cycles: every step is as large
        let y = [10.0, 30.0, 10.0, 30.0, 14.0, 34.0, 14.0, 34.0];
        let season = Season::new(4.0).unwrap();
        let p = SeasonalMedian(season, Arc::new(Regimes::default()), Lookback::SinceBreak)
            .forecast(&y, 4);
        assert_eq!(p.point, vec![12.0, 32.0, 12.0, 32.0]);
        assert_eq!(middle(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(middle(&mut []), 0.0);
    }

    #[test]
    fn a_season_is_forecast_with_a_damped_trend_only() {
        // with a season ETS offers no trend or a damped one; without, the undamped too
        let y: Vec<f64> = (0..24 * 14)
            .map(|t| (t as f64 * std::f64::consts::TAU / 24.0).sin() + 0.01 * t as f64)
            .collect();
        let day = Season::new(24.0).unwrap();
        let names = |dominant| -> Vec<String> {
            build(
                &y,
                &Arc::new(Regimes::of(&y)),
                y.len(),
                &[day],
                &[],
                dominant,
                48,
            )
            .iter()
            .map(|c| c.name())
            .collect()
        };
        let seasonal = names(Some(day));
        assert!(seasonal.iter().any(|n| n == "ets(A,Ad,A)"), "{seasonal:?}");
        assert!(!seasonal.iter().any(|n| n == "ets(A,A,A)"), "{seasonal:?}");
        let plain = names(None);
        assert!(plain.iter().any(|n| n == "ets(A,A,N)"), "{plain:?}");
    }

    #[test]
    fn the_line_after_a_fall_that_later_spikes_would_hide_runs_from_where_it_fell() {
        // 5 min CPU busy near 33% (30 to 36, a rare step of 9 more), then idle at 0
        // or 0.33 with a spike of 13 every two hours for 292 steps (as NAB's
        // grok_asg_anomaly did): the spikes make more than the top 1% of the
        // steps, so against the whole's scale the fall of 31 was no break, and the line
        // through both regimes ran from 17 down through the next day
        let mut y: Vec<f64> = (0..1756)
            .map(|i| 33.0 + ((i * 7919) % 7) as f64 - 3.0 + if i % 150 == 0 { 9.0 } else { 0.0 })
            .collect();
        y.extend((0..292).map(|i| match i % 24 {
            23 => 13.0,
            j => 0.33 * (j % 2) as f64,
        }));
        let line = Line(Arc::new(Regimes::of(&y))).forecast(&y, 288).point;
        assert!(line.iter().all(|v| *v < 3.0), "{:?}", &line[..3]);
    }

    #[test]
    fn a_noisy_rise_shorter_than_the_horizon_is_not_run_on() {
        // a job's load rising from 10 to 60 over 100 steps through ±40 of noise, to be
        // forecast 150 steps ahead: the line and ETS's trends hold the last value, as
        // naive does; memory filling up as fast, ±1 around its line, is run on
        let noise = |i: usize| ((i * 7919) % 13) as f64 / 6.0 - 1.0;
        let excursion: Vec<f64> = (0..100)
            .map(|i| 10.0 + 0.5 * i as f64 + 40.0 * noise(i))
            .collect();
        let ramp: Vec<f64> = (0..100).map(|i| 0.5 * i as f64 + noise(i)).collect();
        let trends = ["linear", "ets(A,A,N)", "ets(A,Ad,N)"];
        let regimes = Arc::new(Regimes::of(&excursion));
        for c in build(&excursion, &regimes, excursion.len(), &[], &[], None, 48) {
            if trends.contains(&c.name().as_str()) {
                let last = excursion[99];
                let p = c.forecast(&excursion, 150).point;
                assert!(p.iter().all(|v| *v == last), "{}: {p:?}", c.name());
            }
        }
        let line = Line(Arc::default()).forecast(&ramp, 150).point;
        assert!((line[149] - 0.5 * 249.0).abs() < 2.0, "{}", line[149]);
    }

    #[test]
    fn the_shape_median_forecasts_a_changed_day_by_the_days_since() {
        // a daily profile (24 steps) that moved its peak from 9 h to 20 h three days
        // ago; the old and new days differ by more than their noise
        let peak = |at: f64| move |h: f64| 40.0 * (-(h - at).powi(2) / 8.0).exp();
        let (old, new) = (peak(9.0), peak(20.0));
        let noise = |t: usize| ((t * 7919) % 13) as f64 * 0.4 - 2.4;
        let y: Vec<f64> = (0..21 * 24)
            .map(|t| {
                let h = (t % 24) as f64;
                100.0 + if t >= 18 * 24 { new(h) } else { old(h) } + noise(t)
            })
            .collect();
        let season = Season::new(24.0).unwrap();
        let error = |lookback| {
            let p = SeasonalMedian(season, Arc::new(Regimes::default()), lookback).forecast(&y, 24);
            let e: f64 = (0..24)
                .map(|j| (p.point[j] - 100.0 - new(j as f64)).abs())
                .sum();
            e / 24.0
        };
        let (shape, plain) = (
            error(Lookback::SinceShapeChange),
            error(Lookback::SinceBreak),
        );
        // the plain median of five days holds three new and two old: close, not equal
        assert!(shape < 2.0, "since the change: {shape}");
        assert!(
            plain > 2.0 * shape,
            "since the break only: {plain} against {shape}"
        );
    }

    #[test]
    fn seasonal_naive_copies_only_the_current_regime() {
        // a 20-step iteration, idle (exactly 0) for 100 steps, resumed 12 steps ago:
        // the 8 phases not seen since hold the last value, not the idle stretch
        let busy = |t: usize| {
            if t % 20 < 3 {
                20.0
            } else {
                90.0 + (t % 7) as f64
            }
        };
        let y: Vec<f64> = (0..312)
            .map(|t| {
                if (200..300).contains(&t) {
                    0.0
                } else {
                    busy(t)
                }
            })
            .collect();
        let season = Season::new(20.0).unwrap();
        let within = SeasonalNaive(season, Some(Arc::new(Regimes::default()))).forecast(&y, 20);
        let last = y[311];
        assert_eq!(within.point[..8], [last; 8]);
        assert_eq!(within.point[8..], y[300..312]);
        let plain = SeasonalNaive(season, None).forecast(&y, 20);
        assert_eq!(plain.point[..8], [0.0; 8], "the idle stretch, copied");
    }

    #[test]
    fn a_deviation_from_the_profile_fades_in_the_decay_model_and_stays_in_smoothing() {
        // hourly: a daily profile plus deviations that keep 0.9 of themselves each
        // hour; the last hours ran 15 above the profile. The expected next two days
        // are the profile plus that deviation fading: AR(1) on the rest follows it,
        // simple smoothing carries the whole deviation into both days
        let profile = |t: usize| 50.0 + 20.0 * (2.0 * std::f64::consts::PI * t as f64 / 24.0).sin();
        let mut noise = crate::analysis::fixtures::Noise(17);
        let mut e = 0.0;
        let n = 24 * 28;
        let mut y: Vec<f64> = (0..n)
            .map(|t| {
                e = 0.9 * e + noise.normal();
                profile(t) + e
            })
            .collect();
        for (k, v) in y[n - 6..].iter_mut().enumerate() {
            *v = profile(n - 6 + k) + 15.0;
        }
        let day = [Season::new(24.0).unwrap()];
        let cache = Arc::new(DecompositionCache::new(Arc::default(), Scale::Linear));
        let level = Decomposed::build(&y, &day, cache);
        let fading = level.with_rest(Rest::Decay);
        assert_eq!(fading.name(), "mstl(24)+ar(1)");
        let error = |c: &dyn Candidate| {
            let p = c.forecast(&y, 48);
            let expected = (0..48).map(|j| profile(n + j) + 15.0 * 0.9f64.powi(j as i32 + 1));
            p.point
                .iter()
                .zip(expected)
                .map(|(f, x)| (f - x).abs())
                .sum::<f64>()
                / 48.0
        };
        let (faded, carried) = (error(&fading), error(&level));
        assert!(faded < 0.4 * carried, "ar(1) {faded}, smoothing {carried}");
    }

    #[test]
    fn naive_holds_the_last_value_with_growing_variance() {
        let p = Naive.forecast(&[1.0, 2.0, 1.0, 2.0], 3);
        assert_eq!(p.point, vec![2.0; 3]);
        assert_eq!(p.var, vec![1.0, 2.0, 3.0]);
    }
}
