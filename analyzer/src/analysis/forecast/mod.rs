//! Forecasting: exponential smoothing with the detected season, a line as fallback,
//! 80% and 95% prediction intervals, and time to a threshold.
//!
//! Candidates: with a season of m steps (detected, or given) the three seasonal ETS
//! models (trend none, additive, damped); without one the three non-seasonal models;
//! the least-squares line always. The lowest AICc wins. Parameters are fitted on the
//! most recent [`FIT_POINTS`] steps (at least three seasons), which bounds the cost
//! for long histories and long seasons alike.
//!
//! Any finite input is accepted: isolated spikes are replaced first ([`spikes`]), and
//! the models run on the series divided by its largest magnitude, so no sum of squares
//! overflows and subnormal series keep their shape; the results are scaled back, bounds
//! saturating at ±f64::MAX.

pub mod analog;
pub mod bounds;
pub mod breaks;
pub mod candidates;
pub mod censored;
pub mod clock_shift;
pub mod decay;
pub mod decompose;
pub mod ets;
pub mod floor;
pub mod hedge;
pub mod held;
pub mod holidays;
pub mod intervals;
pub mod lag;
pub mod lattice;
pub mod linear;
pub mod logscale;
pub mod memo;
pub mod memoryless;
pub mod nested;
pub mod optimize;
pub mod paused;
pub mod pinned;
pub mod resets;
pub mod reshaped;
#[cfg(test)]
mod resume_tests;
pub mod seasonal_ar;
mod select;
pub mod shape_change;
pub mod spikes;
pub mod threshold;
pub mod usual_day;
pub mod validation;
pub mod young;

pub use threshold::{time_to_threshold, ThresholdCrossing};

use crate::analysis::extent::max_abs;
use crate::analysis::grid::{self, GridError};
use crate::analysis::periodicity::tentative::tentative_lag;
use crate::analysis::periodicity::{alternates, detect_on_grid_with_seasons, PeriodConfig};
use crate::series::Series;

use ets::Season;
use lattice::Lattice;

/// Steps fitted (the most recent), unless three seasons need more.
pub const FIT_POINTS: usize = 2048;
/// Longest horizon accepted, in steps.
pub const MAX_HORIZON: usize = 100_000;
/// Fewest grid points to forecast from.
pub const MIN_POINTS: usize = 4;
/// Gaps of up to this many steps are filled; the forecast starts after the last longer one.
pub const MAX_FILL_STEPS: usize = 10;

/// Which season to model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PeriodChoice {
    /// Detect it; the strongest period that fits twice in the data is used.
    #[default]
    Auto,
    /// This period, in seconds.
    Seconds(f64),
    /// The detector already ran and found `more_periods` (dominant first; none is an
    /// answer too): model those that fit, and the calendar's, without detecting again.
    Detected,
    /// No season.
    None,
}

/// What to forecast.
#[derive(Debug, Clone, PartialEq)]
pub struct ForecastConfig {
    /// Steps to forecast after the last sample.
    pub horizon_steps: usize,
    /// Grid step in seconds; `None` takes the median spacing of the samples.
    pub step_seconds: Option<f64>,
    /// The season to model.
    pub period: PeriodChoice,
    /// Further seasons, in seconds, modelled alongside `period` (e.g. every period the
    /// detector found, when it already ran).
    pub more_periods: Vec<f64>,
    /// Seasons, in seconds, offered to validation only, after the detected and before
    /// the calendar's (e.g. the periods found on the other series of the same GPU).
    pub candidate_periods: Vec<f64>,
    /// How the model is chosen.
    pub method: Method,
}

/// How the forecasting model is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Method {
    /// By rolling-origin validation on the series' own recent history, among naive,
    /// seasonal-naive per season, the line, ETS, and a multi-season decomposition with
    /// ETS or Theta; intervals calibrated on the validation errors.
    #[default]
    Validated,
    /// The earlier single-model method: ETS with the dominant season or the line, by
    /// AICc, with analytic intervals (kept for comparison).
    Aicc,
}

impl Default for ForecastConfig {
    fn default() -> Self {
        Self {
            horizon_steps: 60,
            step_seconds: None,
            period: PeriodChoice::Auto,
            more_periods: Vec::new(),
            candidate_periods: Vec::new(),
            method: Method::Validated,
        }
    }
}

/// A forecast with its intervals, one value per step after the last sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Forecast {
    /// The chosen model, e.g. `ets(A,Ad,A)` or `linear`.
    pub model: String,
    /// The season modelled, in seconds, if any.
    pub period_seconds: Option<f64>,
    /// Seconds between forecast values; the first is one step after the last sample.
    pub step_seconds: f64,
    /// Point forecasts.
    pub point: Vec<f64>,
    /// Lower 80% bounds.
    pub lower_80: Vec<f64>,
    /// Upper 80% bounds.
    pub upper_80: Vec<f64>,
    /// Lower 95% bounds.
    pub lower_95: Vec<f64>,
    /// Upper 95% bounds.
    pub upper_95: Vec<f64>,
}

