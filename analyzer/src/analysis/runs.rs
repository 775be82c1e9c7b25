//! Runs: the maximal stretches of a series that span no more than a band (one value,
//! with a band of 0). A job stopped, a GPU pinned, a process idle and a stretch of
//! idle power settling are all runs; the forecast's rules that hold, cut or snap to
//! them ([`super::forecast::pinned`], [`super::forecast::held`],
//! [`super::forecast::floor`], [`super::forecast::breaks`]) and the periodicity test's
//! stops ([`super::periodicity::prepare::longest_active`]) read them from one place.

use std::ops::Range;

/// The runs of `y`, in order, that span no more than `band`; they cover all of `y`.
pub fn runs(y: &[f64], band: f64) -> Runs<'_> {
    Runs { y, band, at: 0 }
}

/// Iterator over the runs of a series (see [`runs`]).
#[derive(Clone)]
pub struct Runs<'a> {
    y: &'a [f64],
    band: f64,
    at: usize,
}

impl Iterator for Runs<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        let first = *self.y.get(start)?;
        let mut end = start + 1;
        if self.band == 0.0 {
            // runs of one value, the most read: equal values are the runs the range
            // rule finds among numbers (sources drop NaN), without keeping the range
            end += self.y[end..].iter().take_while(|&&v| v == first).count();
            self.at = end;
            return Some(start..end);
        }
        let (mut lo, mut hi) = (first, first);
        while let Some(&v) = self.y.get(end) {
            let (l, h) = (lo.min(v), hi.max(v));
            if h - l > self.band {
                break;
            }
            (lo, hi) = (l, h);
            end += 1;
        }
        self.at = end;
        Some(start..end)
    }
}

/// How far the values of `y` range: its largest less its smallest (0 when empty).
pub fn span(y: &[f64]) -> f64 {
    let (lo, hi) = super::extent::extent(y);
    (hi - lo).max(0.0)
}

/// How many steps a reading of `y` is held: the lower quartile of the lengths of its
/// runs of one value. 1 for a series that moves every step, and for counts that often
/// repeat a small number by chance; 10 for a reading sampled every 10 s and scraped
/// every second (NVML's per-process utilization), whose runs are all a reading or
/// more, and say nothing about a job stopping until they last many readings.
pub fn hold(y: &[f64]) -> usize {
    // A hold of 2 or more needs three quarters of the runs 2 steps long or more, so at
    // most 4/7 as many runs as steps: a series that changes more often holds 1 step,
    // which one comparison a step tells (most series are such).
    let changes = y.windows(2).filter(|w| w[0] != w[1]).count();
    if 7 * (changes + 1) > 4 * y.len() {
        return 1;
    }
    // Runs are counted by length up to `SHORT`, the longer ones kept: most series
    // have thousands of runs and nearly all are short.
    const SHORT: usize = 64;
    let mut short = [0usize; SHORT + 1];
    let mut long: Vec<usize> = Vec::new();
    for r in runs(y, 0.0) {
        match short.get_mut(r.len()) {
            Some(count) => *count += 1,
            None => long.push(r.len()),
        }
    }
    let count = short.iter().sum::<usize>() + long.len();
    if count == 0 {
        return 1;
    }
    // the (count / 4)-th length from the shortest, as a selection would find it
    let mut before = count / 4;
    for (len, &c) in short.iter().enumerate() {
        if before < c {
            return len;
        }
        before -= c;
    }
    *long.select_nth_unstable(before).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_series_and_split_where_the_band_is_exceeded() {
        let y = [1.0, 1.0, 2.0, 2.05, 1.98, 5.0];
        let exact: Vec<_> = runs(&y, 0.0).collect();
        assert_eq!(exact, vec![0..2, 2..3, 3..4, 4..5, 5..6]);
        let near: Vec<_> = runs(&y, 0.1).collect();
        assert_eq!(near, vec![0..2, 2..5, 5..6]);
        assert_eq!(runs(&[], 0.0).count(), 0);
    }

    #[test]
    fn the_hold_is_how_long_a_reading_usually_lasts() {
        let moving: Vec<f64> = (0..100).map(|i| (i as f64 * 0.7).sin()).collect();
        assert_eq!(hold(&moving), 1);
        // sampled every 10 steps, two samples in a row sometimes equal
        let held: Vec<f64> = (0..300)
            .map(|i| [0.2, 0.8, 0.8, 0.5, 0.1][i / 10 % 5])
            .collect();
        assert_eq!(hold(&held), 10);
        assert_eq!(hold(&[]), 1);
        // counts of a few per step: repeats by chance, held by nothing
        let counts: Vec<f64> = (0..300u64)
            .map(|i| {
                (i.wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407)
                    >> 61) as f64
            })
            .collect();
        assert_eq!(hold(&counts), 1);
    }

    #[test]
    fn the_hold_of_long_readings_is_the_quartile_of_their_lengths() {
        // runs longer than those counted by length, and a mix across that length:
        // the answer is the selection's over every run's length
        for lengths in [
            vec![70, 80, 90, 100, 65],
            vec![64, 65, 3, 200, 64, 1, 90, 66],
            vec![1000],
        ] {
            let y: Vec<f64> = lengths
                .iter()
                .enumerate()
                .flat_map(|(k, &len)| std::iter::repeat_n(k as f64, len))
                .collect();
            let mut sorted = lengths.clone();
            sorted.sort_unstable();
            assert_eq!(hold(&y), sorted[lengths.len() / 4], "{lengths:?}");
        }
    }

    #[test]
    fn the_quick_answer_for_series_that_change_often_is_the_quartile_too() {
        // runs of 1-3 steps in every mix, around the 4/7 runs per step where the
        // answer is taken from the count of changes alone
        let mut e = crate::analysis::fixtures::Noise(3);
        for case in 0..2000 {
            let weights = [e.uniform(), e.uniform(), e.uniform()];
            let lengths: Vec<usize> = (0..(case % 40 + 1))
                .map(|_| {
                    let u = e.uniform() * weights.iter().sum::<f64>();
                    if u < weights[0] {
                        1
                    } else if u < weights[0] + weights[1] {
                        2
                    } else {
                        3
                    }
                })
                .collect();
            let y: Vec<f64> = lengths
                .iter()
                .enumerate()
                .flat_map(|(k, &len)| std::iter::repeat_n((k % 2) as f64, len))
                .collect();
            let mut sorted = lengths.clone();
            sorted.sort_unstable();
            assert_eq!(hold(&y), sorted[lengths.len() / 4], "{lengths:?}");
        }
    }
}
