//! Accuracy on the labelled suite: period detection and forecast error, ours vs peers.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::engines;
use crate::inputs::{uniform, POINTS, STEP};
use crate::synthetic::{generate, Case, Kind};

/// Steps held out for forecasts: one day at one minute.
const HOLDOUT: usize = 1_440;
/// Noise levels (signal std / noise std) of the periodicity rows.
const SNRS: [f64; 4] = [f64::INFINITY, 2.0, 1.0, 0.5];

fn cases(kind: Kind, snr: f64, n: usize, seed: u64) -> Vec<Case> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| generate(kind, POINTS, STEP, snr, &mut rng))
        .collect()
}

/// A reported period matches a true one within 2% (and ±0.5 step, for integer-only peers).
fn matches(got_steps: f64, truth_steps: f64) -> bool {
    (got_steps - truth_steps).abs() <= (0.02 * truth_steps).max(0.5)
}

/// Period detectors compared.
const DETECTORS: usize = 3;

struct Tally {
    hits: [usize; DETECTORS],
    all_hits: [usize; DETECTORS],
    total: usize,
}

/// Prints the period-detection table.
fn periods_table(per_cell: usize) {
    println!("| periodicity (n = {POINTS}, step {STEP} s) | poolprof | augurs-seasons (defaults) | augurs-seasons (max period n/3) |");
    println!("| --- | --- | --- | --- |");
    for (j, snr) in SNRS.iter().enumerate() {
        let mut t = Tally {
            hits: [0; DETECTORS],
            all_hits: [0; DETECTORS],
            total: 0,
        };
        for (i, kind) in Kind::SEASONAL.iter().enumerate() {
            for case in cases(*kind, *snr, per_cell, 7_000 + 100 * i as u64 + j as u64) {
                let y = uniform(&case);
                let truth: Vec<f64> = case.periods.iter().map(|p| p / STEP).collect();
                let answers = [
                    engines::ours(&y, STEP, 1).periods,
                    engines::augurs_periods(&y),
                    engines::augurs_periods_wide(&y),
                ];
                for (e, got) in answers.iter().enumerate() {
                    if got.iter().any(|g| matches(*g, truth[0])) {
                        t.hits[e] += 1;
                    }
                    if truth.iter().all(|tr| got.iter().any(|g| matches(*g, *tr))) {
                        t.all_hits[e] += 1;
                    }
                }
                t.total += 1;
            }
        }
        let cells: Vec<String> = (0..DETECTORS)
            .map(|e| {
                let pct = |x: usize| 100.0 * x as f64 / t.total as f64;
                format!("{:.1}% / {:.1}%", pct(t.hits[e]), pct(t.all_hits[e]))
            })
            .collect();
        println!(
            "| detected, SNR {snr} ({} series): dominant / every period within 2% | {} |",
            t.total,
            cells.join(" | ")
        );
    }
    for (i, kind) in Kind::APERIODIC.iter().enumerate() {
        let cs = cases(*kind, f64::INFINITY, per_cell * 2, 8_000 + i as u64);
        let mut fp = [0usize; DETECTORS];
        for case in &cs {
            let y = uniform(case);
            let found = [
                engines::ours(&y, STEP, 1).periods,
                engines::augurs_periods(&y),
                engines::augurs_periods_wide(&y),
            ];
            for (e, f) in found.iter().enumerate() {
                if !f.is_empty() {
                    fp[e] += 1;
                }
            }
        }
        let cells: Vec<String> = fp
            .iter()
            .map(|x| format!("{:.1}%", 100.0 * *x as f64 / cs.len() as f64))
            .collect();
        println!(
            "| false positives, {kind:?} ({} series) | {} |",
            cs.len(),
            cells.join(" | ")
        );
    }
}

fn mae(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64
}

fn smape(actual: &[f64], pred: &[f64]) -> f64 {
    100.0
        * actual
            .iter()
            .zip(pred)
            .map(|(a, p)| 2.0 * (a - p).abs() / (a.abs() + p.abs()).max(1e-12))
            .sum::<f64>()
        / actual.len() as f64
}

/// Seasonal naive: the last season repeated.
fn seasonal_naive(train: &[f64], m: usize, h: usize) -> Vec<f64> {
    let n = train.len();
    (0..h).map(|j| train[n - m + j % m]).collect()
}

/// Prometheus `predict_linear` over the last `window` samples: a least-squares line.
fn predict_linear(train: &[f64], window: usize, h: usize) -> Vec<f64> {
    let y = &train[train.len() - window..];
    let n = y.len() as f64;
    let tm = (n - 1.0) / 2.0;
    let ym = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        sxy += (i as f64 - tm) * (v - ym);
        sxx += (i as f64 - tm).powi(2);
    }
    let b = sxy / sxx;
    (1..=h)
        .map(|j| ym + b * (n - 1.0 + j as f64 - tm))
        .collect()
}

/// Prints the forecast-error table.
fn forecast_table(per_cell: usize) {
    let names = [
        "poolprof",
        "seasonal naive",
        "predict_linear (last day)",
        "augurs AutoETS",
    ];
    let mut smapes = [0.0; 4];
    let mut mases = [0.0; 4];
    let mut count = 0.0;
    for (i, kind) in Kind::SEASONAL.iter().enumerate() {
        for (j, snr) in [2.0, 1.0].iter().enumerate() {
            for case in cases(*kind, *snr, per_cell, 9_000 + 10 * i as u64 + j as u64) {
                let y = uniform(&case);
                let (train, test) = y.split_at(y.len() - HOLDOUT);
                let m = (case.periods[0] / STEP).round() as usize;
                let scale = mae(&train[m..], &train[..train.len() - m]);
                let preds = [
                    engines::ours(train, STEP, HOLDOUT).forecast,
                    seasonal_naive(train, m, HOLDOUT),
                    predict_linear(train, HOLDOUT, HOLDOUT),
                    engines::augurs_forecast(train, HOLDOUT),
                ];
                for (k, p) in preds.iter().enumerate() {
                    smapes[k] += smape(test, p);
                    mases[k] += mae(test, p) / scale;
                }
                count += 1.0;
            }
        }
    }
    println!();
    println!("| forecast, {count} seasonal series, horizon {HOLDOUT} steps | mean sMAPE (%) | mean MASE |");
    println!("| --- | --- | --- |");
    for k in 0..4 {
        println!(
            "| {} | {:.2} | {:.3} |",
            names[k],
            smapes[k] / count,
            mases[k] / count
        );
    }
}

/// Prints both tables.
pub fn run(per_cell: usize) {
    periods_table(per_cell);
    forecast_table((per_cell / 2).max(1));
}