/// Why no forecast could be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ForecastError {
    /// The horizon is zero or absurdly long.
    #[error("horizon {0} is out of range; use 1 to {MAX_HORIZON} steps")]
    BadHorizon(usize),
    /// The given period is not a positive finite number of seconds.
    #[error("period {0} s is not a positive number of seconds")]
    BadPeriod(f64),
    /// The samples could not be put on a grid.
    #[error("unusable samples: {0}")]
    Grid(#[from] GridError),
    /// Too few points after the last long gap.
    #[error("too short: {points} points after the last long gap, need at least {MIN_POINTS}")]
    TooShort {
        /// Points available.
        points: usize,
    },
    /// The point forecast is beyond ±f64::MAX (a series near the limit, extrapolated).
    #[error("the forecast leaves the range of f64 (beyond ±{:e}); the values are too close to the limit to extrapolate", f64::MAX)]
    OutOfRange,
}

/// Forecasts `series` `config.horizon_steps` steps past its last sample.
pub fn forecast(series: &Series, config: &ForecastConfig) -> Result<Forecast, ForecastError> {
    let h = config.horizon_steps;
    if h == 0 || h > MAX_HORIZON {
        return Err(ForecastError::BadHorizon(h));
    }
    if let PeriodChoice::Seconds(s) = config.period {
        if !(s.is_finite() && s > 0.0) {
            return Err(ForecastError::BadPeriod(s));
        }
    }
    let segs = grid::segments(&series.points, config.step_seconds, MAX_FILL_STEPS)?;
    let last = segs.into_iter().last().expect("at least one segment");
    if last.values.len() < MIN_POINTS {
        return Err(ForecastError::TooShort {
            points: last.values.len(),
        });
    }
    forecast_values(&last.values, last.step, config)
}

/// Most seasons modelled at once.
pub const MAX_SEASONS: usize = 3;

/// The clock's seasons, in seconds: a day and a week.
pub const CALENDAR_SECONDS: [f64; 2] = [86_400.0, 604_800.0];

/// A detected period within this fraction of a day or a week is that day or week: the
/// detector refines to a fraction of a step (24.07 h on hourly data), and a season
/// off the clock by 0.3% drifts a step every two weeks. With few cycles in the data
/// the detector resolves a period only to about period / cycles, and the tolerance
/// widens to a quarter of that (`calendar_tolerance`).
pub const CALENDAR_TOLERANCE: f64 = 0.01;

/// The fraction a detected period of `steps` may be off a calendar season in `n` points.
fn calendar_tolerance(steps: f64, n: usize) -> f64 {
    CALENDAR_TOLERANCE.max(0.25 * steps / n as f64)
}

/// Longest calendar season added without being detected, in steps (a week at 1 min).
pub const MAX_CALENDAR_STEPS: f64 = 10_080.0;

/// Most harmonics of a calendar season that stand for it: a day whose shape has two
/// to six peaks (a morning and an evening rush; shifts).
pub const MAX_HARMONIC: f64 = 6.0;

/// The calendar season (in steps) that the dominant detected period (the first of
/// `periods`, in steps) is a harmonic of (the season over 2 to [`MAX_HARMONIC`]), where
/// it is modelled at `step` seconds ([`on_calendar`]) and fits in `n` points: the
/// detector found a daily shape's peaks (8, 12 and 4 hours) but not the day, and three
/// seasons of a few hours each filled every place the day could have been modelled in,
/// so that the day was never tried. The other periods need not be harmonics: a
/// commuter count's weekends split the day's harmonics into lines a week apart (11.2
/// and 8.8 hours beside 12 and 8 on Seattle's bicycle counts), and where every period
/// had to be a harmonic those kept the day out.
fn fundamental(periods: &[f64], step: f64, n: usize) -> Option<f64> {
    let dominant = *periods.first()?;
    let modelled = CALENDAR_SECONDS.iter().filter(|c| on_calendar(**c, step));
    modelled.map(|c| c / step).find(|&c| {
        let tolerance = calendar_tolerance(c, n) * c;
        fits(n, c) && harmonic(dominant, c, tolerance)
    })
}

/// Whether `p` steps is a side line of the calendar's day at `step` seconds in `n`
/// points: within [`SIDE_LINE_WEEKS`] of a week's frequency of the day or one of its
/// harmonics (up to [`MAX_HARMONIC`]) and not on it. A day whose height changes from
/// week to week (a commuter count's weekends, a spell of weather) splits into lines
/// beside the day and its harmonics (22.9 and 25.2 hours beside 24 on Seattle's
/// bicycle counts); modelled in front of the calendar's seasons, two such lines took
/// the week's place.
fn side_line(p: f64, step: f64, n: usize) -> bool {
    let day = CALENDAR_SECONDS[0] / step;
    if !on_calendar(CALENDAR_SECONDS[0], step) || !fits(n, day) || p <= 0.0 {
        return false;
    }
    let k = (day / p).round();
    let on_it = (p * k - day).abs() <= calendar_tolerance(day, n) * day;
    let week_frequency = step / CALENDAR_SECONDS[1];
    let distance = (1.0 / p - k / day).abs();
    (1.0..=MAX_HARMONIC).contains(&k) && !on_it && distance <= SIDE_LINE_WEEKS * week_frequency
}

