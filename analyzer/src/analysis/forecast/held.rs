//! Stretches held at one exact value for a whole cycle or longer: a job stopped, then
//! resumed. Left in, they dominate validation (every origin near them forecasts a
//! stop or a restart that no model can time) and a smoothing model's level averages
//! the idle with the busy. Once the series has moved again they are cut out, and the
//! models see the job's cycles joined end to end ([`cut_held`]).

use super::pinned::{MIN_RUN, SAME};

/// Longest cycle aligned across a cut, in steps: the search compares every shift of a
/// whole cycle, so its cost grows with the square of the cycle.
pub const MAX_ALIGNED: f64 = 2048.0;

/// `y` without its runs of equal values at least `longest_season` and [`MIN_RUN`]
/// steps long, the last run kept (it is the current state, which
/// [`super::pinned::is_pinned`] judges); `None` when there is none to cut. A job
/// resumes at any phase of its cycle: up to a cycle of `period` steps before each cut
/// is dropped too, as much as joins the cycles after it in phase with those before.
pub fn cut_held(y: &[f64], longest_season: f64, period: f64) -> Option<Vec<f64>> {
    let long = longest_season.ceil().max(MIN_RUN as f64) as usize;
    let mut kept: Vec<f64> = Vec::with_capacity(y.len());
    let mut start = 0;
    let mut cut = None;
    for t in 1..=y.len() {
        if t < y.len() && (y[t] - y[t - 1]).abs() <= SAME {
            continue;
        }
        if t - start >= long && t < y.len() {
            cut = Some(kept.len());
        } else {
            if let Some(at) = cut.take() {
                let next_run = next_held(y, t, long);
                kept.truncate(at - phase_shift(&kept[..at], &y[start..next_run], period));
            }
            kept.extend_from_slice(&y[start..t]);
        }
        start = t;
    }
    (kept.len() < y.len()).then_some(kept)
}

/// Where the next run of `long` equal values after `from` starts (the end of `y`
/// without one).
fn next_held(y: &[f64], from: usize, long: usize) -> usize {
    let mut start = from;
    for t in from + 1..=y.len() {
        if t < y.len() && (y[t] - y[t - 1]).abs() <= SAME {
            continue;
        }
        if t - start >= long && t < y.len() {
            return start;
        }
        start = t;
    }
    y.len()
}

/// How many points to drop from the end of `before` so that `after` continues its
/// cycle of `period` steps: the shift below a cycle whose cycle before the join
/// differs least from the first cycle after it.
fn phase_shift(before: &[f64], after: &[f64], period: f64) -> usize {
    let m = period.round() as usize;
    if !(2.0..=MAX_ALIGNED).contains(&period) || before.len() < 2 * m || after.is_empty() {
        return 0;
    }
    let len = m.min(after.len());
    let cost = |k: usize| -> f64 {
        let end = before.len() - k;
        (0..len)
            .map(|i| (after[i] - before[end - m + i]).abs())
            .sum()
    };
    (0..m)
        .min_by(|a, b| cost(*a).total_cmp(&cost(*b)))
        .unwrap_or(0)
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
