//! Stretches where a job sat still for a whole cycle or longer, at one value or
//! nearly (a GPU idle, its power settling), or once for part of a cycle at a value it
//! never took otherwise: a job stopped, then resumed. Left in, they
//! dominate validation (every origin near them forecasts a stop or a restart that no
//! model can time) and a smoothing model's level averages the idle with the busy. Once
//! the series has moved again they are cut out, and the models see the job's cycles
//! joined end to end ([`cut_held`]).

use std::ops::Range;

use super::candidates::median;
use super::pinned::{MIN_RUN, SAME};
use crate::analysis::runs::{runs, span};

/// Longest cycle aligned across a cut, in steps: the search tries every shift below a
/// cycle, at up to [`ALIGN_POINTS`] points each.
pub const MAX_ALIGNED: f64 = 2048.0;

/// Most points of a cycle compared for each shift when aligning across a cut.
pub const ALIGN_POINTS: usize = 256;

/// Share of the usual swing within a cycle that a still stretch may span: idle power
/// settles by a few percent of a training step's swing; any cycle of the job's spans
/// all of it.
pub const STILL_SHARE: f64 = 0.05;

/// `y` without its still stretches at least `longest_season` and [`MIN_RUN`] steps
/// long and its lone stop (one pause within a cycle), the last kept if `y` ends in it (it is the current state, which
/// [`super::pinned::is_pinned`] judges); `None` when there is none to cut. A job
/// resumes at any phase of its cycle: up to a cycle of `period` steps before each cut
/// is dropped too, as much as joins the cycles after it in phase with those before.
pub fn cut_held(y: &[f64], longest_season: f64, period: f64) -> Option<Vec<f64>> {
    let long = longest_season.ceil().max(MIN_RUN as f64) as usize;
    let mut runs = still_runs(y, still_band(y, period), long);
    if let Some(stop) = lone_stop(y) {
        if !runs
            .iter()
            .any(|r| r.start <= stop.start && stop.end <= r.end)
        {
            runs.push(stop);
            runs.sort_by_key(|r| r.start);
        }
    }
    if runs.is_empty() {
        return None;
    }
    let mut kept: Vec<f64> = y[..runs[0].start].to_vec();
    for (i, run) in runs.iter().enumerate() {
        let next = runs.get(i + 1).map_or(y.len(), |r| r.start);
        let after = &y[run.end..next];
        let shift = phase_shift(&kept, after, period);
        kept.truncate(kept.len() - shift);
        kept.extend_from_slice(after);
    }
    Some(kept)
}

/// How far a still stretch of `y` may range: [`STILL_SHARE`] of the median swing of
/// its whole cycles of `period` steps (exact repeats only without a cycle).
pub(super) fn still_band(y: &[f64], period: f64) -> f64 {
    let m = period.round() as usize;
    if m < 2 || y.len() < m {
        return SAME;
    }
    let swings: Vec<f64> = y.chunks_exact(m).map(span).collect();
    (STILL_SHARE * median(swings)).max(SAME)
}

/// The stretches of `y` of at least `long` steps that span no more than `band`, but
/// for one that lasts to the end.
fn still_runs(y: &[f64], band: f64, long: usize) -> Vec<Range<usize>> {
    runs(y, band)
        .filter(|r| r.len() >= long && r.end < y.len())
        .collect()
}

/// A stop shorter than a cycle: the longest run of `y` at one exact value, not the
/// last run, at least [`MIN_RUN`] steps, more than [`LONE_FACTOR`] times as long as any
/// other run and at a value `y` takes nowhere else. A job paused once for part of a
/// cycle; a recurring pause (a checkpoint) or a level the series returns to is not one.
fn lone_stop(y: &[f64]) -> Option<Range<usize>> {
    let mut longest: Option<Range<usize>> = None;
    let mut other = 0;
    for r in runs(y, SAME) {
        match &longest {
            Some(l) if l.len() >= r.len() => other = other.max(r.len()),
            _ => {
                other = other.max(longest.as_ref().map_or(0, |l| l.len()));
                longest = Some(r);
            }
        }
    }
    let stop = longest.filter(|r| r.len() >= MIN_RUN && r.end < y.len())?;
    let value = y[stop.start];
    let elsewhere = y[..stop.start]
        .iter()
        .chain(&y[stop.end..])
        .any(|v| (v - value).abs() <= SAME);
    (stop.len() > LONE_FACTOR * other && !elsewhere).then_some(stop)
}

