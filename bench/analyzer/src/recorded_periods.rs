//! Periodicity on series poolprof-exporter recorded on a real GPU
//! (`docs/validation/h100-series.sh`), cut to a few cycles: the issue's "6 cycles or
//! more" checked on real GPU signals rather than generated ones.
//!
//! Each recording's jobs have a designed cycle (`truth.json`): the training job's
//! evaluation pass (`evaluation_every_s`), or the period of an impulsive job
//! (`period_s`: spikes, dips, bursts, memory ramps). The series that carry a job's
//! cycle are chosen by what they measure, before looking at any result ([`carriers`]):
//! for a job that computes, the GPU-wide activity series, the power draw and the job's
//! own SM use; for the memory ramps, the GPU's memory used and the job's own. Each is
//! cut into windows of exactly `cycles` cycles inside one stretch in which the job
//! worked (`record.log`, "jobs work in"), starting every third of a cycle, and each
//! window is handed to `detect_periods` as it was recorded (1 s samples, gaps and
//! all). A window counts as found when any reported period is within 2% of the cycle.
//! Jobs sharing the GPU with it run on through a window where the recording says so.
//!
//! With `--hold-s N` every window is first read as a reader every N seconds would
//! have: the mean of each N-sample block, held for the block ([`held`]). NVML's
//! per-process utilization is such a reading (`--collector.process.sample-interval`),
//! so the GPU-wide series held show what a job's own series would at that interval.

use std::path::Path;

use poolprof_analyzer::analysis::grid;
use poolprof_analyzer::analysis::periodicity::{detect_with_seasons, PeriodConfig};
use poolprof_analyzer::series::Series;
use poolprof_analyzer::source::file::read_file;

use crate::detection::within;
use crate::engines;
use crate::recorded;

/// Windows start this fraction of a cycle apart.
const OFFSET_CYCLES: f64 = 1.0 / 3.0;

/// Seconds left out at the start of every stretch: a job counts its stretches from its
/// own start, after Python has imported torch, 6-8 s after the recording began.
const START_MARGIN_S: f64 = 10.0;

/// Found counts of one row.
#[derive(Default, Clone, Copy)]
struct Tally {
    windows: usize,
    ours: usize,
    ours_first: usize,
    ours_none: usize,
    augurs: usize,
}

/// One job of a recording with a designed cycle.
#[derive(Debug, Clone, PartialEq)]
struct Job {
    role: String,
    period: f64,
    /// Seconds since the recording's start in which it worked.
    stretches: Vec<(f64, f64)>,
}

/// What each job's rows are called, in table order.
const SHAPES: [(&str, &str); 5] = [
    ("train", "training job (evaluation pass)"),
    ("spikes", "spikes (a burst every cycle)"),
    ("dips", "dips (a pause every cycle)"),
    ("bursts", "bursts (busy 35% of each cycle)"),
    ("ramps", "memory ramps (grown, then freed)"),
];

/// The series (group name, file stems) that carry `role`'s cycle.
fn carriers(role: &str) -> Vec<(&'static str, Vec<String>)> {
    if role == "ramps" {
        return vec![
            ("GPU memory used", vec!["gpu_memory_used_bytes".to_string()]),
            (
                "the job's own memory",
                vec![format!("process_gpu_memory_bytes-{role}")],
            ),
        ];
    }
    let activity = [
        "gpu_utilization",
        "gpu_sm_active",
        "gpu_sm_occupancy",
        "gpu_tensor_any_active",
        "gpu_dram_active",
        "gpu_memory_controller_utilization",
    ];
    vec![
        (
            "GPU activity (6 series)",
            activity.iter().map(|s| s.to_string()).collect(),
        ),
        ("GPU power draw", vec!["gpu_power_watts".to_string()]),
        (
            "the job's own SM use",
            vec![format!("process_sm_utilization-{role}")],
        ),
    ]
}

