//! Conditioning before the spectrum: linear detrend, outlier clipping, Hann taper.

use std::ops::Range;

use crate::analysis::extent::{extent, max_abs};
use crate::analysis::runs::runs;

/// Clip residuals beyond this many robust standard deviations (MAD × 1.4826).
pub const CLIP_SIGMAS: f64 = 5.0;

/// Before the trend is fitted, values beyond this many robust standard deviations of
/// the raw series are clipped. Trends, bursts and level shifts lie well inside; one
/// absurd sample (1e200 among values near 1) would otherwise pull the first line fit,
/// and, once the series is scaled to ±1, push the rest of it below f64 precision.
pub const FAR_SIGMAS: f64 = 10.0;

/// Conditions `x` for the spectrum: clips absurd values ([`FAR_SIGMAS`]), scales the
/// series to a largest magnitude of 1, removes a linear trend robustly (fit, clip
/// outlying residuals at [`CLIP_SIGMAS`], refit). Returns the residual variance in those
/// units (0 for an all-zero series), so it compares against a fixed floor whatever the
/// series' magnitude, from subnormal to near f64::MAX.
pub fn detrend_and_clip(x: &mut [f64]) -> f64 {
    if !detrend(x) {
        return 0.0;
    }
    clip_residuals(x)
}

/// The second half of [`detrend_and_clip`], on a series [`detrend`] conditioned: clips
/// outlying residuals at [`CLIP_SIGMAS`], refits the line and returns the residual
/// variance.
pub fn clip_residuals(x: &mut [f64]) -> f64 {
    clip_outliers(x, CLIP_SIGMAS);
    line_and_residual_variance(x)
}

/// Clips absurd values ([`FAR_SIGMAS`]), scales `x` to a largest magnitude of 1 and
/// subtracts the least-squares line; false (and `x` left unscaled) when `x` is empty
/// or all zero.
pub fn detrend(x: &mut [f64]) -> bool {
    if x.is_empty() {
        return false;
    }
    clip_far(x, FAR_SIGMAS);
    // Every later sum and product works on values within ±1: none can overflow, and
    // subnormal inputs become ordinary numbers instead of losing their bits.
    let s = max_abs(x);
    if s == 0.0 {
        return false;
    }
    for v in x.iter_mut() {
        *v /= s;
    }
    subtract_line(x);
    true
}

/// Subtracts the least-squares line through (index, value).
pub fn subtract_line(x: &mut [f64]) {
    line_and_residual_variance(x);
}

/// Subtracts the least-squares line through (index, value) and returns the mean
/// square of what is left. One pass gathers Σy, Σ(i − t̄)·y and Σy² (Σ(i − t̄)² is
/// n(n² − 1)/12), a second subtracts: the residual sum of squares is
/// Σ(y − ȳ)² − slope²·Σ(i − t̄)², so no third pass is needed.
fn line_and_residual_variance(x: &mut [f64]) -> f64 {
    let len = x.len();
    if len < 2 {
        return x.iter().map(|v| v * v).sum::<f64>() / len.max(1) as f64;
    }
    let n = len as f64;
    let t_mean = (n - 1.0) / 2.0;
    let (mut sy, mut sty, mut syy) = (0.0, 0.0, 0.0);
    for (i, y) in x.iter().enumerate() {
        let dt = i as f64 - t_mean;
        sy += y;
        sty += dt * y;
        syy += y * y;
    }
    let sxx = n * (n * n - 1.0) / 12.0;
    let y_mean = sy / n;
    let slope = sty / sxx;
    for (i, y) in x.iter_mut().enumerate() {
        *y -= y_mean + slope * (i as f64 - t_mean);
    }
    ((syy - sy * y_mean - slope * slope * sxx) / n).max(0.0)
}

/// Most values the median and MAD are taken from: an evenly strided sample of a long
/// series estimates them as well as the whole, at a fraction of the cost.
const SCALE_SAMPLE: usize = 4096;