/// How far from the day's lines a side line may be, in a week's frequency: a week's
/// modulation puts them one week's frequency away, and the detector's refinement a
/// little off that (never half way to the next harmonic, 3.5 weeks' frequencies).
pub const SIDE_LINE_WEEKS: f64 = 1.5;

/// How far a harmonic may be from its place, in steps: a period is moved to the whole
/// step a series repeats best at (a day's fifth harmonic, 4.8 hours, to 5).
const HARMONIC_STEPS: f64 = 0.5;

/// Whether `s` is the season `c` over `k` from 2 to [`MAX_HARMONIC`]: `k` times `s`
/// within `tolerance` of `c`, or within half a step of it `k` times over.
fn harmonic(s: f64, c: f64, tolerance: f64) -> bool {
    let k = (c / s).round();
    (2.0..=MAX_HARMONIC).contains(&k) && (s * k - c).abs() <= tolerance.max(k * HARMONIC_STEPS)
}

/// Whether calendar season `c` (seconds) is modelled at `step` seconds: a whole number
/// of steps, at most [`MAX_CALENDAR_STEPS`].
fn on_calendar(c: f64, step: f64) -> bool {
    c / step <= MAX_CALENDAR_STEPS && (c / step).fract() == 0.0
}

/// The seasons to model: the detected or given ones first (dominant first), then a day
/// and a week where the data holds two of them, though undetected, as candidates for
/// validation to accept or reject; each at least twice in the data, whole steps where
/// within [`WHOLE_STEP_TOLERANCE`] of one (or within [`CALENDAR_TOLERANCE`] of the
/// calendar), without repeats. Where a detector ran and found none, a tentative season
/// of the longest busy stretch between stops comes before the calendar's. A detected
/// harmonic of a longer detected season comes last: that season's models hold its
/// shape already, and kept in front it took the place of a week (a day detected with
/// its 8 and 12 hour peaks was never modelled with its week).
fn seasons_of(y: &[f64], step: f64, config: &ForecastConfig) -> Seasons {
    let (choice, more) = (config.period, &config.more_periods);
    // a season the caller gave is kept as given; a detected one is moved to the lag the
    // series repeats best at (`lag::best_lag`), and only a detector's silence earns a
    // tentative season
    let detects = !matches!(choice, PeriodChoice::Seconds(_));
    let mut seconds: Vec<f64> = match choice {
        PeriodChoice::None => return Seasons::default(),
        PeriodChoice::Seconds(s) => vec![s],
        PeriodChoice::Detected => Vec::new(),
        PeriodChoice::Auto => detect_on_grid_with_seasons(y, step, &PeriodConfig::default()).1,
    };
    seconds.extend(more.iter().copied().filter(|s| s.is_finite() && *s > 0.0));
    for s in seconds.iter_mut() {
        let tolerance = calendar_tolerance(*s / step, y.len());
        if let Some(c) = CALENDAR_SECONDS
            .iter()
            .find(|c| (*s - *c).abs() <= tolerance * *c)
        {
            *s = *c;
        }
    }
    let in_steps = |s: f64| match whole_steps(s / step) {
        m if detects && !CALENDAR_SECONDS.contains(&s) => lag::best_lag(y, m),
        m => m,
    };
    let mut periods: Vec<f64> = seconds.iter().map(|&s| in_steps(s)).collect();
    let mut harmonics = Vec::new();
    if detects {
        let longer = |p: f64| {
            periods
                .iter()
                .any(|&c| fits(y.len(), c) && harmonic(p, c, 0.0))
        };
        // a harmonic of a longer period, or a side line of the day other than the
        // dominant period, goes behind the calendar
        let dominant = periods.first().copied();
        let behind = |p: f64| longer(p) || (Some(p) != dominant && side_line(p, step, y.len()));
        (harmonics, periods) = periods.iter().partition(|&&p| behind(p));
        if let Some(day) = fundamental(&periods, step, y.len()) {
            // the periods left (the day's harmonics, their weekly side lines) go behind
            // the calendar's seasons, the strongest first
            let of_day = std::mem::replace(&mut periods, vec![day]);
            harmonics.splice(..0, of_day);
        }
    }
    let given = periods.len();
    // no season detected or given: the busy stretch's tentative one, for validation
    let tentative = (given == 0 && detects)
        .then(|| tentative_lag(y, &PeriodConfig::default()))
        .flatten()
        .map(|lag| in_steps(lag * step));
    periods.extend(tentative);
    // a series that alternates every step, as the last steps fitted show: the detector
    // reports nothing that short
    let recent = &y[y.len().saturating_sub(FIT_POINTS)..];
    let two_steps = given == 0 && detects && tentative.is_none() && alternates(recent);
    periods.extend(two_steps.then_some(2.0));
    let offered = config.candidate_periods.iter().copied();
    periods.extend(offered.filter(|s| s.is_finite() && *s > 0.0).map(in_steps));
    let calendar = CALENDAR_SECONDS.iter().filter(|c| on_calendar(**c, step));
    periods.extend(calendar.map(|c| c / step));
    periods.extend(harmonics);
    let mut out = Seasons {
        hour: (on_calendar(CALENDAR_SECONDS[0], step) && (3_600.0 / step).fract() == 0.0)
            .then_some((3_600.0 / step) as usize),
        ..Seasons::default()
    };
    for (i, period) in periods.into_iter().enumerate() {
        let repeat = out.all.iter().any(|o| (o.period() - period).abs() < 0.5);
        if !fits(y.len(), period) || repeat {
            continue;
        }
        if let Some(season) = Season::new(period) {
            out.all.push(season);
            out.given += usize::from(i < given);
            if i == given && tentative.is_some() {
                out.tentative = Some(season);
            }
        }
        if out.all.len() == MAX_SEASONS {
            break;
        }
    }
    out
}