/// The jobs of the recording in `dir` whose cycle `truth.json` gives, with their
/// stretches from `record.log` (the whole recording where it names none).
fn jobs(dir: &Path, length_s: f64) -> Vec<Job> {
    let truth = recorded::truth(dir);
    let roles: serde_json::Value = std::fs::read_to_string(dir.join("roles.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let ran = |role: &str| {
        roles
            .as_object()
            .is_some_and(|m| m.values().any(|v| v.as_str() == Some(role)))
    };
    let log = std::fs::read_to_string(dir.join("record.log")).unwrap_or_default();
    SHAPES
        .iter()
        .filter(|(role, _)| ran(role))
        .filter_map(|(role, _)| {
            let cycle = &truth[role];
            let period = cycle["evaluation_every_s"]
                .as_f64()
                .or_else(|| cycle["period_s"].as_f64())?;
            Some(Job {
                role: role.to_string(),
                period,
                stretches: stretches(&log, role, length_s),
            })
        })
        .collect()
}

/// The stretches of `role` in a `record.log` line "jobs work in (s): train
/// 0-200,330-540, infer all, ...; cycles: ..."; the whole recording for "all" or a log
/// without the line.
fn stretches(log: &str, role: &str, length_s: f64) -> Vec<(f64, f64)> {
    let spec = log
        .lines()
        .find_map(|l| l.split("jobs work in (s): ").nth(1))
        .and_then(|rest| rest.split(';').next())
        .and_then(|jobs| {
            jobs.split(", ")
                .find_map(|job| job.strip_prefix(role)?.strip_prefix(' '))
        })
        .unwrap_or("all");
    let out: Vec<(f64, f64)> = spec
        .split(',')
        .filter_map(|w| {
            let (a, b) = w.trim().split_once('-')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect();
    if out.is_empty() {
        vec![(0.0, length_s)]
    } else {
        out
    }
}

/// Start times (seconds since the recording's start) of every window of `width`
/// seconds inside one of `stretches` (less [`START_MARGIN_S`] at its start) and inside
/// the recording.
fn window_starts(stretches: &[(f64, f64)], width: f64, cycle: f64, length_s: f64) -> Vec<f64> {
    let mut out = Vec::new();
    for &(a, b) in stretches {
        let end = b.min(length_s);
        let mut t = a + START_MARGIN_S;
        while t + width <= end {
            out.push(t);
            t += cycle * OFFSET_CYCLES;
        }
    }
    out
}

/// `points` (1 s apart) as readings every `hold` samples: each block's mean, held
/// through the block.
fn held(points: &[(f64, f64)], hold: usize) -> Vec<(f64, f64)> {
    points
        .chunks(hold.max(1))
        .flat_map(|block| {
            let mean = block.iter().map(|p| p.1).sum::<f64>() / block.len() as f64;
            block.iter().map(move |p| (p.0, mean))
        })
        .collect()
}

/// Scores one window of `points` (absolute timestamps, 1 s apart: a step is a second)
/// against `cycle` seconds.
fn score(points: &[(f64, f64)], cycle: f64, tally: &mut Tally) {
    let detection = detect_with_seasons(
        &Series::from_points(points.to_vec()),
        &PeriodConfig::default(),
    );
    let found: Vec<f64> = detection
        .reported
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
            detection.seasons
        );
    }
}

/// Prints found rates per job, group and cycle count over the recordings in `dirs`,
/// each window read every `hold` seconds ([`held`]; 1: as recorded).
pub fn run(dirs: &[String], cycles: &[f64], hold: usize) {
    // (shape, group) -> tally per cycle count, in first-seen order
    let mut rows: Vec<((usize, &'static str), Vec<Tally>)> = Vec::new();
    for dir in dirs {
        let dir = Path::new(dir);
        let length = recording_length(dir);
        for job in jobs(dir, length) {
            let shape = SHAPES.iter().position(|(r, _)| *r == job.role).unwrap_or(0);
            for (group, stems) in carriers(&job.role) {
                let at = match rows.iter().position(|(k, _)| *k == (shape, group)) {
                    Some(at) => at,
                    None => {
                        rows.push(((shape, group), vec![Tally::default(); cycles.len()]));
                        rows.len() - 1
                    }
                };
                for stem in &stems {
                    score_series(
                        &dir.join(format!("{stem}.csv")),
                        &job,
                        cycles,
                        hold,
                        &mut rows[at].1,
                    );
                }
            }
        }
    }
    rows.sort_by_key(|((shape, _), _)| *shape);
    println!(
        "{} recordings; windows of whole cycles inside each job's working stretches (less {START_MARGIN_S} s at each start), one every third of a cycle{}; found: any reported period within 2% of the cycle (first reported within 2%).",
        dirs.len(),
        if hold > 1 { format!(", each read as the mean of every {hold} s, held") } else { String::new() }
    );
    println!();
    println!(
        "| job | series | cycles | windows | poolprof | poolprof: no period | augurs-seasons |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    let pct = |a: usize, n: usize| 100.0 * a as f64 / n.max(1) as f64;
    for ((shape, group), tallies) in &rows {
        for (t, n) in tallies.iter().zip(cycles) {
            if t.windows == 0 {
                continue;
            }
            println!(
                "| {} | {group} | {n} | {} | {:.0}% ({:.0}%) | {:.0}% | {:.0}% |",
                SHAPES[*shape].1,
                t.windows,
                pct(t.ours, t.windows),
                pct(t.ours_first, t.windows),
                pct(t.ours_none, t.windows),
                pct(t.augurs, t.windows)
            );
        }
    }
}

/// Seconds from the first to the last sample of the recording's utilization series.
fn recording_length(dir: &Path) -> f64 {
    read_file(&dir.join("gpu_utilization.csv"), 1.0)
        .ok()
        .and_then(|f| {
            let p = &f.series.first()?.points;
            Some(p.last()?.0 - p.first()?.0 + 1.0)
        })
        .unwrap_or(0.0)
}

/// Scores every window of the series in `path` for `job`, one tally per cycle count,
/// each window read every `hold` seconds.
fn score_series(path: &Path, job: &Job, cycles: &[f64], hold: usize, tallies: &mut [Tally]) {
    let Ok(file) = read_file(path, 1.0) else {
        eprintln!("{}: unreadable; skipped", path.display());
        return;
    };
    for s in &file.series {
        let (Some(first), Some(last)) = (s.points.first(), s.points.last()) else {
            continue;
        };
        let t0 = first.0;
        let length = last.0 - t0 + 1.0;
        for (c, n) in cycles.iter().enumerate() {
            for start in window_starts(&job.stretches, n * job.period, job.period, length) {
                let window: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .filter(|(t, _)| *t >= t0 + start && *t < t0 + start + n * job.period)
                    .copied()
                    .collect();
                let window = if hold > 1 {
                    held(&window, hold)
                } else {
                    window
                };
                score(&window, job.period, &mut tallies[c]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_readings_are_block_means_kept_through_the_block() {
        let points: Vec<(f64, f64)> = (0..5).map(|i| (i as f64, i as f64)).collect();
        let got: Vec<f64> = held(&points, 2).iter().map(|p| p.1).collect();
        assert_eq!(got, vec![0.5, 0.5, 2.5, 2.5, 4.0]);
        assert_eq!(held(&points, 1), points);
    }

    #[test]
    fn windows_lie_inside_the_stretches_a_third_of_a_cycle_apart() {
        let starts = window_starts(&[(0.0, 200.0), (330.0, 540.0)], 180.0, 30.0, 520.0);
        // 10 and 20 fit in 10..200; 340 in 340..520 (the recording ends at 520)
        assert_eq!(starts, vec![10.0, 20.0, 340.0]);
        let starts = window_starts(&[(0.0, 100.0)], 60.0, 15.0, 500.0);
        assert_eq!(starts, vec![10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0]);
    }

    #[test]
    fn stretches_come_from_the_record_log() {
        let log =
            "[10:00:00] jobs work in (s): train 0-200,330-540, infer 120-400, mem all; cycles: x\n";
        assert_eq!(
            stretches(log, "train", 540.0),
            vec![(0.0, 200.0), (330.0, 540.0)]
        );
        assert_eq!(stretches(log, "infer", 540.0), vec![(120.0, 400.0)]);
        assert_eq!(stretches(log, "mem", 506.0), vec![(0.0, 506.0)]);
        // recordings before the line was logged worked all the time
        assert_eq!(stretches("", "train", 506.0), vec![(0.0, 506.0)]);
    }

    #[test]
    fn a_memory_job_is_read_from_memory_series_and_others_from_activity() {
        let groups = |role: &str| -> Vec<String> {
            carriers(role).into_iter().flat_map(|(_, s)| s).collect()
        };
        assert!(groups("ramps").contains(&"process_gpu_memory_bytes-ramps".to_string()));
        assert!(!groups("ramps").contains(&"gpu_utilization".to_string()));
        assert!(groups("dips").contains(&"process_sm_utilization-dips".to_string()));
        assert!(groups("train").contains(&"gpu_power_watts".to_string()));
    }
}