/// How to measure the spread when more than half the values sit on the median.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WhenMadIsZero {
    /// The mean absolute deviation (× 1.2533): sparse bursts keep their share.
    MeanDeviation,
    /// The MAD of the values off the median: the typical size of an excursion, which
    /// one absurd value among few excursions cannot inflate the way it inflates a mean.
    OffMedian,
}

/// The bounds median ± k robust standard deviations of `x`, or `None` when the spread
/// is zero. Computed without overflow for any finite input: when some value is beyond
/// half the f64 range, deviations are taken on halved values (exact for normal
/// numbers); otherwise on the values themselves, so subnormals keep every bit. A bound
/// may be ±infinity (nothing is clipped on that side), never NaN.
fn robust_bounds(x: &[f64], k: f64, when_zero: WhenMadIsZero) -> Option<(f64, f64)> {
    if x.is_empty() {
        return None;
    }
    let unit = if max_abs(x) > f64::MAX / 2.0 {
        0.5
    } else {
        1.0
    };
    let stride = x.len().div_ceil(SCALE_SAMPLE).max(1);
    let mut buf: Vec<f64> = x.iter().step_by(stride).map(|v| v * unit).collect();
    let med = median_in_place(&mut buf);
    buf.clear();
    buf.extend(x.iter().step_by(stride).map(|v| (v * unit - med).abs()));
    let mad = median_in_place(&mut buf);
    let spread = if mad > 0.0 {
        mad * 1.4826
    } else {
        match when_zero {
            // Each term divided first: a plain sum of deviations near f64::MAX overflows.
            WhenMadIsZero::MeanDeviation => {
                let len = buf.len() as f64;
                buf.iter().map(|d| d / len).sum::<f64>() * 1.2533
            }
            WhenMadIsZero::OffMedian => {
                buf.retain(|d| *d > 0.0);
                if buf.is_empty() {
                    return None;
                }
                median_in_place(&mut buf) * 1.4826
            }
        }
    };
    if spread.is_nan() || spread <= 0.0 {
        return None;
    }
    let (lo, hi) = ((med - k * spread) / unit, (med + k * spread) / unit);
    // NaN cannot arise from finite inputs, but a NaN bound would panic in `clamp`.
    (lo <= hi).then_some((lo, hi))
}

fn clamp_all(x: &mut [f64], (lo, hi): (f64, f64)) {
    for v in x.iter_mut() {
        *v = v.clamp(lo, hi);
    }
}

/// Share of the range a still stretch spans at most.
pub const STILL_BAND: f64 = 0.05;

/// The longest stretch of `x` between its stops (at least `long` steps each); `None`
/// when there is no stop, or when the stops are half of `x` or more (a series mostly
/// stopped is idle, and its few blips no cycle; [`busy_stretch`] gives it anyway).
pub fn longest_active(x: &[f64], long: usize) -> Option<&[f64]> {
    busy_stretch(x, long)
        .filter(|(_, stopped)| 2 * stopped < x.len())
        .map(|(stretch, _)| stretch)
}

/// The longest stretch of `x` between its stops (at least `long` steps each) and how
/// many steps the stops take; `None` when there is no stop or nothing but stops. A
/// stop is a stretch within [`STILL_BAND`] of the range above the lowest value (a stopped job idles at the
/// floor), or a still stretch at another level that lasts [`LONE_FACTOR`] times as long
/// as any other (a job stopped while others keep the GPU's power at 130 W, or its
/// clocks at their boost); busy plateaus are not stops, as each cycle has one alike.
pub fn busy_stretch(x: &[f64], long: usize) -> Option<(&[f64], usize)> {
    let (lo, hi) = extent(x);
    // halves first: the range of values near ±f64::MAX overflows
    let band = STILL_BAND * 2.0 * (hi / 2.0 - lo / 2.0);
    let long = long.max(1);
    let mut stops = idle_stretches(x, lo + band, long);
    stops.extend(lone_still(x, band, long));
    stops.sort_by_key(|r| r.start);
    let (mut stopped, mut best, mut piece_start) = (0, 0..0, 0);
    for stop in stops {
        let start = stop.start.max(piece_start);
        stopped += stop.end.saturating_sub(start);
        if start > piece_start + best.len() {
            best = piece_start..start;
        }
        piece_start = piece_start.max(stop.end);
    }
    if x.len() - piece_start > best.len() {
        best = piece_start..x.len();
    }
    (stopped > 0 && !best.is_empty()).then(|| (&x[best], stopped))
}

