//! The analyses compared: poolprof-analyzer and augurs, each periods + forecast.

use augurs_core::{Fit, Predict};
use augurs_ets::AutoETS;
use augurs_seasons::{Detector as _, PeriodogramDetector};
use poolprof_analyzer::analysis::forecast::{forecast, ForecastConfig, Method, PeriodChoice};
use poolprof_analyzer::analysis::periodicity::{detect_with_seasons, PeriodConfig};
use poolprof_analyzer::series::Series;

/// Which implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// poolprof-analyzer.
    Ours,
    /// augurs-seasons + augurs-ets AutoETS.
    Augurs,
}

impl Engine {
    /// From a command-line word.
    pub fn parse(s: &str) -> Engine {
        match s {
            "ours" => Engine::Ours,
            "augurs" => Engine::Augurs,
            other => panic!("unknown engine {other}; use ours or augurs"),
        }
    }
}

/// What one engine says about one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Periods in steps, dominant first.
    pub periods: Vec<f64>,
    /// Point forecast.
    pub forecast: Vec<f64>,
}

/// Periods, then a forecast of `horizon` steps (ours uses the detected period).
/// With `BENCH_PERIODS_ONLY` set in the environment, both engines skip the forecast.
pub fn ours(values: &[f64], step: f64, horizon: usize) -> Answer {
    let series = Series::from_values(values, step);
    let detection = detect_with_seasons(&series, &PeriodConfig::default());
    let periods: Vec<f64> = detection
        .reported
        .periods()
        .iter()
        .map(|p| p.period_seconds / step)
        .collect();
    if std::env::var_os("BENCH_PERIODS_ONLY").is_some() {
        return Answer {
            periods,
            forecast: vec![0.0; horizon],
        };
    }
    let config = ForecastConfig {
        horizon_steps: horizon,
        step_seconds: Some(step),
        // every period found, as the pipeline hands them over
        period: PeriodChoice::Detected,
        more_periods: detection.seasons,
        candidate_periods: Vec::new(),
        // BENCH_METHOD=aicc: the earlier single-model method, for before/after timings
        method: if std::env::var("BENCH_METHOD").as_deref() == Ok("aicc") {
            Method::Aicc
        } else {
            Method::Validated
        },
    };
    let f = forecast(&series, &config).expect("forecast");
    Answer {
        periods,
        forecast: f.point,
    }
}

/// augurs: the Welch-periodogram detector's periods (strongest first) and a
/// non-seasonal AutoETS forecast (augurs-ets has no seasonal models).
pub fn augurs(values: &[f64], horizon: usize) -> Answer {
    if std::env::var_os("BENCH_PERIODS_ONLY").is_some() {
        return Answer {
            periods: augurs_periods(values),
            forecast: vec![0.0; horizon],
        };
    }
    Answer {
        periods: augurs_periods(values),
        forecast: augurs_forecast(values, horizon),
    }
}

/// augurs-seasons' periods with its defaults (periods 4 to 512 steps), strongest
/// first (it lists them weakest first).
pub fn augurs_periods(values: &[f64]) -> Vec<f64> {
    strongest_first(PeriodogramDetector::default().detect(values))
}

/// augurs-seasons' periods with the period range widened to a third of the series,
/// as ours searches.
pub fn augurs_periods_wide(values: &[f64]) -> Vec<f64> {
    let detector = PeriodogramDetector::builder()
        .max_period((values.len() / 3) as u32)
        .build();
    strongest_first(detector.detect(values))
}

fn strongest_first(detected: Vec<u32>) -> Vec<f64> {
    let mut periods: Vec<f64> = detected.into_iter().map(f64::from).collect();
    periods.reverse();
    periods
}

/// augurs-ets AutoETS (ZZN) point forecast; the last value repeated if it fails.
pub fn augurs_forecast(values: &[f64], horizon: usize) -> Vec<f64> {
    AutoETS::non_seasonal()
        .fit(values)
        .ok()
        .and_then(|m| m.predict(horizon, None).ok())
        .map(|f| f.point)
        .unwrap_or_else(|| vec![*values.last().unwrap_or(&0.0); horizon])
}
