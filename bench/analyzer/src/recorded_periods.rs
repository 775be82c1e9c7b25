//! Periodicity on series poolprof-exporter recorded on the H100
//! (`docs/validation/h100-series.sh`), cut to a few cycles: the issue's "6 cycles or
//! more" checked on real GPU signals rather than generated ones.
//!
//! The training job of every recording runs an evaluation pass every
//! `evaluation_every_s` seconds (`truth.json`); the series that carry it are chosen by
//! what they measure, before looking at any result: the GPU-wide activity series, the
//! power draw and the training process's SM use ([`CARRIERS`]). Each is cut into
//! windows of exactly `cycles` evaluation cycles that lie inside one stretch in which
//! the training job worked (`record.log`, "jobs work in"), starting every third of a
//! cycle, and each window is handed to `detect_periods` as it was recorded (1 s
//! samples, gaps and all). A window counts as found when any reported period is within
//! 2% of the evaluation cycle. The other jobs sharing the GPU run on through every
//! window (an inference load on a compressed day, a memory cache grown and freed):
//! their cycles are there too, as on a pooled GPU.

use std::path::Path;

use poolprof_analyzer::analysis::grid;
use poolprof_analyzer::analysis::periodicity::{detect_periods, detect_with_seasons, PeriodConfig};
use poolprof_analyzer::series::Series;
use poolprof_analyzer::source::file::read_file;

use crate::engines;
use crate::recorded::evaluation_cycle;

/// Series (file stems) that carry the training job's evaluation cycle, by group.
pub const CARRIERS: [(&str, &[&str]); 3] = [
    (
        "GPU activity (util, SM, occupancy, tensor, DRAM, memory controller)",
        &[
            "gpu_utilization",
            "gpu_sm_active",
            "gpu_sm_occupancy",
            "gpu_tensor_any_active",
            "gpu_dram_active",
            "gpu_memory_controller_utilization",
        ],
    ),
    ("GPU power draw", &["gpu_power_watts"]),
    (
        "training process's SM use",
        &["process_sm_utilization-train"],
    ),
];

/// Windows start this fraction of a cycle apart.
const OFFSET_CYCLES: f64 = 1.0 / 3.0;

/// Found counts of one group at one cycle count.
#[derive(Default, Clone, Copy)]
struct Tally {
    windows: usize,
    ours: usize,
    ours_first: usize,
    ours_none: usize,
    augurs: usize,
}

