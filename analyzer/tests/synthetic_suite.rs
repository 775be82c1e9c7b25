//! The labelled synthetic suite: detection rate, period error and false positives of
//! the periodicity detector, and forecast error against seasonal-naive.

mod synthetic;

use poolprof_analyzer::analysis::periodicity::{detect_periods, PeriodConfig, PeriodOutcome};
use poolprof_analyzer::series::Series;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use synthetic::{generate, Case, Kind};

/// Points per generated series: two weeks at ten minutes.
const N: usize = 2016;
/// Seconds between samples.
const STEP: f64 = 600.0;
/// Series per kind and noise level.
const PER_CELL: usize = 25;

fn cases(kind: Kind, snr: f64, seed: u64) -> Vec<Case> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..PER_CELL)
        .map(|_| generate(kind, N, STEP, snr, &mut rng))
        .collect()
}

fn detect(case: &Case) -> PeriodOutcome {
    detect_periods(
        &Series::from_points(case.points.clone()),
        &PeriodConfig::default(),
    )
}

/// Share of cases whose every true period is reported within `tol` (relative), and
/// the relative errors of the matches.
fn detection_rate(cases: &[Case], tol: f64) -> (f64, Vec<String>, Vec<f64>) {
    let mut misses = Vec::new();
    let mut errors = Vec::new();
    let hits = cases
        .iter()
        .filter(|c| {
            let out = detect(c);
            for truth in &c.periods {
                let best = out
                    .periods()
                    .iter()
                    .map(|p| ((p.period_seconds - truth) / truth).abs())
                    .fold(f64::INFINITY, f64::min);
                if best <= tol {
                    errors.push(best);
                }
            }
            let ok = c.periods.iter().all(|truth| {
                out.periods()
                    .iter()
                    .any(|p| ((p.period_seconds - truth) / truth).abs() <= tol)
            });
            if !ok {
                misses.push(format!("truth {:?} got {:?}", c.periods, out));
            }
            ok
        })
        .count();
    (hits as f64 / cases.len() as f64, misses, errors)
}

#[test]
fn seasonal_series_are_detected_within_two_percent() {
    let mut report = Vec::new();
    let mut failed = false;
    let mut all_errors = Vec::new();
    for (i, kind) in Kind::SEASONAL.iter().enumerate() {
        for (j, (snr, want)) in [(f64::INFINITY, 0.95), (2.0, 0.95), (1.0, 0.95), (0.5, 0.8)]
            .into_iter()
            .enumerate()
        {
            let cs = cases(*kind, snr, 100 + 10 * i as u64 + j as u64);
            let (rate, misses, errors) = detection_rate(&cs, 0.02);
            all_errors.extend(errors);
            report.push(format!("{kind:?} snr={snr}: {rate:.2} (want {want})"));
            if rate < want {
                failed = true;
                report.extend(misses.into_iter().take(3).map(|m| format!("    {m}")));
            }
        }
    }
    all_errors.sort_by(f64::total_cmp);
    let median = all_errors[all_errors.len() / 2];
    let p90 = all_errors[all_errors.len() * 9 / 10];
    report.push(format!(
        "relative period error: median {median:.5}, 90th percentile {p90:.5}"
    ));
    eprintln!("{}", report.join("\n"));
    assert!(!failed, "{}", report.join("\n"));
    assert!(median < 0.002 && p90 < 0.01, "{}", report.join("\n"));
}

#[test]
fn aperiodic_series_rarely_get_a_period() {
    let mut report = Vec::new();
    let mut total_fp = 0;
    let mut total = 0;
    for (i, kind) in Kind::APERIODIC.iter().enumerate() {
        let cs: Vec<Case> = (0..4)
            .flat_map(|r| cases(*kind, f64::INFINITY, 900 + 10 * i as u64 + r))
            .collect();
        let fps: Vec<String> = cs
            .iter()
            .filter_map(|c| match detect(c) {
                PeriodOutcome::Periodic(p) => Some(format!("{p:?}")),
                PeriodOutcome::NoPeriod { .. } => None,
            })
            .collect();
        report.push(format!(
            "{kind:?}: {} / {} false positives {:?}",
            fps.len(),
            cs.len(),
            fps.iter().take(2).collect::<Vec<_>>()
        ));
        total_fp += fps.len();
        total += cs.len();
        assert!(
            fps.len() as f64 <= 0.08 * cs.len() as f64,
            "{}",
            report.join("\n")
        );
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        total_fp as f64 <= 0.05 * total as f64,
        "{}",
        report.join("\n")
    );
}

