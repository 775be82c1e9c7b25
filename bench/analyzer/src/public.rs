//! Forecast accuracy on public real series that are neither forecasting-competition
//! series nor GPU-cluster traces (those stay held out for acceptance): machine and
//! service metrics, counts and sensor series, e.g. the `data/real*` folders of the
//! Numenta Anomaly Benchmark (cloud CPU and network at 5 min, request counts, tweet
//! volumes, traffic, hourly ad-exchange rates, temperatures).
//!
//! Each subfolder of the given folder is a class, each CSV in it one or more series as
//! the analyzer reads them (`timestamp,value`, unix seconds; `public_series.py` lays
//! out files with dates). A series' step is the median gap between its samples. Each
//! series is cut at its last [`ORIGINS`] horizons; each horizon (a day, and at least
//! [`MIN_HORIZON`] steps) is forecast from at most [`HISTORY_DAYS`] days (at least
//! [`MIN_HISTORY_STEPS`] steps, or `--history-steps`) before it, and scored like the
//! evaluation set ([`crate::fcast_eval::evaluate`]); seasonal-naive uses the day and,
//! in a class where every history holds two, the week.

use std::path::PathBuf;

use poolprof_analyzer::analysis::forecast::MAX_FILL_STEPS;
use poolprof_analyzer::analysis::grid::{median_step, segments};
use poolprof_analyzer::source::file::read_file;

use crate::evalset::{fill, Case};
use crate::fcast_eval::evaluate;

/// Origins per series: the last horizons.
pub const ORIGINS: usize = 7;
/// Fewest steps forecast from an origin (two days of hourly data).
pub const MIN_HORIZON: usize = 48;
/// Days of history before an origin at most (a scheduler's lookback of two weeks).
pub const HISTORY_DAYS: f64 = 14.0;
/// Steps of history kept at least, where two weeks are fewer (hourly series), unless
/// `--history-steps` says otherwise.
pub const MIN_HISTORY_STEPS: usize = 1000;
/// Fewest days of history an origin needs.
pub const MIN_HISTORY_DAYS: f64 = 3.0;

const DAY: f64 = 86_400.0;

/// The cases of one series: its last [`ORIGINS`] horizons, each with the history
/// before it; none where the history (since its last long gap) is too short or does
/// not reach the origin, or the history and horizon are constant (every method scores
/// 0).
fn cases_of(points: &[(f64, f64)], class: &'static str, least_steps: usize) -> Vec<Case> {
    if points.len() < 10 {
        return Vec::new();
    }
    let Some(step) = median_step(points).map(|s| s.round().max(1.0)) else {
        return Vec::new();
    };
    let t0 = points[0].0;
    let n = ((points.last().unwrap().0 - t0) / step).round() as usize + 1;
    let on_grid: Vec<(f64, f64)> = points.iter().map(|(t, v)| (t - t0, *v)).collect();
    let grid = fill(&on_grid, step, n);
    let day = (DAY / step).round() as usize;
    let h = day.max(MIN_HORIZON);
    let keep = ((HISTORY_DAYS * DAY / step).round() as usize).max(least_steps);
    let least = (MIN_HISTORY_DAYS * DAY / step).round() as usize;
    (1..=ORIGINS)
        .rev()
        .filter_map(|k| {
            let origin = n.checked_sub(k * h)?;
            let start = origin.saturating_sub(keep);
            // too short a history whatever its gaps (an origin at 0 has none at all)
            if origin - start < least {
                return None;
            }
            let filled = grid[start..origin].to_vec();
            let future = grid[origin..origin + h].to_vec();
            let flat = filled.iter().chain(&future).all(|v| *v == filled[0]);
            let history: Vec<(f64, f64)> = on_grid
                .iter()
                .filter(|(t, _)| {
                    let at = (t / step).round() as usize;
                    at >= start && at < origin
                })
                .map(|(t, v)| (t - start as f64 * step, *v))
                .collect();
            let seasons: Vec<usize> = [day, 7 * day]
                .into_iter()
                .filter(|s| 2 * s <= filled.len())
                .collect();
            // the analyzer forecasts the steps after the last sample: it must be the
            // step before the origin, or the forecast and the future are out of step
            let ends_at_origin = history
                .last()
                .is_some_and(|(t, _)| (t / step).round() as usize + start + 1 == origin);
            let usable = ends_at_origin && since_gap(&history, step) >= least;
            (!flat && usable && !seasons.is_empty()).then_some(Case {
                class,
                step,
                seasons,
                history,
                filled,
                future,
                siblings: Vec::new(),
            })
        })
        .collect()
}