/// How much longer than any other run a lone stop is.
pub const LONE_FACTOR: usize = 2;

/// Cycles after a join compared with the last cycle before it.
pub const ALIGN_CYCLES: usize = 3;

/// How many points to drop from the end of `before` so that `after` continues its
/// cycle of `period` steps: the shift below a cycle whose cycle before the join
/// differs least from the first cycle after it.
fn phase_shift(before: &[f64], after: &[f64], period: f64) -> usize {
    let m = period.round() as usize;
    if !(2.0..=MAX_ALIGNED).contains(&period) || before.len() < 2 * m || after.is_empty() {
        return 0;
    }
    let len = (ALIGN_CYCLES * m).min(after.len());
    // a long cycle is compared at evenly spaced points: every shift of a day at 1 min
    // against every point would cost two million steps per cut (0.37 million sampled)
    let stride = len.div_ceil(ALIGN_POINTS);
    let cost = |k: usize| -> f64 {
        let end = before.len() - k;
        (0..len)
            .step_by(stride)
            .map(|i| (after[i] - before[end - m + i % m]).abs())
            .sum()
    };
    (0..m)
        .map(|k| (cost(k), k))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(0, |(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_stretch_longer_than_the_cycle_is_cut_and_the_cycles_are_kept() {
        let busy = |t: usize| {
            if t % 20 < 3 {
                20.0
            } else {
                90.0 + (t % 7) as f64
            }
        };
        let mut y: Vec<f64> = (0..200).map(busy).collect();
        y.extend([0.0; 50]);
        y.extend((200..300).map(busy));
        let cut = cut_held(&y, 20.0, 20.0).expect("the idle stretch is cut");
        let whole: Vec<f64> = (0..300).map(busy).collect();
        assert_eq!(cut, whole);
    }

    #[test]
    fn a_restart_that_stumbles_is_joined_in_phase_with_the_cycles_after_it() {
        // run8's SM activity: 35 s iterations with a 7 s evaluation dip; stopped for
        // 110 s; on restart 5 s busy and 5 s idle before the iterations go on
        let y: Vec<f64> = crate::analysis::fixtures::recorded("run8", "gpu_sm_active", 357)
            .values()
            .collect();
        let cut = cut_held(&y, 35.0, 35.0).expect("the stop is cut");
        // where each evaluation dip starts (6 steps at 0.02 after the first)
        let dips: Vec<usize> = (1..cut.len() - 6)
            .filter(|&i| {
                cut[i - 1] > 0.5 && cut[i] < 0.15 && cut[i + 1..i + 7].iter().all(|v| *v < 0.05)
            })
            .collect();
        assert!(dips.len() >= 6, "dips at {dips:?}");
        assert!(
            dips.windows(2).all(|w| w[1] - w[0] == 35),
            "dips at {dips:?}"
        );
    }

    /// Iterations of 60 steps with a 4-step dip, noisy, never exactly equal.
    fn iterations(t: usize) -> f64 {
        let noise = ((t * 7919) % 13) as f64 * 0.1;
        if t % 60 < 4 {
            20.0 + noise
        } else {
            90.0 + noise
        }
    }

    #[test]
    fn a_lone_pause_shorter_than_the_cycle_is_cut() {
        let mut y: Vec<f64> = (0..600).map(iterations).collect();
        y.extend([0.0; 40]);
        y.extend((600..700).map(iterations));
        let cut = cut_held(&y, 60.0, 60.0).expect("the pause is cut");
        assert!(cut.iter().all(|v| *v > 10.0), "the pause is left out");
        assert!((650..=700).contains(&cut.len()), "{}", cut.len());
    }

    #[test]
    fn a_recurring_pause_or_a_level_taken_elsewhere_is_not_a_lone_stop() {
        // checkpoints: 30 steps at 0 three times
        let mut y: Vec<f64> = (0..900).map(iterations).collect();
        for at in [100, 400, 700] {
            y[at..at + 30].iter_mut().for_each(|v| *v = 0.0);
        }
        assert_eq!(cut_held(&y, 60.0, 60.0), None);
        // one pause of 40 steps at 0, and 0 read once more elsewhere
        let mut once: Vec<f64> = (0..600).map(iterations).collect();
        once[200] = 0.0;
        once.extend([0.0; 40]);
        once.extend((600..700).map(iterations));
        assert_eq!(cut_held(&once, 60.0, 60.0), None);
    }

    #[test]
    fn a_job_resumed_at_another_phase_is_joined_in_phase() {
        // iterations of 20 steps with a 3-step dip; the job resumes 7 steps into its
        // cycle (as a restarted job would): every cycle of the cut series repeats
        let busy = |t: usize| {
            if t % 20 < 3 {
                20.0
            } else {
                90.0 + (t % 5) as f64
            }
        };
        let mut y: Vec<f64> = (0..200).map(busy).collect();
        y.extend([0.0; 45]);
        y.extend((207..320).map(busy));
        let cut = cut_held(&y, 20.0, 20.0).expect("the idle stretch is cut");
        assert!(cut.len() > 200, "{}", cut.len());
        for t in 20..cut.len() {
            assert_eq!(cut[t], cut[t - 20], "out of phase at {t} of {}", cut.len());
        }
    }

    #[test]
    fn a_settling_idle_stretch_is_cut_and_a_smooth_cycle_is_not() {
        // power of a 40-step training cycle (700 W, 140 W in an 8-step dip), then idle
        // for 150 steps while it settles from 144 W to 122 W, then resumed
        let power = |t: usize| {
            if t % 40 < 8 {
                140.0
            } else {
                690.0 + (t % 40 % 3) as f64 * 5.0
            }
        };
        let mut y: Vec<f64> = (0..400).map(power).collect();
        y.extend((0..150).map(|i| 122.0 + 22.0 * (-(i as f64) / 30.0).exp()));
        y.extend((400..500).map(power));
        let cut = cut_held(&y, 40.0, 40.0).expect("the idle stretch is cut");
        assert!(cut.len() >= 460, "{}", cut.len());
        for t in 40..cut.len() {
            assert_eq!(cut[t], cut[t - 40], "out of phase at {t} of {}", cut.len());
        }
        // a slow wave moves little from step to step, but spans its swing every cycle
        let wave: Vec<f64> = (0..2000)
            .map(|t| (2.0 * std::f64::consts::PI * t as f64 / 500.0).sin())
            .collect();
        assert_eq!(cut_held(&wave, 500.0, 500.0), None);
    }

    #[test]
    fn a_long_cycle_is_aligned_from_a_sample_of_its_points() {
        // a 600-step cycle (a busy half with a ramp, an idle half), resumed 140 steps
        // into it after a stop: compared at 256 points a shift, joined in phase all the same
        let cycle = |t: usize| match t % 600 {
            p if p < 300 => 50.0 + p as f64 * 0.1,
            p => 5.0 + (p % 7) as f64,
        };
        let mut y: Vec<f64> = (0..2400).map(cycle).collect();
        y.extend([0.0; 700]);
        y.extend((2540..3800).map(cycle));
        let cut = cut_held(&y, 600.0, 600.0).expect("the stop is cut");
        for t in 600..cut.len() {
            assert_eq!(cut[t], cut[t - 600], "out of phase at {t} of {}", cut.len());
        }
    }

    #[test]
    fn short_runs_and_the_current_run_are_kept() {
        // flat tops shorter than the cycle, and a run that lasts to the end
        let mut y: Vec<f64> = (0..100)
            .map(|t| if t % 20 < 10 { 1.0 } else { 0.0 })
            .collect();
        assert_eq!(
            cut_held(&y, 20.0, 20.0),
            None,
            "runs of 10 in a 20-step cycle"
        );
        y.extend([5.0; 40]);
        assert_eq!(
            cut_held(&y, 20.0, 20.0),
            None,
            "the run at the end is the current state"
        );
        // no season: a run must still be MIN_RUN long
        let short: Vec<f64> = [1.0, 2.0]
            .into_iter()
            .chain([3.0; MIN_RUN - 1])
            .chain([4.0])
            .collect();
        assert_eq!(cut_held(&short, 0.0, 0.0), None);
    }
}
