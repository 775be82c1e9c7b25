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

/// Share of cases whose every true period is reported within `tol` (relative).
fn detection_rate(cases: &[Case], tol: f64) -> (f64, Vec<String>) {
    let mut misses = Vec::new();
    let hits = cases
        .iter()
        .filter(|c| {
            let out = detect(c);
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
    (hits as f64 / cases.len() as f64, misses)
}

#[test]
fn seasonal_series_are_detected_within_two_percent() {
    let mut report = Vec::new();
    let mut failed = false;
    for (i, kind) in Kind::SEASONAL.iter().enumerate() {
        for (j, (snr, want)) in [(f64::INFINITY, 0.95), (2.0, 0.95), (1.0, 0.95), (0.5, 0.8)]
            .into_iter()
            .enumerate()
        {
            let cs = cases(*kind, snr, 100 + 10 * i as u64 + j as u64);
            let (rate, misses) = detection_rate(&cs, 0.02);
            report.push(format!("{kind:?} snr={snr}: {rate:.2} (want {want})"));
            if rate < want {
                failed = true;
                report.extend(misses.into_iter().take(3).map(|m| format!("    {m}")));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(!failed, "{}", report.join("\n"));
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
