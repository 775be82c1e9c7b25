//! A series held at one exact value: a GPU pinned at 100%, a node idle at 0, a job
//! stopped. Held for a whole cycle, it shows no cycle and no trend operating now,
//! whatever its history did; validation on older stretches cannot see that (a job that
//! went idle an hour ago), so the value is held ([`is_pinned`]).

use super::runs::runs;

/// Fewest steps at one value that count as pinned when no season was detected: an
/// exact repeat of a dozen noisy samples does not happen by chance.
pub const MIN_RUN: usize = 12;

/// Values this close (the series is scaled to ±1) are the same value.
pub(super) const SAME: f64 = 1e-12;

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

/// Whether `y` has sat on its last value for at least [`MIN_RUN`] steps and either a
/// whole longest season (a cycle would have moved it) or, within a cycle, longer than
/// any run that ended on its own before and where no cycle of `seasons` (in steps) sat
/// on it a cycle ago: a job that stopped mid-cycle, not a nightly idle nor one of the
/// series' usual pauses.
pub fn is_pinned(y: &[f64], seasons: &[f64]) -> bool {
    let run = trailing_run(y);
    let longest = seasons.iter().copied().fold(0.0, f64::max);
    run >= MIN_RUN
        && (run as f64 >= longest
            || (run > longest_pause(&y[..y.len() - run], longest)
                && !seasons.iter().any(|&m| sat_a_cycle_ago(y, run, m))))
}

/// The longest run of equal values in `y` shorter than `longest` steps (a pause that
/// ended within a cycle); 0 without one.
fn longest_pause(y: &[f64], longest: f64) -> usize {
    runs(y, SAME)
        .map(|r| r.len())
        .filter(|&len| (len as f64) < longest)
        .max()
        .unwrap_or(0)
}

/// Whether most of the last `run` steps of `y`, a cycle of `m` steps earlier, sat on
/// the value `y` ends on.
fn sat_a_cycle_ago(y: &[f64], run: usize, m: f64) -> bool {
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

    #[test]
    fn the_run_counts_equal_values_at_the_end() {
        assert_eq!(trailing_run(&[]), 0);
        assert_eq!(trailing_run(&[1.0, 0.0, 0.0, 0.0]), 3);
        assert_eq!(trailing_run(&[0.0, 0.0, 0.5]), 1);
    }

    #[test]
    fn pinned_needs_a_whole_season_and_the_minimum_run() {
        let mut y: Vec<f64> = (0..100).map(|i| (i as f64 * 0.7).sin()).collect();
        y.extend([1.0; 30]);
        assert!(is_pinned(&y, &[24.0]));
        y.truncate(100 + MIN_RUN - 1);
        assert!(!is_pinned(&y, &[]), "fewer than MIN_RUN steps");
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
    fn a_job_stopped_mid_cycle_is_pinned() {
        let mut y = iterations(600);
        y.extend([0.0; 30]);
        assert!(is_pinned(&y, &[60.0]), "30 steps at 0, never seen before");
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