/// The stretches (seconds since the recording's start) in which the training job
/// worked, from `record.log`; the whole recording when it says "all" or nothing.
fn training_stretches(dir: &Path, length_s: f64) -> Vec<(f64, f64)> {
    let log = std::fs::read_to_string(dir.join("record.log")).unwrap_or_default();
    let spec = log
        .lines()
        .find_map(|l| l.split("jobs work in (s): train ").nth(1))
        .map(|rest| {
            rest.split(", infer")
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        });
    let stretches: Vec<(f64, f64)> = spec
        .iter()
        .flat_map(|s| s.split(','))
        .filter_map(|w| {
            let (a, b) = w.trim().split_once('-')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    if stretches.is_empty() {
        vec![(0.0, length_s)]
    } else {
        stretches
    }
}

/// Start times (seconds since the recording's start) of every window of `width`
/// seconds inside one of `stretches` and inside the recording.
fn window_starts(stretches: &[(f64, f64)], width: f64, cycle: f64, length_s: f64) -> Vec<f64> {
    let mut out = Vec::new();
    for &(a, b) in stretches {
        let end = b.min(length_s);
        let mut t = a;
        while t + width <= end {
            out.push(t);
            t += cycle * OFFSET_CYCLES;
        }
    }
    out
}

/// Whether `got` seconds is within 2% of `truth` (for augurs, which reports whole
/// steps, within max(2%, half a step)).
fn within(got: f64, truth: f64, whole_steps: bool) -> bool {
    let tol = if whole_steps {
        (0.02 * truth).max(0.5)
    } else {
        0.02 * truth
    };
    (got - truth).abs() <= tol
}

/// Scores one window of `points` (absolute timestamps) against `cycle` seconds.
fn score(points: &[(f64, f64)], cycle: f64, tally: &mut Tally) {
    let found: Vec<f64> = detect_periods(
        &Series::from_points(points.to_vec()),
        &PeriodConfig::default(),
    )
    .periods()
    .iter()
    .map(|p| p.period_seconds)
    .collect();
    tally.windows += 1;
    tally.ours += usize::from(found.iter().any(|p| within(*p, cycle, false)));
    tally.ours_first += usize::from(found.first().is_some_and(|p| within(*p, cycle, false)));
    tally.ours_none += usize::from(found.is_empty());
    let values = grid::segments(points, Some(1.0), 10)
        .map(|s| grid::longest(s).values)
        .unwrap_or_default();
    if values.len() >= 8 {
        let augurs = engines::augurs_periods(&values);
        tally.augurs += usize::from(augurs.iter().any(|p| within(*p, cycle, true)));
    }
    if std::env::var_os("BENCH_SHOW_MISSES").is_some()
        && !found.iter().any(|p| within(*p, cycle, false))
    {
        eprintln!(
            "miss: cycle {cycle} s, window {:.0}-{:.0} s, got {found:?}; before the held-noise test {:?}",
            points.first().map_or(0.0, |p| p.0),
            points.last().map_or(0.0, |p| p.0),
            detect_with_seasons(&Series::from_points(points.to_vec()), &PeriodConfig::default())
                .seasons
        );
    }
}

/// Prints found rates per group and cycle count over the recordings in `dirs`.
pub fn run(dirs: &[String], cycles: &[f64]) {
    let mut tallies = vec![vec![Tally::default(); cycles.len()]; CARRIERS.len()];
    let mut recordings = 0;
    for dir in dirs {
        let dir = Path::new(dir);
        let Some(cycle) = evaluation_cycle(dir) else {
            eprintln!(
                "{}: no truth.json with evaluation_every_s; skipped",
                dir.display()
            );
            continue;
        };
        recordings += 1;
        for (g, (_, stems)) in CARRIERS.iter().enumerate() {
            for stem in *stems {
                let path = dir.join(format!("{stem}.csv"));
                let Ok(file) = read_file(&path, 1.0) else {
                    eprintln!("{}: unreadable; skipped", path.display());
                    continue;
                };
                for s in &file.series {
                    let (Some(first), Some(last)) = (s.points.first(), s.points.last()) else {
                        continue;
                    };
                    let t0 = first.0;
                    let length = last.0 - t0 + 1.0;
                    let stretches = training_stretches(dir, length);
                    for (c, n) in cycles.iter().enumerate() {
                        for start in window_starts(&stretches, n * cycle, cycle, length) {
                            let window: Vec<(f64, f64)> = s
                                .points
                                .iter()
                                .filter(|(t, _)| *t >= t0 + start && *t < t0 + start + n * cycle)
                                .copied()
                                .collect();
                            score(&window, cycle, &mut tallies[g][c]);
                        }
                    }
                }
            }
        }
    }
    println!(
        "{recordings} recordings; windows of whole evaluation cycles inside the training job's working stretches, one every third of a cycle; found: any reported period within 2% of the cycle (first reported within 2%)."
    );
    println!();
    println!("| series | cycles | windows | poolprof | poolprof: no period | augurs-seasons |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let pct = |a: usize, n: usize| 100.0 * a as f64 / n.max(1) as f64;
    for (g, (name, _)) in CARRIERS.iter().enumerate() {
        for (c, n) in cycles.iter().enumerate() {
            let t = tallies[g][c];
            println!(
                "| {name} | {n} | {} | {:.0}% ({:.0}%) | {:.0}% | {:.0}% |",
                t.windows,
                pct(t.ours, t.windows),
                pct(t.ours_first, t.windows),
                pct(t.ours_none, t.windows),
                pct(t.augurs, t.windows)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_lie_inside_the_stretches_a_third_of_a_cycle_apart() {
        let starts = window_starts(&[(0.0, 200.0), (330.0, 540.0)], 180.0, 30.0, 520.0);
        // 0, 10, 20 fit in 0..200; 330 and 340 in 330..520 (the recording ends at 520)
        assert_eq!(starts, vec![0.0, 10.0, 20.0, 330.0, 340.0]);
    }

    #[test]
    fn stretches_come_from_the_record_log() {
        let dir = std::env::temp_dir().join(format!("recorded-periods-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("record.log"),
            "[10:00:00] jobs work in (s): train 0-200,330-540, infer 120-400, mem all; cycles: x\n",
        )
        .unwrap();
        assert_eq!(
            training_stretches(&dir, 540.0),
            vec![(0.0, 200.0), (330.0, 540.0)]
        );
        std::fs::write(
            dir.join("record.log"),
            "[10:00:00] jobs work in (s): train all, infer all, mem all; cycles: defaults\n",
        )
        .unwrap();
        assert_eq!(training_stretches(&dir, 506.0), vec![(0.0, 506.0)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
