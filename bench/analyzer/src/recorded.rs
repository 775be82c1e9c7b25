//! Forecast accuracy on series poolprof-exporter recorded on a real GPU
//! (`docs/validation/h100-series.sh`): each `timestamp,value` CSV of a folder is cut at
//! several origins, the last `ORIGINS` blocks of `HORIZON` steps; each block is
//! forecast from everything before it and scored like the evaluation set
//! ([`crate::fcast_eval::evaluate`]).
//!
//! Seasonal-naive uses the jobs' designed evaluation cycle (`truth.json`,
//! `evaluation_every_s`), the one cycle every GPU-wide series carries; memory series
//! (a cache grown and freed at random sizes) have no season.
//!
//! `RECORDED_SERIES=stem,stem` scores only those series (file names without `.csv`).
//! With `EVAL_SIBLINGS` set, poolprof is offered, for validation only, the periods found
//! on the histories of the recording's other activity, power/temperature/clock and PCIe
//! series at the same origin (a GPU's series share its jobs' cycles): an experiment for
//! seasons shared across a GPU, which the pipeline does not do.

use std::path::Path;

use poolprof_analyzer::source::file::read_file;

use crate::evalset::{fill, Case};
use crate::fcast_eval::evaluate;

/// Steps forecast from each origin (a minute at the recorded 1 s step).
pub const HORIZON: usize = 60;
/// Origins per series: the last blocks of [`HORIZON`] steps.
pub const ORIGINS: usize = 3;

/// Groups of recorded series, in table order, by what they measure.
pub const GROUPS: [&str; 5] = [
    "H100 activity (util, SM, tensor, DRAM)",
    "H100 power, temperature, clocks",
    "H100 memory used (GPU, per process)",
    "H100 PCIe throughput",
    "H100 per-process SM",
];

/// The group of a series named `stem` (its file name without `.csv`).
fn group(stem: &str) -> usize {
    if stem.starts_with("process_sm") {
        4
    } else if stem.contains("memory_used") || stem.starts_with("process_gpu_memory") {
        2
    } else if stem.contains("pcie") {
        3
    } else if stem.contains("power") || stem.contains("temperature") || stem.contains("clock") {
        1
    } else {
        0
    }
}

/// The recording's `truth.json` (the jobs' designed cycles); null where unreadable.
pub fn truth(dir: &Path) -> serde_json::Value {
    std::fs::read_to_string(dir.join("truth.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The training job's designed evaluation cycle, in seconds.
fn evaluation_cycle(dir: &Path) -> Option<f64> {
    truth(dir)["train"]["evaluation_every_s"].as_f64()
}

/// The cases of one recorded series: its last [`ORIGINS`] blocks, each with the
/// history before it and how many blocks from the end it starts; none for a block whose
/// history is too short or that is constant with it (nothing to forecast: every method
/// scores 0).
fn cases_of(points: &[(f64, f64)], season: Option<usize>, group: usize) -> Vec<(usize, Case)> {
    let t0 = points[0].0;
    let n = ((points.last().unwrap().0 - t0).round() as usize) + 1;
    let grid = fill(
        &points.iter().map(|(t, v)| (t - t0, *v)).collect::<Vec<_>>(),
        1.0,
        n,
    );
    (1..=ORIGINS)
        .rev()
        .filter_map(|k| {
            let origin = n.checked_sub(k * HORIZON)?;
            let history: Vec<(f64, f64)> = points
                .iter()
                .map(|(t, v)| (t - t0, *v))
                .filter(|(t, _)| (*t as usize) < origin)
                .collect();
            let filled = grid[..origin].to_vec();
            let future = grid[origin..origin + HORIZON].to_vec();
            let flat = filled.iter().chain(&future).all(|v| *v == filled[0]);
            (!flat && history.len() >= 4 * HORIZON).then(|| {
                (
                    k,
                    Case {
                        class: GROUPS[group],
                        step: 1.0,
                        seasons: season.into_iter().filter(|_| group != 2).collect(),
                        history,
                        filled,
                        future,
                        siblings: Vec::new(),
                    },
                )
            })
        })
        .collect()
}

/// Scores every method on the recorded series in `dirs` (each a folder of CSVs with
/// its `truth.json`).
pub fn run(dirs: &[String], threads: usize) {
    let mut cases = Vec::new();
    // (recording, blocks from the end) of each case, for EVAL_SIBLINGS
    let mut runs_origins = Vec::new();
    let mut series = 0;
    // RECORDED_SERIES=a,b: only the series of those file stems (e.g. the pipeline's
    // default signals)
    let only: Option<Vec<String>> = std::env::var("RECORDED_SERIES")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    for (run, dir) in dirs.iter().enumerate() {
        let dir = Path::new(dir);
        let season = evaluation_cycle(dir).map(|s| s.round() as usize);
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        files.sort();
        for path in files {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if !only.as_ref().is_none_or(|o| o.contains(&stem)) {
                continue;
            }
            let file = read_file(&path, 1.0).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let g = group(&stem);
            for s in &file.series {
                let more = cases_of(&s.points, season, g);
                series += usize::from(!more.is_empty());
                for (origin, k) in more {
                    runs_origins.push((run, origin));
                    cases.push((g, cases.len(), k));
                }
            }
        }
    }
    if std::env::var_os("EVAL_SIBLINGS").is_some() {
        offer_siblings(&mut cases, &runs_origins);
    }
    let title = format!(
        "{series} recorded series, {} forecasts ({ORIGINS} origins, {HORIZON} steps each)",
        cases.len()
    );
    evaluate(&title, &GROUPS, &cases, None, threads);
}

/// Offers each case the periods detected on the histories of the recording's activity,
/// power/temperature/clock and PCIe series at the same origin (its own excluded); `at`
/// is each case's (recording, blocks from the end).
fn offer_siblings(cases: &mut [(usize, usize, Case)], at: &[(usize, usize)]) {
    use poolprof_analyzer::analysis::periodicity::{detect_periods, PeriodConfig};
    use poolprof_analyzer::series::Series;
    let found: Vec<Vec<f64>> = cases
        .iter()
        .map(|(g, _, k)| {
            // memory (no designed cycle) and per-process series offer nothing
            if *g == 2 || *g == 4 {
                return Vec::new();
            }
            let series = Series::from_points(k.history.clone());
            detect_periods(&series, &PeriodConfig::default())
                .periods()
                .iter()
                .map(|p| p.period_seconds)
                .collect()
        })
        .collect();
    for i in 0..cases.len() {
        let mut offered: Vec<f64> = Vec::new();
        for j in 0..cases.len() {
            if j == i || at[j] != at[i] {
                continue;
            }
            for p in &found[j] {
                if !offered.iter().any(|q| (q - p).abs() < 0.03 * q) {
                    offered.push(*p);
                }
            }
        }
        cases[i].2.siblings = offered;
    }
}