/// The seasons a forecast may model, in steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seasons {
    /// The detected or given seasons (dominant first), then a tentative one, the
    /// offered ones, then the calendar's: each fits twice in the data.
    all: Vec<Season>,
    /// How many lead `all` as detected or given.
    given: usize,
    /// The tentative season ([`tentative_lag`]), one of `all`, when no season was
    /// detected or given: a candidate for validation, and the cycle whose stops are cut.
    tentative: Option<Season>,
    /// Steps in an hour, where the calendar's day is modelled and an hour is whole steps.
    hour: Option<usize>,
}

impl Seasons {
    /// Every season, the detected or given first.
    pub fn all(&self) -> &[Season] {
        &self.all
    }

    /// The detected or given seasons, dominant first.
    pub fn detected(&self) -> &[Season] {
        &self.all[..self.given]
    }

    /// The tentative season, when there is one.
    pub fn tentative(&self) -> Option<Season> {
        self.tentative
    }

    /// Steps in an hour, where the calendar's day is modelled and an hour is whole steps.
    pub fn hour(&self) -> Option<usize> {
        self.hour
    }

    /// The dominant season: the first detected or given.
    pub fn dominant(&self) -> Option<Season> {
        self.detected().first().copied()
    }
}

/// Steps within this of a whole number are a whole number of steps.
pub const WHOLE_STEP_TOLERANCE: f64 = 0.05;

/// A period in steps, snapped to the whole number it is within
/// [`WHOLE_STEP_TOLERANCE`] of. Detection refines a period to a fraction of a step (a
/// day of hourly data reads as 86,370 s): left fractional, the season's phase
/// interpolates between states and drifts from the clock's. A period clearly between
/// whole steps (a 37.3-step training iteration) stays fractional, which keeps it aligned.
pub fn whole_steps(period: f64) -> f64 {
    let whole = period.round();
    if (period - whole).abs() <= WHOLE_STEP_TOLERANCE {
        whole
    } else {
        period
    }
}

fn fits(n: usize, period: f64) -> bool {
    period >= 2.0 && n as f64 >= 2.0 * period + 2.0
}

/// Forecasts evenly spaced `y` `h` steps ahead with the season `choice` (validated).
pub fn forecast_grid(
    y: &[f64],
    step: f64,
    choice: PeriodChoice,
    h: usize,
) -> Result<Forecast, ForecastError> {
    let config = ForecastConfig {
        horizon_steps: h,
        step_seconds: Some(step),
        period: choice,
        ..ForecastConfig::default()
    };
    forecast_values(y, step, &config)
}

/// Forecasts evenly spaced `y` (step `step` seconds) as `config` says, after replacing
/// isolated spikes, on the series scaled to a largest magnitude of 1.
pub fn forecast_values(
    y: &[f64],
    step: f64,
    config: &ForecastConfig,
) -> Result<Forecast, ForecastError> {
    let mut y = y.to_vec();
    spikes::replace_spikes(&mut y);
    // after the spikes: one absurd sample would make a lattice of two values
    let grid = (config.method == Method::Validated)
        .then(|| Lattice::of(&y))
        .flatten();
    let scale = max_abs(&y);
    if scale > 0.0 {
        for v in y.iter_mut() {
            *v /= scale;
        }
    }
    let seasons = seasons_of(&y, step, config);
    let h = config.horizon_steps;
    let unit = match config.method {
        Method::Validated => select::forecast_validated(&y, &seasons, h),
        Method::Aicc => select::forecast_by_aicc(&y, seasons.dominant(), h),
    };
    let unit = Forecast {
        period_seconds: unit.period_seconds.map(|p| p * step),
        step_seconds: step,
        ..unit
    };
    let scale = if scale > 0.0 { scale } else { 1.0 };
    let point: Vec<f64> = unit
        .point
        .iter()
        .map(|v| grid.map_or(v * scale, |g| g.nearest(v * scale)))
        .collect();
    if point.iter().any(|v| !v.is_finite()) {
        return Err(ForecastError::OutOfRange);
    }
    // A bound beyond f64 says "at least this far"; the largest finite value says that
    // too, and keeps every consumer (JSON, metrics, the threshold) on numbers.
    let bound = |b: &[f64], outward: fn(&Lattice, f64) -> f64| -> Vec<f64> {
        b.iter()
            .map(|v| grid.map_or(v * scale, |g| outward(&g, v * scale)))
            .map(|v| v.clamp(-f64::MAX, f64::MAX))
            .collect()
    };
    let (lower_95, upper_95) = (
        bound(&unit.lower_95, Lattice::below),
        bound(&unit.upper_95, Lattice::above),
    );
    // Where both bands reach the series' bounds, scaling back can leave the 80% band
    // an ulp outside the 95% one; a consumer may rely on the nesting.
    let lower_80 = nested_within(bound(&unit.lower_80, Lattice::below), &lower_95, f64::max);
    let upper_80 = nested_within(bound(&unit.upper_80, Lattice::above), &upper_95, f64::min);
    Ok(Forecast {
        lower_80,
        upper_80,
        lower_95,
        upper_95,
        point,
        ..unit
    })
}

