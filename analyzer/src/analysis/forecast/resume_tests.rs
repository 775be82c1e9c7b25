//! A training job resumed after an idle stretch, a few cycles ago: the forecast is its
//! iterations again, not the idle cycles (seasonal median) nor the climb out of idle
//! (a seasonal trend whose states start before the break).

use std::sync::Arc;

use super::breaks::Regimes;
use super::candidates::{Candidate, Lookback, SeasonalMedian};
use super::ets::Season;

/// A 65-step iteration (15 s steps) with a 3-step dip, and a little deterministic noise.
fn busy(t: usize) -> f64 {
    let base = if t % 65 < 3 { 11.0 } else { 92.0 };
    base + 0.5 * ((t * 7919) % 5) as f64 - 1.0
}

/// Mean absolute error of `point`, the forecast of steps `start`.., against `truth`.
pub(super) fn mae_from(point: &[f64], start: usize, truth: impl Fn(usize) -> f64) -> f64 {
    let sum: f64 = point
        .iter()
        .enumerate()
        .map(|(j, v)| (v - truth(start + j)).abs())
        .sum();
    sum / point.len() as f64
}

/// `n` steps, idle (exactly 0) from `idle.0` to `idle.1`.
fn resumed(n: usize, idle: (usize, usize)) -> Vec<f64> {
    (0..n)
        .map(|t| {
            if (idle.0..idle.1).contains(&t) {
                0.0
            } else {
                busy(t)
            }
        })
        .collect()
}

#[test]
fn the_seasonal_median_forgets_the_idle_cycles_before_a_resume() {
    // idle for four cycles, resumed two cycles ago: three of the last five cycles
    // are idle, and their median at every phase is 0
    let y = resumed(65 * 12, (65 * 6, 65 * 10));
    let season = Season::new(65.0).unwrap();
    let p =
        SeasonalMedian(season, Arc::new(Regimes::default()), Lookback::SinceBreak).forecast(&y, 65);
    for (j, v) in p.point.iter().enumerate() {
        let truth = busy(y.len() + j);
        assert!((v - truth).abs() < 2.0, "step {j}: {v} against {truth}");
    }
}

#[test]
fn a_seasonal_trend_is_not_run_from_before_a_recent_resume() {
    // the failure seen on the evaluation set: idle for 466 steps, resumed 133 steps
    // (two cycles) ago; the trend models' states, run from before the resume,
    // extrapolated the climb out of idle
    let n = 5760;
    let y = resumed(n, (n - 133 - 466, n - 133));
    let season = Season::new(65.0).unwrap();
    let train = &y[n - 2048..n - 1200];
    for c in super::candidates::build(
        train,
        &std::sync::Arc::new(super::breaks::Regimes::of(train)),
        train.len(),
        &[season],
        &[season],
        Some(season),
        240,
    ) {
        if !c.name().starts_with("ets(A,A") {
            continue;
        }
        let p = c.forecast(&y[n - 2048..], 240);
        let mae = mae_from(&p.point, n, busy);
        assert!(mae < 5.0, "{}: mae {mae}", c.name());
    }
}

/// A recorded series cut at `origin`: the history before it and the minute after it.
fn cut_at(run: &str, name: &str, origin: usize) -> (Vec<f64>, Vec<f64>) {
    let series = crate::analysis::fixtures::recorded(run, name, origin + 60);
    let mut history: Vec<f64> = series.values().collect();
    let next = history.split_off(origin);
    (history, next)
}

#[test]
fn a_cycle_split_by_a_stop_is_forecast_with_its_tentative_season() {
    // run8's SM activity: 35 s cycles for 150 s, stopped 110 s, resumed for 152 s; no
    // period passes the test on it, the next minute repeats the cycle
    let (history, next) = cut_at("run8", "gpu_sm_active", 417);
    let f = crate::analysis::fixtures::forecast_steps(&history, 1.0, 60);
    assert_eq!(f.period_seconds, Some(35.0), "model {}", f.model);
    let mae = mae_from(&f.point, 0, |j| next[j]);
    let naive = mae_from(&vec![history[416]; 60], 0, |j| next[j]);
    assert!(
        mae < 0.5 * naive,
        "{}: MAE {mae:.3}, naive {naive:.3}",
        f.model
    );
}

#[test]
fn a_season_offered_for_validation_is_taken_where_it_forecasts_better() {
    // run9's graphics clock: a 45 s cycle of boost plateaus on a wandering base, stopped
    // 100 s at the boost; no period passes the test and the busy stretch, which starts
    // at the idle clock, repeats too weakly for a tentative season
    let (history, next) = cut_at("run9", "gpu_clock_hz-graphics", 481);
    let without = crate::analysis::fixtures::forecast_steps(&history, 1.0, 60);
    assert_eq!(without.period_seconds, None, "model {}", without.model);
    let config = super::ForecastConfig {
        horizon_steps: 60,
        candidate_periods: vec![45.0],
        ..super::ForecastConfig::default()
    };
    let with = super::forecast(&crate::series::Series::from_values(&history, 1.0), &config)
        .expect("forecast");
    assert_eq!(with.period_seconds, Some(45.0), "model {}", with.model);
    let err = |f: &[f64]| mae_from(f, 0, |j| next[j]);
    assert!(
        err(&with.point) < 0.8 * err(&without.point),
        "{} {:.0} against {} {:.0}",
        with.model,
        err(&with.point),
        without.model,
        err(&without.point)
    );
}
