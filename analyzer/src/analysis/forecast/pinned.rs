//! A series held at one exact value: a GPU pinned at 100%, a node idle at 0, a job
//! stopped. Held for a whole cycle, it shows no cycle and no trend operating now,
//! whatever its history did; validation on older stretches cannot see that (a job that
//! went idle an hour ago), so the value is held ([`is_pinned`]).

use super::ets::Season;
use super::held::{still_band, STILL_SHARE};
use crate::analysis::runs::{hold, runs, span};

/// Fewest steps at one value that count as pinned when no season was detected: an
/// exact repeat of a dozen noisy samples does not happen by chance.
pub const MIN_RUN: usize = 12;

/// Values this close (the series is scaled to ±1) are the same value.
pub(super) const SAME: f64 = 1e-12;

/// Fewest steps at one value that may count as pinned in a series that seldom repeats a
/// value: four equal samples of a continuous reading are already no accident.
pub const SHORTEST_RUN: usize = 4;
/// How unlikely by chance a run must be to count as pinned: the series' own rate of
/// unchanged steps, raised to the run's repeats, at most this.
pub const CHANCE: f64 = 1e-3;

/// The run at one value that `y` (the data before the run) would make by chance less
/// often than [`CHANCE`]: between [`SHORTEST_RUN`] and [`MIN_RUN`] steps. A busy job
/// read as integer percent repeats 100 often and needs the whole dozen; a noisy
/// continuous reading that never repeated needs only four.
pub fn chance_run(y: &[f64]) -> usize {
    if y.len() < 2 {
        return MIN_RUN;
    }
    run_by_chance(still_share(y))
}

/// The run of equal readings a series that leaves a reading unchanged with probability
/// `p` makes less often than [`CHANCE`]: between [`SHORTEST_RUN`] and [`MIN_RUN`].
pub fn run_by_chance(p: f64) -> usize {
    (SHORTEST_RUN..MIN_RUN)
        .find(|&k| p.powi(k as i32 - 1) <= CHANCE)
        .unwrap_or(MIN_RUN)
}

/// [`chance_run`] counted in readings: a series whose readings are each held
/// [`hold`] steps (NVML's per-process utilization, read every 10 s and scraped every
/// second) makes runs of a reading's length by construction; a run must last as many
/// readings as the series would repeat by chance less often than [`CHANCE`].
pub fn chance_run_of_readings(y: &[f64]) -> usize {
    let hold = hold(y);
    let h = hold as f64;
    // of the steps, hold - 1 in each reading are unchanged by construction
    let unchanged_readings = (h * still_share(y) - (h - 1.0)).clamp(0.0, 1.0);
    hold * run_by_chance(unchanged_readings)
}

/// The share of the steps of `y` that leave it unchanged (0 for fewer than 2 values).
pub fn still_share(y: &[f64]) -> f64 {
    if y.len() < 2 {
        return 0.0;
    }
    let still = y.windows(2).filter(|w| (w[1] - w[0]).abs() <= SAME).count();
    still as f64 / (y.len() - 1) as f64
}

/// How many values at the end of `y` equal the last one.
pub fn trailing_run(y: &[f64]) -> usize {
    let Some(&last) = y.last() else {
        return 0;
    };
    y.iter()
        .rev()
        .take_while(|v| (*v - last).abs() <= SAME)
        .count()
}

/// Whether `y` will stay at its last value: pinned there ([`is_pinned`]), stopped
/// for a whole cycle of the `dominant` season ([`stopped_for_a_cycle`]), or back at a
/// value it stayed at for `h` steps or more every time before ([`held_as_before`]);
/// `seasons` are the detected ones, in steps.
pub fn holds_last_value(y: &[f64], seasons: &[f64], dominant: Option<Season>, h: usize) -> bool {
    let longest = seasons.iter().copied().fold(0.0, f64::max);
    is_pinned(y, seasons) || stopped_for_a_cycle(y, dominant, longest) || held_as_before(y, h)
}