/// Steps since the last gap the analyzer does not fill in `history` (on a grid of
/// `step`): what it forecasts from.
fn since_gap(history: &[(f64, f64)], step: f64) -> usize {
    segments(history, Some(step), MAX_FILL_STEPS)
        .ok()
        .and_then(|s| s.last().map(|s| s.values.len()))
        .unwrap_or(0)
}

/// Scores every method on the series under `dir` (a subfolder per class).
pub fn run(dir: &str, threads: usize, least_steps: usize) {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let mut classes: Vec<&'static str> = Vec::new();
    let mut cases = Vec::new();
    let mut series = 0;
    for folder in folders {
        let name = folder.file_name().unwrap().to_string_lossy().to_string();
        let class: &'static str = Box::leak(name.into_boxed_str());
        let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        if files.is_empty() {
            continue;
        }
        files.sort();
        let c = classes.len();
        classes.push(class);
        for path in files {
            let file = read_file(&path, 1.0).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for s in &file.series {
                let more = cases_of(&s.points, class, least_steps);
                series += usize::from(!more.is_empty());
                for k in more {
                    cases.push((c, cases.len(), k));
                }
            }
        }
    }
    // seasonal-naive of the week is scored on a whole class or not at all, so that
    // every row of a class covers the same forecasts
    for c in 0..classes.len() {
        let in_class = |k: &&mut (usize, usize, Case)| k.0 == c;
        if cases
            .iter_mut()
            .filter(in_class)
            .any(|k| k.2.seasons.len() < 2)
        {
            cases
                .iter_mut()
                .filter(in_class)
                .for_each(|k| k.2.seasons.truncate(1));
        }
    }
    let title = format!(
        "{series} public series, {} forecasts (the last {ORIGINS} days of each)",
        cases.len()
    );
    evaluate(&title, &classes, &cases, None, threads);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hourly samples of a daily wave at unix seconds `t`.
    fn hourly(hours: impl Iterator<Item = usize>) -> Vec<(f64, f64)> {
        hours
            .map(|t| (t as f64 * 3600.0, (t % 24) as f64))
            .collect()
    }

    #[test]
    fn each_origin_is_a_horizon_apart_with_the_history_before_it() {
        // 60 days hourly: seven horizons of 48 steps, each after at most 1,000 steps
        let cases = cases_of(&hourly(0..24 * 60), "c", MIN_HISTORY_STEPS);
        assert_eq!(cases.len(), ORIGINS);
        let n = 24 * 60;
        for (k, case) in cases.iter().enumerate() {
            let origin = n - (ORIGINS - k) * 48;
            assert_eq!(case.future.len(), 48);
            assert_eq!(case.filled.len(), 1000.min(origin));
            assert_eq!(case.future[0], (origin % 24) as f64);
            assert_eq!(case.seasons, vec![24, 168]);
        }
    }

    #[test]
    fn a_short_history_or_one_cut_by_a_long_gap_gives_no_case() {
        assert!(cases_of(&hourly(0..24 * 4), "c", MIN_HISTORY_STEPS).is_empty());
        // ten days, a day missing, two more days: the origin at the gap's end has no
        // sample just before it (the forecast would start a day early); those before
        // it keep theirs (the earliest, at three days, just enough); one day in is too
        // little
        let gapped = hourly((0..24 * 10).chain(24 * 11..24 * 13));
        let cases = cases_of(&gapped, "c", MIN_HISTORY_STEPS);
        let histories: Vec<usize> = cases.iter().map(|k| k.filled.len()).collect();
        assert_eq!(histories, vec![72, 120, 168, 216]);
    }
}