/// Steps held out for the forecast check.
const HOLDOUT: usize = 200;

/// Mean absolute error of the seasonal-naive forecast inside `train` (the MASE scale).
fn naive_scale(train: &[f64], m: usize) -> f64 {
    let d: Vec<f64> = train.windows(m + 1).map(|w| (w[m] - w[0]).abs()).collect();
    d.iter().sum::<f64>() / d.len() as f64
}

fn seasonal_naive(train: &[f64], m: usize, h: usize) -> Vec<f64> {
    let n = train.len();
    (0..h).map(|j| train[n - m + j % m]).collect()
}

fn mae(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64
}

fn smape(actual: &[f64], pred: &[f64]) -> f64 {
    actual
        .iter()
        .zip(pred)
        .map(|(a, p)| 2.0 * (a - p).abs() / (a.abs() + p.abs()).max(1e-12))
        .sum::<f64>()
        / actual.len() as f64
}

#[test]
fn forecasts_beat_seasonal_naive_on_seasonal_series() {
    use poolprof_analyzer::analysis::forecast::{forecast, ForecastConfig};
    let (mut ours_mase, mut naive_mase, mut ours_smape, mut naive_smape) = (0.0, 0.0, 0.0, 0.0);
    let mut count = 0.0;
    let mut coverage = (0usize, 0usize);
    let kinds = [
        Kind::Sine,
        Kind::Square,
        Kind::Sawtooth,
        Kind::Bursts,
        Kind::TrendSeason,
        Kind::Outliers,
        Kind::TwoPeriods,
    ];
    for (i, kind) in kinds.iter().enumerate() {
        for snr in [2.0, 1.0] {
            let mut rng = ChaCha8Rng::seed_from_u64(5000 + i as u64);
            for _ in 0..8 {
                let case = generate(*kind, N, STEP, snr, &mut rng);
                let y = case.values();
                let (train, test) = y.split_at(N - HOLDOUT);
                let m = (case.periods[0] / STEP).round() as usize;
                let config = ForecastConfig {
                    horizon_steps: HOLDOUT,
                    ..ForecastConfig::default()
                };
                let f = forecast(
                    &Series::from_points(case.points[..N - HOLDOUT].to_vec()),
                    &config,
                )
                .unwrap();
                assert_eq!(f.point.len(), HOLDOUT);
                let naive = seasonal_naive(train, m, HOLDOUT);
                let scale = naive_scale(train, m);
                ours_mase += mae(test, &f.point) / scale;
                naive_mase += mae(test, &naive) / scale;
                ours_smape += smape(test, &f.point);
                naive_smape += smape(test, &naive);
                count += 1.0;
                for (j, v) in test.iter().enumerate() {
                    coverage.1 += 1;
                    if (f.lower_95[j]..=f.upper_95[j]).contains(v) {
                        coverage.0 += 1;
                    }
                }
            }
        }
    }
    let (om, nm, os, ns) = (
        ours_mase / count,
        naive_mase / count,
        ours_smape / count,
        naive_smape / count,
    );
    let cov = coverage.0 as f64 / coverage.1 as f64;
    eprintln!(
        "MASE ours {om:.3} naive {nm:.3}; sMAPE ours {os:.4} naive {ns:.4}; 95% coverage {cov:.3}"
    );
    assert!(
        om < 0.85 * nm,
        "MASE {om} not 15% below seasonal-naive {nm}"
    );
    assert!(
        os < 0.85 * ns,
        "sMAPE {os} not 15% below seasonal-naive {ns}"
    );
    assert!((0.85..=0.995).contains(&cov), "95% interval covered {cov}");
}