/// Whether `y` has sat on its last value for at least [`MIN_RUN`] steps and either a
/// whole longest season (a cycle would have moved it) or, within a cycle, longer than
/// any run at that value that ended on its own before and where no cycle of `seasons`
/// (in steps) sat on it a cycle ago: a job that stopped mid-cycle, not a nightly idle
/// nor one of the series' usual pauses (a cluster once pinned at 100 for a while says
/// nothing of how long it idles at 0). A shorter run is a stop only when it cannot be
/// anything else (`a_stop_unheard_of`).
pub fn is_pinned(y: &[f64], seasons: &[f64]) -> bool {
    let run = trailing_run(y);
    let before = &y[..y.len() - run];
    if run < MIN_RUN {
        return a_stop_unheard_of(before, y[y.len() - 1], run);
    }
    let longest = seasons.iter().copied().fold(0.0, f64::max);
    run as f64 >= longest
        || (run > longest_pause(before, y[y.len() - 1], longest)
            && !seasons.iter().any(|&m| sat_a_cycle_ago(y, run, m)))
}

/// Whether `y` ends on a value that every earlier visit held for `h` steps or more (at
/// least one visit; a stay where the data begins counts): a cluster pinned at 100% for
/// a day or more whenever it got there, there again for the last few steps or only the
/// last one. Too short a run for [`is_pinned`], and a value the series took before, so
/// no stop unheard of; every model averaging the steps before the run forecast the
/// load it had left (first set, seed 13, 5 min GPU cluster #38: five steps at 100 after
/// a partial load, 23.3 MAE against naive's 0; new dev seed 26 #13: one step at 100
/// after eight days at 0, forecast at 0 for the day it stayed at 100). A value passed
/// through even once (a count of jobs started, a dip to 0 for one step) has no such
/// record.
pub fn held_as_before(y: &[f64], h: usize) -> bool {
    let run = trailing_run(y);
    if run >= y.len() {
        return false;
    }
    let value = y[y.len() - 1];
    let before = &y[..y.len() - run];
    // at least one visit; most series never took their last value before, and are
    // spared the runs
    if !before.iter().any(|v| (v - value).abs() <= SAME) {
        return false;
    }
    // unlike `paused::stops_at`'s whole outages, a stay where the data begins counts:
    // one that had already lasted the horizon says as much (seed 13 #38's first stay)
    runs(before, SAME)
        .filter(|r| (before[r.start] - value).abs() <= SAME)
        .all(|r| r.len() >= h)
}

/// Whether `y` has stayed within a still band ([`super::held`]: a few percent of its
/// cycle's usual swing) for its whole longest season: a job stopped whose GPU idles
/// with noise (SM activity at 0.001 ± 0.0005) shows no cycle operating now, though no
/// two of its readings are equal.
pub fn stopped_for_a_cycle(y: &[f64], dominant: Option<Season>, longest: f64) -> bool {
    let Some(season) = dominant else {
        return false;
    };
    let long = longest.ceil().max(MIN_RUN as f64) as usize;
    if y.len() < long {
        return false;
    }
    // the band is a share of the median cycle's swing, so at most that share of the
    // whole range: most series fail this without the band's cost
    let last = span(&y[y.len() - long..]);
    last <= STILL_SHARE * span(y) && last <= still_band(y, season.period())
}

/// Whether a run of `run` steps at `value` after `before` is a stop even short of
/// [`MIN_RUN`]: a run the series would not make by chance ([`chance_run`]), longer
/// than any it made before, at a value it never took. A job stopped at 0 by a series of
/// noisy readings is one; a trough clamped at 0, a burst held at its level, or a busy
/// GPU read as 100 again are not.
fn a_stop_unheard_of(before: &[f64], value: f64, run: usize) -> bool {
    run >= SHORTEST_RUN
        && run >= chance_run(before)
        && runs(before, SAME).all(|r| r.len() < run)
        && before.iter().all(|v| (v - value).abs() > SAME)
}

/// The longest run at `value` in `y` shorter than `longest` steps (a pause that ended
/// within a cycle); 0 without one.
fn longest_pause(y: &[f64], value: f64, longest: f64) -> usize {
    runs(y, SAME)
        .filter(|r| (y[r.start] - value).abs() <= SAME)
        .map(|r| r.len())
        .filter(|&len| (len as f64) < longest)
        .max()
        .unwrap_or(0)
}

