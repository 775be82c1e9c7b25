//! The real analyses behind the pipeline seam: periods, forecasts at each horizon and
//! the capacity crossing, on series whose answers are known.

use std::time::Duration;

use poolprof_analyzer::pipeline::{Analyses, AnalysisRequest, Analyze};
use poolprof_analyzer::series::Series;

const STEP: f64 = 15.0;

fn request(horizons: &[u64], threshold: Option<f64>) -> AnalysisRequest {
    AnalysisRequest {
        step_seconds: STEP,
        horizons: horizons.iter().map(|s| Duration::from_secs(*s)).collect(),
        threshold,
    }
}

#[test]
fn a_square_wave_has_its_period_and_forecasts_stay_in_range() {
    // Six hours at 15 s of a 300 s duty cycle: 240 s busy, 60 s idle.
    let values: Vec<f64> = (0..1441)
        .map(|i| if (i * 15) % 300 < 240 { 0.9 } else { 0.1 })
        .collect();
    let series = Series::from_values(&values, STEP);
    let a = Analyses::default().analyze(&series, &request(&[900, 3600], None));
    let p = a.periods.first().expect("a period");
    assert!((p.period_seconds - 300.0).abs() / 300.0 < 0.02, "{p:?}");
    assert!(p.strength > 0.5 && p.confidence > 0.9, "{p:?}");
    assert_eq!(a.forecasts.len(), 2);
    assert_eq!(a.forecasts[0].horizon, Duration::from_secs(900));
    for f in &a.forecasts {
        assert!(f.lower <= f.point && f.point <= f.upper, "{f:?}");
        assert!(f.point > 0.0 && f.point < 1.0, "{f:?}");
    }
    assert!(a.time_to_threshold.is_none(), "no threshold asked");
}

#[test]
fn rising_memory_reaches_its_capacity_in_about_the_linear_time() {
    // 40 GB growing 1 MB/s with a little noise; 80 GB is 40,000 s past the start, i.e.
    // 40,000 - 21,600 = 18,400 s after the last sample.
    let values: Vec<f64> = (0..1441)
        .map(|i| 40e9 + (i as f64 * STEP) * 1e6 + if i % 2 == 0 { 5e6 } else { -5e6 })
        .collect();
    let series = Series::from_values(&values, STEP);
    let a = Analyses::default().analyze(&series, &request(&[3600, 6 * 3600], Some(80e9)));
    assert!(
        a.periods.is_empty(),
        "a trend is not a period: {:?}",
        a.periods
    );
    let eta = a.time_to_threshold.expect("a crossing within 6h");
    let point = eta.point.expect("the point forecast crosses");
    assert!((point - 18_400.0).abs() < 1_000.0, "{eta:?}");
    assert!(eta.lower <= point, "{eta:?}");
    let at_1h = a.forecasts[0];
    assert!(
        (at_1h.point - (40e9 + 25_200.0 * 1e6)).abs() < 0.5e9,
        "{at_1h:?}"
    );
}

#[test]
fn a_flat_series_has_no_period_but_a_forecast() {
    let series = Series::from_values(&vec![0.001; 1441], STEP);
    let a = Analyses::default().analyze(&series, &request(&[3600], None));
    assert!(a.periods.is_empty());
    assert!(a.no_period_reason.is_some());
    assert_eq!(a.forecasts.len(), 1);
    assert!((a.forecasts[0].point - 0.001).abs() < 1e-6);
}

#[test]
fn a_too_short_series_reports_why_instead_of_forecasting() {
    let series = Series::from_values(&[1.0, 2.0], STEP);
    let a = Analyses::default().analyze(&series, &request(&[3600], None));
    assert!(a.forecasts.is_empty());
    assert!(a.forecast_error.is_some());
}
