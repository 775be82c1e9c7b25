//! Periodicity detection on the impulsive suite ([`crate::impulsive`]): found within
//! 2% per shape and cycle count, false positives per aperiodic kind, poolprof against
//! augurs-seasons on the same series.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use poolprof_analyzer::analysis::grid;
use poolprof_analyzer::analysis::periodicity::{detect_periods, PeriodConfig};
use poolprof_analyzer::series::Series;

use crate::engines;
use crate::impulsive::{aperiodic, periodic, Aperiodic, Case, Periods, Shape, STEP};

/// Cycle counts of the periodic rows unless `--cycles` gives others.
pub const CYCLES: [f64; 4] = [6.0, 9.0, 12.0, 20.0];

/// `--cycles A,B,...`: cycle counts of the periodic rows, each at least 1.
pub fn parse_cycles(text: &str) -> Result<Vec<f64>, String> {
    let bad = || format!("--cycles {text:?}: want a comma list of cycle counts, each >= 1");
    let counts: Vec<f64> = text
        .split(',')
        .map(|c| c.trim().parse::<f64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    counts
        .iter()
        .all(|c| c.is_finite() && *c >= 1.0)
        .then_some(counts)
        .ok_or_else(bad)
}

/// Detectors in table order.
const NAMES: [&str; 3] = [
    "poolprof",
    "augurs-seasons (defaults)",
    "augurs-seasons (max period n/3)",
];

/// Which seed set: one for development, another, never looked at while developing,
/// for the reported table.
fn base_seed(set: &str) -> u64 {
    match set {
        "dev" => 11_000_000,
        "report" => 0x5eed_2026_0000,
        other => panic!("unknown seed set {other}; use dev or report"),
    }
}

/// Periods (in steps) each detector reports for `case`, poolprof's first.
fn answers(case: &Case) -> [Vec<f64>; 3] {
    let ours = detect_periods(
        &Series::from_points(case.points.clone()),
        &PeriodConfig::default(),
    )
    .periods()
    .iter()
    .map(|p| p.period_seconds / STEP)
    .collect();
    // augurs needs an even grid: the same grid ours builds (short gaps filled).
    let values = grid::segments(&case.points, Some(STEP), 10)
        .map(|s| grid::longest(s).values)
        .unwrap_or_default();
    if values.len() < 8 {
        return [ours, Vec::new(), Vec::new()];
    }
    [
        ours,
        engines::augurs_periods(&values),
        engines::augurs_periods_wide(&values),
    ]
}

/// Within 2%; for augurs, which reports whole steps, within max(2%, half a step).
pub fn within(got: f64, truth: f64, whole_steps: bool) -> bool {
    let tol = if whole_steps {
        (0.02 * truth).max(0.5)
    } else {
        0.02 * truth
    };
    (got - truth).abs() <= tol
}

/// Prints both tables for `per_cell` series per shape and count of `cycles`.
pub fn run(set: &str, per_cell: usize, periods: Periods, cycles: &[f64]) {
    let base = base_seed(set);
    println!(
        "Seed set `{set}`, {per_cell} series per cell, periods {}-{} steps; cell: any reported period within 2% (first reported within 2%).",
        periods.lo, periods.hi
    );
    println!();
    println!("| shape | cycles | {} |", NAMES.join(" | "));
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut total = [0usize; 3];
    let mut count = 0usize;
    let show = std::env::var_os("BENCH_SHOW_MISSES").is_some();
    // series whose first period reported is not the cycle
    let show_first = std::env::var_os("BENCH_SHOW_FIRST").is_some();
    for (s, shape) in Shape::ALL.iter().enumerate() {
        for (c, cycles) in cycles.iter().enumerate() {
            let mut any = [0usize; 3];
            let mut first = [0usize; 3];
            for i in 0..per_cell {
                let seed = base + (s * 100_000 + c * 10_000 + i) as u64;
                let case = periodic(
                    *shape,
                    *cycles,
                    periods,
                    &mut ChaCha8Rng::seed_from_u64(seed),
                );
                let truth = case.period_steps.expect("periodic");
                for (e, got) in answers(&case).iter().enumerate() {
                    let whole = e > 0;
                    if got.iter().any(|g| within(*g, truth, whole)) {
                        any[e] += 1;
                    } else if e == 0 && show {
                        eprintln!(
                            "miss {shape:?} {cycles} seed {seed}: truth {truth:.2} got {got:?} {}",
                            explain(&case)
                        );
                    }
                    if got.first().is_some_and(|g| within(*g, truth, whole)) {
                        first[e] += 1;
                    } else if e == 0 && show_first {
                        eprintln!(
                            "first {shape:?} {cycles} seed {seed}: truth {truth:.3} got {got:?}"
                        );
                    }
                }
            }
            let cells: Vec<String> = (0..3)
                .map(|e| {
                    format!(
                        "{:.0}% ({:.0}%)",
                        pct(any[e], per_cell),
                        pct(first[e], per_cell)
                    )
                })
                .collect();
            println!("| {shape:?} | {cycles} | {} |", cells.join(" | "));
            for e in 0..3 {
                total[e] += any[e];
            }
            count += per_cell;
        }
    }
    let cells: Vec<String> = total
        .iter()
        .map(|t| format!("**{:.1}%**", pct(*t, count)))
        .collect();
    let (fewest, most) = cycles.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), c| {
        (lo.min(*c), hi.max(*c))
    });
    println!(
        "| all ({count} series) | {fewest}–{most} | {} |",
        cells.join(" | ")
    );
    println!();
    println!("| aperiodic kind | series | {} |", NAMES.join(" | "));
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut fp_total = [0usize; 3];
    let per_kind = 2 * per_cell;
    for (k, kind) in Aperiodic::ALL.iter().enumerate() {
        let mut fp = [0usize; 3];
        for i in 0..per_kind {
            let seed = base + (900_000 + k * 10_000 + i) as u64;
            let case = aperiodic(*kind, periods, &mut ChaCha8Rng::seed_from_u64(seed));
            for (e, got) in answers(&case).iter().enumerate() {
                if !got.is_empty() {
                    fp[e] += 1;
                    if e == 0 && show {
                        eprintln!("false positive {kind:?} seed {seed}: {got:?}");
                    }
                }
            }
        }
        let cells: Vec<String> = fp
            .iter()
            .map(|f| format!("{:.1}%", pct(*f, per_kind)))
            .collect();
        println!("| {kind:?} | {per_kind} | {} |", cells.join(" | "));
        for e in 0..3 {
            fp_total[e] += fp[e];
        }
    }
    let n = per_kind * Aperiodic::ALL.len();
    let cells: Vec<String> = fp_total
        .iter()
        .map(|f| format!("**{:.1}%**", pct(*f, n)))
        .collect();
    println!("| all | {n} | {} |", cells.join(" | "));
}

