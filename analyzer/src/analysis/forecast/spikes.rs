//! Isolated spikes, replaced before a model is fitted.
//!
//! One absurd sample (1e200 among values near 10) dominates every sum of squares: the
//! fitted level jumps by α times the spike and the forecast with it. Clipping against
//! the median, as the periodicity detector does, would also clip a real level shift
//! (a job that started ten minutes ago), which the forecast must follow. A spike is
//! told apart by its shape: a sample far beyond *both* neighbours, on the same side,
//! where a level shift moves away from one neighbour only.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::analysis::extent::max_abs;

/// A sample more than this many large steps beyond both neighbours is a spike. A large
/// step is the 99th percentile of the absolute first differences, so excursions that
/// recur (bursts every few minutes) set the scale and are kept.
pub const SPIKE_STEPS: f64 = 10.0;

/// The last sample has one neighbour and may be the first of a new level; it is
/// replaced only when its jump exceeds this many large steps and this many times the
/// largest magnitude before it: beyond doubt.
pub const LAST_SPIKE_STEPS: f64 = 1000.0;

/// Replaces isolated spikes in `y` by the nearer neighbour; returns how many were
/// replaced. Safe for any finite values (differences are taken on halved values when
/// some value is beyond half the f64 range).
pub fn replace_spikes(y: &mut [f64]) -> usize {
    let n = y.len();
    if n < 3 {
        return 0;
    }
    let unit = if max_abs(y) > f64::MAX / 2.0 {
        0.5
    } else {
        1.0
    };
    // d[i] = y[i+1] - y[i], in units of `unit`.
    let d: Vec<f64> = y.windows(2).map(|w| w[1] * unit - w[0] * unit).collect();
    let q = large_step_without_one_spike(d.iter().map(|v| v.abs()));
    let t = SPIKE_STEPS * q;
    let mut replaced = Vec::new();
    // The first sample: one neighbour, but older data, so the interior rule applies.
    if d[0].abs() > t {
        replaced.push((0, y[1]));
    }
    for i in 1..n - 1 {
        let (left, right) = (d[i - 1], -d[i]);
        if left > t && right > t {
            replaced.push((i, y[i - 1].max(y[i + 1])));
        } else if left < -t && right < -t {
            replaced.push((i, y[i - 1].min(y[i + 1])));
        }
    }
    // Replacements use the original neighbours, so two adjacent spikes (+1e200, -1e200)
    // both fall back to the ordinary samples around them.
    for &(i, v) in &replaced {
        y[i] = v;
    }
    // The last sample is judged against the series without its spikes.
    let before = max_abs(&y[..n - 1]) * unit;
    let last_limit = LAST_SPIKE_STEPS * q.max(before);
    let jump = (y[n - 1] * unit - y[n - 2] * unit).abs();
    if last_limit > 0.0 && jump > last_limit {
        y[n - 1] = y[n - 2];
        return replaced.len() + 1;
    }
    replaced.len()
}

/// [`large_step`], but never one of the two largest steps: in fewer than about 200
/// samples a single spike's way in and out are more than 1% of the steps, and would
/// set the scale that is to tell it apart.
fn large_step_without_one_spike(sizes: impl ExactSizeIterator<Item = f64>) -> f64 {
    let n = sizes.len();
    ranked(sizes, p99(n).min(n.saturating_sub(3)))
}

/// Where the 99th percentile of `n` values sits in their order.
fn p99(n: usize) -> usize {
    // truncation is the floor of a product never negative, without a call to `floor`
    ((n - 1) as f64 * 0.99) as usize
}

/// A large step: the 99th percentile of the absolute first differences `sizes`, so
/// that changes which recur often (bursts) set the scale.
pub(super) fn large_step(sizes: impl ExactSizeIterator<Item = f64>) -> f64 {
    let n = sizes.len();
    ranked(sizes, p99(n))
}

/// Where [`large_step`] of `n` sizes sits counted from the largest (1: the largest).
pub(super) fn large_step_from_top(n: usize) -> usize {
    n - p99(n)
}