/// `inner` with each bound moved no further out than `outer`'s (`inward` picks).
fn nested_within(inner: Vec<f64>, outer: &[f64], inward: fn(f64, f64) -> f64) -> Vec<f64> {
    inner
        .iter()
        .zip(outer)
        .map(|(i, o)| inward(*i, *o))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seasonal(n: usize) -> Series {
        Series::from_values(
            &(0..n)
                .map(|i| {
                    5.0 + (2.0 * std::f64::consts::PI * i as f64 / 24.0).sin()
                        + 0.01 * ((i * 37) % 7) as f64
                })
                .collect::<Vec<_>>(),
            60.0,
        )
    }

    #[test]
    fn auto_finds_the_season_and_returns_exactly_the_horizon() {
        let cfg = ForecastConfig {
            horizon_steps: 30,
            ..Default::default()
        };
        let f = forecast(&seasonal(480), &cfg).unwrap();
        let period = f.period_seconds.expect("a season");
        assert!((period - 1440.0).abs() < 1440.0 * 0.01, "{period}");
        for v in [&f.point, &f.lower_80, &f.upper_80, &f.lower_95, &f.upper_95] {
            assert_eq!(v.len(), 30);
        }
        assert!(f.lower_95[0] < f.lower_80[0] && f.upper_80[0] < f.upper_95[0]);
    }

    #[test]
    fn a_refined_daily_period_is_forecast_as_a_whole_number_of_steps() {
        // hourly, 14 days, one busy hour a day (a nightly batch) over a flat base; the
        // detector refines the day to 86,370 s, but the season must stay 24 steps
        let busy = |i: usize| if i % 24 == 3 { 10.0 } else { 1.0 };
        let points: Vec<(f64, f64)> = (0..24 * 14)
            .map(|i| (3600.0 * i as f64, busy(i) + 0.01 * ((i * 7919) % 7) as f64))
            .collect();
        let cfg = ForecastConfig {
            horizon_steps: 48,
            period: PeriodChoice::Seconds(86_370.0),
            ..Default::default()
        };
        let f = forecast(&Series::from_points(points), &cfg).unwrap();
        assert_eq!(f.period_seconds, Some(86_400.0));
        let n = 24 * 14;
        for (h, v) in f.point.iter().enumerate() {
            let truth = busy(n + h);
            assert!((v - truth).abs() < 1.0, "step {h}: {v} against {truth}");
        }
    }

    #[test]
    fn a_days_harmonics_stand_for_the_day() {
        // hourly, 30 days: a detector that found 8, 12 and 4 hours (a daily shape with
        // three peaks) filled every place; the day goes first, the week second, and
        // the strongest harmonic takes the place left
        let n = 24 * 30;
        let y: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64).collect();
        let detected = |more_periods: Vec<f64>| {
            let cfg = ForecastConfig {
                period: PeriodChoice::Detected,
                more_periods,
                ..Default::default()
            };
            seasons_of(&y, 3600.0, &cfg)
        };
        let periods = |s: &Seasons| s.all().iter().map(|s| s.period()).collect::<Vec<_>>();
        let seasons = detected(vec![28_800.0, 43_200.0, 14_400.0]);
        assert_eq!(periods(&seasons), vec![24.0, 168.0, 8.0]);
        assert_eq!(seasons.dominant().map(|s| s.period()), Some(24.0));
        assert_eq!(
            seasons.detected().len(),
            1,
            "the harmonics are no longer detected"
        );
        // a day found with its peaks; and an eighth harmonic (3 h, beyond the
        // harmonics that stand for a day) that is the fourth of 12 hours
        let seasons = detected(vec![28_800.0, 86_400.0, 43_200.0]);
        assert_eq!(periods(&seasons), vec![24.0, 168.0, 8.0]);
        let seasons = detected(vec![28_800.0, 43_200.0, 10_800.0]);
        assert_eq!(periods(&seasons), vec![24.0, 168.0, 8.0]);
        // two seasons of their own stay, the longer within six of the shorter or not
        let seasons = detected(vec![86_400.0, 604_800.0]);
        assert_eq!(periods(&seasons), vec![24.0, 168.0]);
        assert_eq!(seasons.detected().len(), 2);
        let seasons = detected(vec![36_000.0, 86_400.0]);
        assert_eq!(periods(&seasons), vec![10.0, 24.0, 168.0]);
        // an hourly cron on 1 min data is no shape of the day (its 24th harmonic), nor
        // is a dominant 10 hours beside 8, nor a day that does not fit twice
        assert_eq!(fundamental(&[60.0], 60.0, 1440 * 7), None);
        assert_eq!(fundamental(&[10.0, 8.0], 3600.0, n), None);
        assert_eq!(fundamental(&[8.0], 3600.0, 40), None);
        assert_eq!(fundamental(&[8.0, 12.1], 3600.0, n), Some(24.0));
        assert_eq!(fundamental(&[], 3600.0, n), None);
        // the day's peaks with their weekly side lines (11.2 = 168 / 15 hours): the day
        // and the week first, the strongest harmonic in the place left
        assert_eq!(fundamental(&[12.0, 11.2, 8.0], 3600.0, n), Some(24.0));
        let seasons = detected(vec![43_200.0, 40_320.0, 28_800.0]);
        assert_eq!(periods(&seasons), vec![24.0, 168.0, 12.0]);
    }

    #[test]
    fn a_days_side_lines_leave_the_week_its_place() {
        // Seattle's bicycle counts: the day found with two lines beside it (22.93 and
        // 25.18 hours, the day's height changing over weeks) took both places left,
        // and the week was never modelled
        let n = 24 * 42;
        let y: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64).collect();
        let cfg = ForecastConfig {
            period: PeriodChoice::Detected,
            more_periods: vec![86_400.0, 82_544.5, 90_633.7],
            ..Default::default()
        };
        let seasons = seasons_of(&y, 3600.0, &cfg);
        let periods: Vec<f64> = seasons.all().iter().map(|s| s.period()).collect();
        assert_eq!(periods[..2], [24.0, 168.0], "{periods:?}");
        assert_eq!(seasons.dominant().map(|s| s.period()), Some(24.0));
        // lines a week's frequency from the day or its harmonics (21 = 1 / (1/24 +
        // 1/168), 11.2 = 168 / 15); never the day, its harmonics, the week, or lines
        // further off (9.6 is half way between two harmonics); nothing where the day
        // does not fit twice
        for p in [22.93, 25.18, 21.0, 28.0, 11.2, 8.4] {
            assert!(side_line(p, 3600.0, n), "{p}");
        }
        for p in [24.0, 12.0, 8.0, 168.0, 9.6, 13.7] {
            assert!(!side_line(p, 3600.0, n), "{p}");
        }
        assert!(!side_line(22.93, 3600.0, 40));
    }

    /// The model and MAE of a forecast 48 h ahead of an office week that ends on a
    /// Friday evening, whose detector found `detected` (seconds).
    fn office_weekend(detected: Vec<f64>) -> (String, f64) {
        use crate::analysis::fixtures::{office_day, office_hours};
        let y = office_hours(33, &[], 7);
        let config = ForecastConfig {
            horizon_steps: 48,
            step_seconds: Some(3600.0),
            period: PeriodChoice::Detected,
            more_periods: detected,
            ..Default::default()
        };
        let f = forecast(&Series::from_values(&y, 3600.0), &config).expect("forecast");
        let mae = (0..48)
            .map(|j| (f.point[j] - office_day(y.len() + j, &[])).abs())
            .sum::<f64>()
            / 48.0;
        (f.model, mae)
    }

    #[test]
    fn a_day_found_with_its_side_lines_is_forecast_with_its_week() {
        let (model, mae) = office_weekend(vec![86_400.0, 82_544.5, 90_633.7]);
        assert!(mae < 3.0, "{model} MAE {mae:.1}");
    }

    #[test]
    fn a_day_found_with_its_peaks_is_forecast_with_its_week() {
        // the detector found the day's peaks (8, 12 and 4.8 hours): the weekend ahead
        // is forecast as a weekend
        let (model, mae) = office_weekend(vec![28_800.0, 43_200.0, 17_280.0]);
        assert!(mae < 3.0, "{model} MAE {mae:.1}");
    }

    #[test]
    fn a_detector_that_found_nothing_still_leaves_the_calendar_to_validation() {
        // hourly, three weeks of a daily shape: with the detector's empty answer the
        // day and the week are still candidates (as with `Auto`); `None` models no
        // season at all
        let points: Vec<(f64, f64)> = (0..24 * 21)
            .map(|i| {
                let day = (2.0 * std::f64::consts::PI * i as f64 / 24.0).sin();
                (
                    3600.0 * i as f64,
                    10.0 + 3.0 * day + 0.01 * ((i * 7919) % 7) as f64,
                )
            })
            .collect();
        let series = Series::from_points(points);
        let with = |period| ForecastConfig {
            horizon_steps: 24,
            period,
            ..Default::default()
        };
        let detected = forecast(&series, &with(PeriodChoice::Detected)).unwrap();
        let calendar = detected.period_seconds.expect("a calendar season");
        assert!(CALENDAR_SECONDS.contains(&calendar), "{calendar}");
        let none = forecast(&series, &with(PeriodChoice::None)).unwrap();
        assert_eq!(none.period_seconds, None, "{none:?}");
    }

    #[test]
    fn too_little_data_for_the_season_falls_back_to_no_season() {
        let cfg = ForecastConfig {
            horizon_steps: 5,
            period: PeriodChoice::Seconds(3600.0 * 24.0),
            ..Default::default()
        };
        let f = forecast(&seasonal(100), &cfg).unwrap();
        assert_eq!(f.period_seconds, None);
    }

    #[test]
    fn bad_requests_are_refused() {
        let s = seasonal(100);
        let zero = ForecastConfig {
            horizon_steps: 0,
            ..Default::default()
        };
        assert_eq!(forecast(&s, &zero), Err(ForecastError::BadHorizon(0)));
        let neg = ForecastConfig {
            period: PeriodChoice::Seconds(-1.0),
            ..Default::default()
        };
        assert!(matches!(
            forecast(&s, &neg),
            Err(ForecastError::BadPeriod(_))
        ));
        let short = Series::from_values(&[1.0, 2.0, 3.0], 1.0);
        assert!(matches!(
            forecast(&short, &ForecastConfig::default()),
            Err(ForecastError::TooShort { points: 3 })
        ));
    }

    #[test]
    fn memory_growing_linearly_crosses_its_limit_with_an_interval() {
        let s = Series::from_values(
            &(0..200)
                .map(|i| 1000.0 + 10.0 * i as f64 + ((i * 13) % 5) as f64)
                .collect::<Vec<_>>(),
            15.0,
        );
        let f = forecast(
            &s,
            &ForecastConfig {
                horizon_steps: 100,
                period: PeriodChoice::None,
                ..Default::default()
            },
        )
        .unwrap();
        // Reaches 3500 about 50 steps after the last sample (value ~2990 at step 199).
        let c = time_to_threshold(&f, 3500.0).expect("crossing");
        let point = c.seconds_point.expect("point crossing");
        assert!((point / 15.0 - 51.0).abs() <= 2.0, "{point}");
        assert!(c.seconds_earliest <= point);
        assert!(c.seconds_latest.is_none_or(|l| l >= point));
        assert_eq!(time_to_threshold(&f, 1e9), None);
    }

    fn seasonal_values(n: usize) -> Vec<f64> {
        seasonal(n).values().collect()
    }

    fn auto(h: usize) -> ForecastConfig {
        ForecastConfig {
            horizon_steps: h,
            ..Default::default()
        }
    }

    fn all_finite(f: &Forecast) -> bool {
        [&f.point, &f.lower_80, &f.upper_80, &f.lower_95, &f.upper_95]
            .iter()
            .all(|v| v.iter().all(|x| x.is_finite()))
    }

    #[test]
    fn one_absurd_sample_leaves_the_season_and_a_sane_forecast() {
        for (at, spike) in [(240, 1.7e308), (240, 1e200), (100, -1e200), (479, 1e200)] {
            let mut y = seasonal_values(480);
            y[at] = spike;
            let f = forecast(&Series::from_values(&y, 60.0), &auto(30)).unwrap();
            let period = f
                .period_seconds
                .unwrap_or_else(|| panic!("{spike} at {at}: {f:?}"));
            assert!((period - 1440.0).abs() < 1440.0 * 0.01, "{period}");
            assert!(all_finite(&f), "{f:?}");
            assert!(
                f.point.iter().all(|v| (3.5..=6.5).contains(v)),
                "{spike} at {at}: {:?}",
                f.point
            );
        }
    }

    #[test]
    fn one_absurd_sample_in_a_short_series_leaves_sane_nested_bands() {
        // 30 samples at 5 (to 1e-9), one of them -5e10: the bands stay near 5
        let y: Vec<f64> = (0..30)
            .map(|t| {
                if t == 28 {
                    -5e10
                } else {
                    5.0 + 1e-9 * (t % 3) as f64
                }
            })
            .collect();
        let flat = ForecastConfig {
            period: PeriodChoice::None,
            ..auto(3)
        };
        let f = forecast(&Series::from_values(&y, 1.0), &flat).unwrap();
        assert_bands_hold_points(&f);
        let near = |v: &f64| (4.0..6.0).contains(v);
        assert!(f.lower_95.iter().chain(&f.upper_95).all(near), "{f:?}");
        // tiny values whose bands meet the series' bounds: the 80% band stays inside
        // the 95% one (scaling back once left it an ulp outside)
        let tiny = [
            -2.489314788921947e-302,
            4.5611907120798526e-302,
            1.2922446858333803e-301,
            2.322426707361572e-301,
            2.5782068316466884e-301,
            3.7120738982009487e-301,
            4.464018398056735e-301,
            5.048092515687148e-301,
            5.581846342959893e-301,
            6.267241462224098e-301,
            6.354389677850634e-301,
            7.337575814893698e-301,
        ];
        let f = forecast(&Series::from_values(&tiny, 1.0), &auto(1)).unwrap();
        assert!(
            f.lower_80[0] >= f.lower_95[0] && f.upper_80[0] <= f.upper_95[0],
            "{f:?}"
        );
    }

    #[test]
    fn every_band_holds_its_point_where_a_model_without_variance_erred_in_validation() {
        // a seasonal median of exact blocks: no variance, yet validation saw errors
        let y: Vec<f64> = (0..600)
            .map(|t| [0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0][(t / 10 + t / 70) % 7])
            .collect();
        let f = forecast(&Series::from_values(&y, 1.0), &auto(60)).unwrap();
        assert_bands_hold_points(&f);
    }

    #[test]
    fn a_series_in_whole_percent_is_forecast_in_whole_percent() {
        // a process's SM share in 10 s samples: mostly 1%, now and then 0, 2 or 3%
        let y: Vec<f64> = (0..600)
            .map(|t| [1.0, 1.0, 0.0, 1.0, 2.0, 1.0, 3.0, 1.0][((t / 10 * 2_654_435_761) >> 9) % 8])
            .collect();
        let flat = ForecastConfig {
            period: PeriodChoice::None,
            ..auto(60)
        };
        let f = forecast(&Series::from_values(&y, 1.0), &flat).unwrap();
        let whole = |v: f64| (v - v.round()).abs() < 1e-6;
        assert!(f.point.iter().all(|v| whole(*v)), "{:?}", f.point);
        for (lo, hi) in [(&f.lower_80, &f.upper_80), (&f.lower_95, &f.upper_95)] {
            assert!(lo.iter().chain(hi).all(|v| whole(*v)), "{lo:?} {hi:?}");
        }
        assert_bands_hold_points(&f);
    }

    fn assert_bands_hold_points(f: &Forecast) {
        for (lo, hi) in [(&f.lower_80, &f.upper_80), (&f.lower_95, &f.upper_95)] {
            let inside = |((l, p), u): ((&f64, &f64), &f64)| l <= p && p <= u;
            let point = &f.point;
            assert!(
                lo.iter().zip(point).zip(hi).all(inside),
                "{lo:?} {point:?} {hi:?}"
            );
        }
    }

    #[test]
    fn a_series_that_alternates_every_step_goes_on_alternating() {
        for size in [1.0, 1e308] {
            let alternating: Vec<f64> = (0..201).map(|i| size * [1.0, -1.0][i % 2]).collect();
            let f = forecast(&Series::from_values(&alternating, 60.0), &auto(6)).unwrap();
            let expected: Vec<f64> = (0..6).map(|j| size * [-1.0, 1.0][j % 2]).collect();
            assert_eq!(f.point, expected, "{f:?}");
            assert_eq!(f.period_seconds, Some(120.0));
        }
    }

    #[test]
    fn values_near_the_f64_limits_forecast_finite_numbers() {
        let alternating: Vec<f64> = (0..200)
            .map(|i| if i % 2 == 0 { 1e308 } else { -1e308 })
            .collect();
        let f = forecast(&Series::from_values(&alternating, 60.0), &auto(10)).unwrap();
        assert!(all_finite(&f), "{f:?}");
        assert!(f.lower_95.iter().zip(&f.upper_95).all(|(l, u)| l <= u));
        // The crossing of a threshold is found on saturated bounds too.
        let c = time_to_threshold(&f, 1e308).expect("the upper bound reaches 1e308");
        assert!(c.seconds_earliest.is_finite() && c.seconds_earliest > 0.0);

        let huge: Vec<f64> = seasonal_values(480).iter().map(|v| v * 2e307).collect();
        let f = forecast(&Series::from_values(&huge, 60.0), &auto(30)).unwrap();
        assert!(all_finite(&f), "{f:?}");
        assert!(f.period_seconds.is_some(), "{f:?}");

        // A line heading past f64::MAX cannot be forecast: an error, not infinity.
        let line: Vec<f64> = (0..100).map(|i| i as f64 * 1.7e306).collect();
        let none = ForecastConfig {
            horizon_steps: 50,
            period: PeriodChoice::None,
            ..Default::default()
        };
        assert_eq!(
            forecast(&Series::from_values(&line, 60.0), &none),
            Err(ForecastError::OutOfRange)
        );
    }

    #[test]
    fn subnormal_series_forecast_their_shape() {
        let tiny: Vec<f64> = seasonal_values(480).iter().map(|v| v * 1e-312).collect();
        let f = forecast(&Series::from_values(&tiny, 60.0), &auto(30)).unwrap();
        assert!(f.period_seconds.is_some(), "{f:?}");
        assert!(all_finite(&f));
        assert!(
            f.point.iter().all(|v| (3.5e-312..=6.5e-312).contains(v)),
            "{:?}",
            f.point
        );
        let smallest = forecast(&Series::from_values(&[5e-324; 50], 60.0), &auto(5)).unwrap();
        assert!(
            smallest.point.iter().all(|v| *v == 5e-324 || *v == 0.0),
            "{smallest:?}"
        );
        let zeros = forecast(&Series::from_values(&[0.0; 50], 60.0), &auto(5)).unwrap();
        assert!(zeros.point.iter().all(|v| *v == 0.0), "{zeros:?}");
    }
}