/// How many times longer than any other still stretch one at a level above the floor
/// must be to be a stop.
pub const LONE_FACTOR: usize = 2;

/// The stretches of `x` at or below `ceiling` at least `long` steps.
fn idle_stretches(x: &[f64], ceiling: f64, long: usize) -> Vec<Range<usize>> {
    let long = long.max(1);
    let mut out = Vec::new();
    // The length of the idle stretch so far, kept without a branch on each value: a
    // noisy series crosses the ceiling at random, and a branch there is mispredicted
    // about every other step. Only the rare end of a long stretch branches.
    let mut len = 0usize;
    for (i, v) in x.iter().enumerate() {
        let idle = usize::from(*v <= ceiling);
        if (len >= long) & (idle == 0) {
            out.push(i - len..i);
        }
        len = (len + 1) * idle;
    }
    if len >= long {
        out.push(x.len() - len..x.len());
    }
    out
}

/// The longest still stretch of `x` (within `band`, at least `long` steps), where it
/// lasts [`LONE_FACTOR`] times as long as every other.
fn lone_still(x: &[f64], band: f64, long: usize) -> Option<Range<usize>> {
    let mut still: Vec<Range<usize>> = runs(x, band).filter(|r| r.len() >= long).collect();
    still.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let first = still.first()?;
    let second = still.get(1).map_or(0, |r| r.len());
    (first.len() >= LONE_FACTOR * second).then(|| first.clone())
}

/// Clamps values to median ± k robust standard deviations. The scale is the MAD, or the
/// mean absolute deviation when more than half the values sit on the median (sparse
/// bursts), and nothing is clipped when both are zero. Safe for any finite values.
pub fn clip_outliers(x: &mut [f64], k: f64) {
    if let Some(bounds) = robust_bounds(x, k, WhenMadIsZero::MeanDeviation) {
        clamp_all(x, bounds);
    }
}

/// Clamps values beyond median ± k robust standard deviations of the raw series, where
/// the scale is the MAD or, when more than half the values sit on the median (an idle
/// GPU), the MAD of the values off it. Safe for any finite values.
pub fn clip_far(x: &mut [f64], k: f64) {
    if let Some(bounds) = robust_bounds(x, k, WhenMadIsZero::OffMedian) {
        clamp_all(x, bounds);
    }
}

