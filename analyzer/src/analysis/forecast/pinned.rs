//! A series held at one exact value: a GPU pinned at 100%, a node idle at 0, a job
//! stopped. Held for a whole cycle, it shows no cycle and no trend operating now,
//! whatever its history did; validation on older stretches cannot see that (a job that
//! went idle an hour ago), so the value is held ([`is_pinned`]).

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

/// Whether `y` has sat on its last value for at least [`MIN_RUN`] steps and a whole
/// `longest_season` (in steps; 0 without one): a cycle would have moved it.
pub fn is_pinned(y: &[f64], longest_season: f64) -> bool {
    trailing_run(y) as f64 >= longest_season.max(MIN_RUN as f64)
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
        assert!(is_pinned(&y, 24.0));
        assert!(
            !is_pinned(&y, 48.0),
            "30 steps do not cover a 48-step cycle"
        );
        y.truncate(100 + MIN_RUN - 1);
        assert!(!is_pinned(&y, 0.0), "fewer than MIN_RUN steps");
    }
}