/// The value at `rank` (from 0, ascending by `total_cmp`) of the `values`, for a rank
/// near the top: only the values from it up are kept, in a heap whose least is the
/// answer so far, so a percentile costs one comparison for most values instead of a
/// selection over a copy of them all.
fn ranked(values: impl ExactSizeIterator<Item = f64>, rank: usize) -> f64 {
    let keep = values.len() - rank;
    let mut top: BinaryHeap<Reverse<i64>> = BinaryHeap::with_capacity(keep + 1);
    for v in values {
        let key = order_key(v);
        match top.peek() {
            Some(&Reverse(least)) if top.len() == keep => {
                if key > least {
                    top.pop();
                    top.push(Reverse(key));
                }
            }
            _ => top.push(Reverse(key)),
        }
    }
    let Reverse(least) = top.peek().copied().expect("a rank below the count");
    from_order_key(least)
}

/// An integer that orders as [`f64::total_cmp`] orders the floats.
pub(super) fn order_key(v: f64) -> i64 {
    flip(v.to_bits() as i64)
}

/// The float of an [`order_key`].
pub(super) fn from_order_key(key: i64) -> f64 {
    f64::from_bits(flip(key) as u64)
}

/// The bits below the sign of a negative number reversed, as [`f64::total_cmp`] does:
/// its own inverse, the sign bit being kept.
fn flip(bits: i64) -> i64 {
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 10.0 + (2.0 * std::f64::consts::PI * i as f64 / 24.0).sin())
            .collect()
    }

    #[test]
    fn absurd_samples_are_replaced_and_nothing_else() {
        let clean = cycle(1000);
        let mut y = clean.clone();
        y[0] = -1e200;
        y[100] = 1e200;
        y[150] = f64::MAX;
        y[151] = -f64::MAX;
        y[999] = 1.7e308;
        assert_eq!(replace_spikes(&mut y), 5);
        assert!(y.iter().all(|v| (8.9..=11.1).contains(v)), "{y:?}");
        let mut untouched = clean.clone();
        assert_eq!(replace_spikes(&mut untouched), 0);
        assert_eq!(untouched, clean);
    }

    #[test]
    fn level_shifts_and_recurring_bursts_are_data() {
        let mut shift: Vec<f64> = (0..300).map(|i| if i < 290 { 0.0 } else { 0.9 }).collect();
        let expected = shift.clone();
        assert_eq!(replace_spikes(&mut shift), 0);
        assert_eq!(shift, expected);
        let mut new_level: Vec<f64> = vec![0.0; 300];
        new_level[299] = 0.9;
        assert_eq!(replace_spikes(&mut new_level), 0, "a job that just started");
        let mut bursts: Vec<f64> = (0..300)
            .map(|i| if i % 50 == 0 { 0.9 } else { 0.0 })
            .collect();
        let expected = bursts.clone();
        assert_eq!(replace_spikes(&mut bursts), 0);
        assert_eq!(bursts, expected);
    }

    #[test]
    fn a_spike_in_a_short_series_is_replaced_and_two_bursts_are_kept() {
        // 30 samples: the spike's way in and out are 2 of 29 steps, beyond the 99th
        // percentile's reach, so they must not set the scale themselves
        let clean: Vec<f64> = (0..30).map(|i| 5.0 + 1e-9 * (i % 3) as f64).collect();
        let mut y = clean.clone();
        y[28] = -5e10;
        assert_eq!(replace_spikes(&mut y), 1);
        assert!(y.iter().all(|v| (4.9..5.1).contains(v)), "{y:?}");
        let mut bursts: Vec<f64> = (0..30)
            .map(|i| if i % 12 == 5 { 0.9 } else { 0.0 })
            .collect();
        let expected = bursts.clone();
        assert_eq!(
            replace_spikes(&mut bursts),
            0,
            "a burst that recurs is data"
        );
        assert_eq!(bursts, expected);
    }

    #[test]
    fn a_rank_near_the_top_is_the_sorted_values_at_that_rank() {
        let values: Vec<f64> = (0..500)
            .map(|i| ((i * 7919) % 263) as f64 * if i % 3 == 0 { -0.5 } else { 1.0 })
            .chain([0.0, -0.0, 17.0, 17.0])
            .collect();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for rank in [0, 250, 490, 495, 500, 503] {
            assert_eq!(
                ranked(values.iter().copied(), rank).to_bits(),
                sorted[rank].to_bits(),
                "rank {rank}"
            );
        }
    }

    #[test]
    fn alternating_extremes_and_subnormals_are_left_alone() {
        let mut alternating: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1e308 } else { -1e308 })
            .collect();
        assert_eq!(replace_spikes(&mut alternating), 0);
        let mut tiny: Vec<f64> = (0..100).map(|i| (i % 5) as f64 * 5e-324).collect();
        assert_eq!(replace_spikes(&mut tiny), 0);
    }
}