fn pct(x: usize, n: usize) -> f64 {
    100.0 * x as f64 / n.max(1) as f64
}

/// What the harmonic test saw (development aid): n, and per candidate its period,
/// harmonics, p-value and autocorrelation hill.
fn explain(case: &Case) -> String {
    use poolprof_analyzer::analysis::periodicity::{
        acf, harmonics, prepare, significance, spectrum,
    };
    let Ok(segs) = grid::segments(&case.points, Some(STEP), 10) else {
        return String::new();
    };
    let mut x = grid::longest(segs).values;
    let n = x.len();
    prepare::detrend_and_clip(&mut x);
    let s = spectrum::Spectra::of(&x);
    let Some(w) = significance::whiten(&s.power, 3, (n as f64 / 2.5) as usize) else {
        return String::new();
    };
    let rule = acf::HillRule {
        min_height: 0.1,
        min_prominence: 0.1,
    };
    let cs: Vec<String> = harmonics::candidates(&s.power, &w, 1.0)
        .iter()
        .map(|c| {
            let t = n as f64 / c.k;
            let hill = acf::confirm(s.acf(), t, (1.5 * t * t / n as f64).max(1.5), rule);
            format!(
                "T={t:.2} H={} p={:.2e} hill={:?}",
                c.harmonics,
                c.p,
                hill.map(|h| (h.lag, h.height))
            )
        })
        .collect();
    format!("n={n} {}", cs.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_counts_are_a_comma_list_of_at_least_one_cycle() {
        assert_eq!(parse_cycles("40,80, 160"), Ok(vec![40.0, 80.0, 160.0]));
        assert_eq!(parse_cycles("6"), Ok(vec![6.0]));
        for bad in ["", "40,", "0.5", "x", "40,inf", "-6"] {
            assert!(parse_cycles(bad).is_err(), "{bad}");
        }
    }
}