/// The median, reordering the buffer.
pub fn median_in_place(buf: &mut [f64]) -> f64 {
    let mid = buf.len() / 2;
    let (_, m, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    *m
}

/// The median of the `window` values centred on each (fewer at the ends).
pub fn running_median(y: &[f64], window: usize) -> Vec<f64> {
    let half = window / 2;
    let mut buf = Vec::with_capacity(window);
    (0..y.len())
        .map(|i| {
            buf.clear();
            buf.extend_from_slice(&y[i.saturating_sub(half)..(i + half + 1).min(y.len())]);
            median_in_place(&mut buf)
        })
        .collect()
}

/// Subtracts the mean cycle of `period` steps (phase-binned into round(period) bins,
/// so fractional periods stay aligned): what is left is the part of the series that
/// this period does not explain, harmonics included.
pub fn remove_cycle(x: &mut [f64], period: f64) {
    let bins = (period.round() as usize).max(1);
    let per_step = 1.0 / period;
    let bin = |i: usize| -> usize {
        let f = (i as f64 * per_step).fract() * bins as f64;
        ((f + 1e-9) as usize).min(bins - 1)
    };
    // Each sample's bin, computed once.
    let index: Vec<u32> = (0..x.len()).map(|i| bin(i) as u32).collect();
    let (mut sum, mut count) = (vec![0.0; bins], vec![0usize; bins]);
    for (&b, v) in index.iter().zip(x.iter()) {
        sum[b as usize] += v;
        count[b as usize] += 1;
    }
    for (s, c) in sum.iter_mut().zip(&count) {
        *s /= (*c).max(1) as f64;
    }
    for (&b, v) in index.iter().zip(x.iter_mut()) {
        *v -= sum[b as usize];
    }
}

/// The Hann window weight of sample `i` of `n`.
pub fn hann(i: usize, n: usize) -> f64 {
    let s = (std::f64::consts::PI * i as f64 / (n - 1).max(1) as f64).sin();
    s * s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_stretches_are_the_runs_at_or_below_the_ceiling_long_enough() {
        // each maximal run below the ceiling, read run by run
        let by_runs = |x: &[f64], ceiling: f64, long: usize| {
            let (mut out, mut start) = (Vec::new(), 0);
            while start < x.len() {
                let idle = x[start] <= ceiling;
                let len = x[start..]
                    .iter()
                    .take_while(|v| (**v <= ceiling) == idle)
                    .count();
                if idle && len >= long.max(1) {
                    out.push(start..start + len);
                }
                start += len;
            }
            out
        };
        let patterns: Vec<Vec<f64>> = vec![
            vec![],
            vec![0.0; 7],
            vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            (0..500).map(|i| ((i * 7919) % 13) as f64 / 12.0).collect(),
            (0..300)
                .map(|i| if (i / 17) % 3 == 0 { 0.01 } else { f64::NAN })
                .collect(),
        ];
        for x in &patterns {
            for long in [0, 1, 2, 3, 16] {
                for ceiling in [0.0, 0.2, 0.5] {
                    assert_eq!(
                        idle_stretches(x, ceiling, long),
                        by_runs(x, ceiling, long),
                        "{long} {ceiling} {x:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn idle_stretches_at_the_floor_split_and_busy_plateaus_stay() {
        // busy at exactly 1 for 30 steps, idle near 0 for 20, busy again for 25, then 5
        // at a lower busy level
        let mut x = vec![1.0; 80];
        x[30..50].iter_mut().for_each(|v| *v = 0.01);
        x[75..].iter_mut().for_each(|v| *v = 0.5);
        let kept = longest_active(&x, 12).expect("the idle stretch splits it");
        assert_eq!(
            kept,
            &x[..30],
            "the longer of 30 and 30 busy steps: the first"
        );
        assert_eq!(longest_active(&x[..70], 12), Some(&x[..30]));
        // an idle stretch shorter than `long` is part of the series
        assert_eq!(longest_active(&x, 21), None);
        // a series idle for half its length or more is idle, but for its busy stretch
        let mut mostly = vec![0.0; 80];
        mostly[..40].iter_mut().for_each(|v| *v = 1.0);
        assert_eq!(longest_active(&mostly, 12), None);
        assert_eq!(busy_stretch(&mostly, 12), Some((&mostly[..40], 40)));
        assert_eq!(busy_stretch(&[0.0; 80], 12), None);
        assert_eq!(longest_active(&[], 12), None);
    }

    #[test]
    fn a_still_stretch_above_the_floor_is_a_stop_only_when_no_plateau_is_like_it() {
        // busy plateaus of 40 steps at 1.0 with 10-step dips to 0.2, a floor of 0 at the
        // start; a stop of 100 steps at 0.3 between cycles
        let cycle = |k: usize| (0..50 * k).map(|i| if i % 50 < 40 { 1.0 } else { 0.2 });
        let mut x = vec![0.0; 3];
        x.extend(cycle(4));
        x.extend([0.3; 100]);
        x.extend(cycle(2));
        let kept = longest_active(&x, 30).expect("the stop is lone");
        assert_eq!(kept.len(), 203, "the stretch before the stop");
        // the same cycles without the stop: every plateau has one alike
        let plain: Vec<f64> = [0.0; 3].into_iter().chain(cycle(6)).collect();
        assert_eq!(longest_active(&plain, 30), None);
    }

    #[test]
    fn the_residual_variance_is_the_mean_square_left() {
        let mut x: Vec<f64> = (0..500)
            .map(|i| 0.3 - 0.001 * i as f64 + 0.2 * (((i * 7919) % 101) as f64 / 101.0 - 0.5))
            .collect();
        let v = line_and_residual_variance(&mut x);
        let direct = x.iter().map(|v| v * v).sum::<f64>() / 500.0;
        assert!((v / direct - 1.0).abs() < 1e-9, "{v} vs {direct}");
        let mean = x.iter().sum::<f64>() / 500.0;
        assert!(mean.abs() < 1e-12, "{mean}");
    }

    #[test]
    fn detrend_removes_a_line_despite_an_outlier() {
        let mut x: Vec<f64> = (0..100).map(|i| 3.0 + 0.5 * i as f64).collect();
        x[50] += 1000.0;
        detrend_and_clip(&mut x);
        assert!(x[10].abs() < 0.5 && x[90].abs() < 0.5, "{x:?}");
    }

    #[test]
    fn removing_a_fractional_cycle_leaves_the_other_component() {
        let cycle = |i: usize| (2.0 * std::f64::consts::PI * i as f64 / 37.3).sin();
        let other = |i: usize| if i % 5 == 0 { 1.0 } else { -0.25 };
        let mut x: Vec<f64> = (0..3000).map(|i| 10.0 * cycle(i) + other(i)).collect();
        remove_cycle(&mut x, 37.3);
        let left: f64 = (0..3000).map(|i| (x[i] - other(i)).powi(2)).sum::<f64>() / 3000.0;
        // The removed cycle has variance 50; binning a fractional period into whole
        // steps leaves about 0.25% of it.
        assert!(
            left < 0.25,
            "residual variance beyond the other component: {left}"
        );
    }

    #[test]
    fn extreme_and_subnormal_values_never_give_a_nan_bound() {
        let mut alternating: Vec<f64> = (0..100)
            .map(|i| if i % 2 == 0 { 1e308 } else { -1e308 })
            .collect();
        clip_outliers(&mut alternating, CLIP_SIGMAS);
        clip_far(&mut alternating, FAR_SIGMAS);
        assert!(alternating.iter().all(|v| v.is_finite()));
        let v = detrend_and_clip(&mut alternating);
        assert!(v.is_finite() && v > 0.1, "{v}");

        let mut spike: Vec<f64> = (0..100).map(|i| (i % 7) as f64).collect();
        spike[40] = f64::MAX;
        let v = detrend_and_clip(&mut spike);
        assert!(
            v.is_finite() && v > 1e-6,
            "the bulk must survive the spike: {v}"
        );

        let mut tiny: Vec<f64> = (0..100).map(|i| (i % 7) as f64 * 5e-324).collect();
        let v = detrend_and_clip(&mut tiny);
        assert!(
            v.is_finite() && v > 1e-3,
            "subnormals are scaled up, not lost: {v}"
        );
    }

    #[test]
    fn a_far_clip_leaves_level_shifts_and_clips_an_absurd_sample() {
        let mut x: Vec<f64> = (0..200).map(|i| if i < 190 { 0.0 } else { 0.9 }).collect();
        x[100] = 1e200;
        clip_far(&mut x, FAR_SIGMAS);
        assert_eq!(x[195], 0.9, "the level shift is data");
        assert!(x[100] < 1e3, "{}", x[100]);
    }

    #[test]
    fn sparse_bursts_are_kept_when_the_mad_is_zero() {
        let mut x = vec![0.0; 100];
        for i in (0..100).step_by(10) {
            x[i] = 5.0;
        }
        clip_outliers(&mut x, CLIP_SIGMAS);
        assert!(x[0] > 2.0, "bursts were flattened: {}", x[0]);
    }
}