/// Whether most of the last `run` steps of `y`, a cycle of `m` steps earlier, sat on
/// the value `y` ends on.
pub(super) fn sat_a_cycle_ago(y: &[f64], run: usize, m: f64) -> bool {
    let (n, lag) = (y.len(), m.round() as usize);
    let last = y[n - 1];
    let same = (n - run..n)
        .filter(|&t| t >= lag && (y[t - lag] - last).abs() <= SAME)
        .count();
    2 * same > run
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noisy partial load around 50, never repeating a value, with runs at 100 of
    /// `held` steps between, ending in `tail` steps at 100.
    fn load_with_runs(held: &[usize], tail: usize) -> Vec<f64> {
        let mut y = Vec::new();
        let mut k = 0u64;
        let mut noisy = |y: &mut Vec<f64>, n: usize| {
            for _ in 0..n {
                k += 1;
                y.push(50.0 + ((k * 7919) % 997) as f64 / 100.0);
            }
        };
        for &len in held {
            noisy(&mut y, 200);
            y.extend(std::iter::repeat_n(100.0, len));
        }
        noisy(&mut y, 200);
        y.extend(std::iter::repeat_n(100.0, tail));
        y
    }

    #[test]
    fn a_value_held_a_day_every_time_is_held_again_after_a_few_steps() {
        let y = load_with_runs(&[400, 300], 5);
        assert!(!is_pinned(&y, &[288.0]), "too short for the pinned rule");
        assert!(held_as_before(&y, 288));
        // any earlier stay shorter than the horizon says nothing
        assert!(!held_as_before(&load_with_runs(&[400, 100], 5), 288));
        assert!(!held_as_before(&load_with_runs(&[100, 400], 5), 288));
        assert!(!held_as_before(&[100.0; 10], 288), "no earlier visit");
        assert!(!held_as_before(&load_with_runs(&[], 5), 288));
    }

    #[test]
    fn one_step_onto_a_value_held_for_days_before_is_held() {
        // at 100 for 512 steps where the data begins, idle at 0 for eight days, then
        // at 100 for the last step only (new dev seed 26, 5 min GPU cluster #13)
        let mut y = vec![100.0; 512];
        y.extend([0.0; 2304]);
        y.push(100.0);
        assert!(held_as_before(&y, 288));
        // one earlier stay that lasted the horizon is enough, at any run since
        assert!(held_as_before(&load_with_runs(&[400], 1), 288));
        assert!(held_as_before(&load_with_runs(&[400], 5), 288));
        assert!(held_as_before(&load_with_runs(&[400, 300], 3), 288));
        // a value the series only passed through before: a count of jobs started
        // that was 3 for one step, a training job's dip to 0 for one step
        let mut counts = vec![0.0; 600];
        counts.extend([3.0, 0.0, 1.0, 0.0, 0.0, 2.0]);
        counts.extend([0.0; 300]);
        counts.push(3.0);
        assert!(!held_as_before(&counts, 288));
        let mut dips = vec![0.0; 400];
        dips.extend((0..300).map(|i| {
            if i % 50 == 0 {
                0.0
            } else {
                90.0 + (i % 7) as f64
            }
        }));
        dips.push(0.0);
        assert!(!held_as_before(&dips, 288), "the dips visited 0 briefly");
    }

    #[test]
    fn the_run_counts_equal_values_at_the_end() {
        assert_eq!(trailing_run(&[]), 0);
        assert_eq!(trailing_run(&[1.0, 0.0, 0.0, 0.0]), 3);
        assert_eq!(trailing_run(&[0.0, 0.0, 0.5]), 1);
    }

    #[test]
    fn a_job_idling_with_noise_for_a_whole_cycle_is_stopped() {
        // a 50-step cycle between 0.8 and 0.2, then idle at 0.001 +- 0.0005
        let noise = |i: usize| 0.0005 * (((i * 7919) % 13) as f64 / 6.0 - 1.0);
        let mut y: Vec<f64> = (0..300)
            .map(|i| if i % 50 < 40 { 0.8 } else { 0.2 } + noise(i))
            .collect();
        y.extend((0..49).map(|i| 0.001 + noise(i)));
        let season = Season::new(50.0);
        assert!(
            !stopped_for_a_cycle(&y, season, 50.0),
            "49 steps: under a cycle"
        );
        y.extend((0..10).map(|i| 0.001 + noise(i)));
        assert!(stopped_for_a_cycle(&y, season, 50.0));
        assert!(!is_pinned(&y, &[50.0]), "no two readings equal at the end");
        assert!(
            !stopped_for_a_cycle(&y, None, 0.0),
            "no cycle, no stop to judge"
        );
    }

    #[test]
    fn pinned_needs_a_whole_season_and_the_minimum_run() {
        // the run's value, 1.0, was taken before: only MIN_RUN steps make it a stop
        let mut y: Vec<f64> = (0..100).map(|i| (i as f64 * 0.7).sin()).collect();
        y.push(1.0);
        y.extend((0..10).map(|i| (i as f64 * 0.7).cos()));
        y.extend([1.0; 30]);
        assert!(is_pinned(&y, &[24.0]));
        y.truncate(111 + MIN_RUN - 1);
        assert!(!is_pinned(&y, &[]), "fewer than MIN_RUN steps");
    }

    #[test]
    fn the_run_that_chance_would_not_make_follows_how_often_the_series_repeats() {
        let continuous: Vec<f64> = (0..500).map(|i| (i as f64 * 0.7).sin()).collect();
        assert_eq!(chance_run(&continuous), SHORTEST_RUN);
        // integer percent of a busy GPU: 100 most of the time
        let busy: Vec<f64> = (0..500)
            .map(|t| if t % 10 == 0 { 97.0 } else { 100.0 })
            .collect();
        assert_eq!(chance_run(&busy), MIN_RUN);
        // a third of the steps unchanged: 0.33^7 < 1e-3 <= 0.33^6
        let some: Vec<f64> = (0..600).map(|t| (t - t % 3 / 2) as f64).collect();
        assert_eq!(chance_run(&some), 8);
    }

    /// A training job: 60-step iterations with a 4-step dip, noisy, never exactly equal.
    fn iterations(n: usize) -> Vec<f64> {
        (0..n)
            .map(|t| {
                let noise = ((t * 7919) % 13) as f64 * 0.1;
                if t % 60 < 4 {
                    20.0 + noise
                } else {
                    90.0 + noise
                }
            })
            .collect()
    }

    #[test]
    fn a_job_stopped_at_a_value_never_seen_is_pinned_within_a_few_steps() {
        let mut y = iterations(600);
        y.extend([0.0; SHORTEST_RUN]);
        assert!(is_pinned(&y, &[60.0]));
        y.truncate(600 + SHORTEST_RUN - 1);
        assert!(!is_pinned(&y, &[60.0]), "three equal samples may be chance");
    }

    #[test]
    fn a_short_run_at_a_value_seen_before_or_no_longer_than_earlier_runs_is_not_pinned() {
        // a nightly trough clamped at 0: 0 was taken before
        let mut trough = iterations(600);
        trough[300..302].iter_mut().for_each(|v| *v = 0.0);
        trough.extend([0.0; 8]);
        assert!(!is_pinned(&trough, &[60.0]));
        // bursts held at a new level for up to 7 steps: one more is no stop
        let mut bursts = iterations(600);
        bursts[100..107].iter_mut().for_each(|v| *v = 55.5);
        bursts.extend([66.6; 7]);
        assert!(!is_pinned(&bursts, &[60.0]));
    }

    #[test]
    fn a_job_stopped_mid_cycle_is_pinned() {
        let mut y = iterations(600);
        y.extend([0.0; 30]);
        assert!(is_pinned(&y, &[60.0]), "30 steps at 0, never seen before");
    }

    #[test]
    fn a_stop_is_measured_against_earlier_stops_at_its_value() {
        // a cluster pinned at 100 for 40 steps once, then busy again; now at 0 for 30
        // steps, which it never sat at: the held 100 says nothing of how long it idles
        let mut y = iterations(600);
        y[200..240].iter_mut().for_each(|v| *v = 100.0);
        y.extend([0.0; 30]);
        assert!(is_pinned(&y, &[60.0]));
        // (an earlier idle of 40 steps at 0 would be: `a_phase_that_sat_there_…`)
    }

    #[test]
    fn a_phase_that_sat_there_a_cycle_ago_or_a_usual_pause_is_not_pinned() {
        // idle for 30 steps of every 60-step cycle: the run is a phase of the cycle
        let nightly: Vec<f64> = (0..660)
            .map(|t| {
                if t % 60 >= 30 {
                    0.0
                } else {
                    50.0 + ((t * 7919) % 13) as f64
                }
            })
            .collect();
        assert!(!is_pinned(&nightly, &[60.0]));
        // pauses of 40 steps at random phases happened before: 30 steps is one of them
        let mut paused = iterations(600);
        paused[207..247].iter_mut().for_each(|v| *v = 0.0);
        paused.extend([0.0; 30]);
        assert!(!is_pinned(&paused, &[60.0]));
    }
}
