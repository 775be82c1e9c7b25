//! Conditioning before the spectrum: linear detrend, outlier clipping, Hann taper.

/// Clip residuals beyond this many robust standard deviations (MAD × 1.4826).
pub const CLIP_SIGMAS: f64 = 5.0;

/// Removes a linear trend robustly: fit, clip outlying residuals, refit on the clipped
/// values. Returns the residual variance after both steps.
pub fn detrend_and_clip(x: &mut [f64]) -> f64 {
    subtract_line(x);
    clip_outliers(x, CLIP_SIGMAS);
    subtract_line(x);
    let n = x.len() as f64;
    x.iter().map(|v| v * v).sum::<f64>() / n
}

/// Subtracts the least-squares line through (index, value).
pub fn subtract_line(x: &mut [f64]) {
    let n = x.len() as f64;
    if x.len() < 2 {
        return;
    }
    let t_mean = (n - 1.0) / 2.0;
    let y_mean = x.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in x.iter().enumerate() {
        let dt = i as f64 - t_mean;
        sxy += dt * (y - y_mean);
        sxx += dt * dt;
    }
    let slope = sxy / sxx;
    for (i, y) in x.iter_mut().enumerate() {
        *y -= y_mean + slope * (i as f64 - t_mean);
    }
}

/// Most values the median and MAD are taken from: an evenly strided sample of a long
/// series estimates them as well as the whole, at a fraction of the cost.
const SCALE_SAMPLE: usize = 4096;

/// Clamps values to median ± k robust standard deviations. The scale is the MAD, or the
/// mean absolute deviation when more than half the values sit on the median (sparse
/// bursts), and nothing is clipped when both are zero.
pub fn clip_outliers(x: &mut [f64], k: f64) {
    let stride = x.len().div_ceil(SCALE_SAMPLE).max(1);
    let mut buf: Vec<f64> = x.iter().step_by(stride).copied().collect();
    let med = median_in_place(&mut buf);
    buf.clear();
    buf.extend(x.iter().step_by(stride).map(|v| (v - med).abs()));
    let mad = median_in_place(&mut buf) * 1.4826;
    let scale = if mad > 0.0 {
        mad
    } else {
        buf.iter().sum::<f64>() / buf.len() as f64 * 1.2533
    };
    if scale <= 0.0 {
        return;
    }
    let (lo, hi) = (med - k * scale, med + k * scale);
    for v in x.iter_mut() {
        *v = v.clamp(lo, hi);
    }
}

/// The median, reordering the buffer.
pub fn median_in_place(buf: &mut [f64]) -> f64 {
    let mid = buf.len() / 2;
    let (_, m, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    *m
}

/// Subtracts the mean cycle of `period` steps (phase-binned into round(period) bins,
/// so fractional periods stay aligned): what is left is the part of the series that
/// this period does not explain, harmonics included.
pub fn remove_cycle(x: &mut [f64], period: f64) {
    let bins = (period.round() as usize).max(1);
    let bin = |i: usize| -> usize {
        let f = (i as f64 / period).fract() * bins as f64;
        ((f + 1e-9) as usize).min(bins - 1)
    };
    let (mut sum, mut count) = (vec![0.0; bins], vec![0usize; bins]);
    for (i, v) in x.iter().enumerate() {
        sum[bin(i)] += v;
        count[bin(i)] += 1;
    }
    for (s, c) in sum.iter_mut().zip(&count) {
        *s /= (*c).max(1) as f64;
    }
    for (i, v) in x.iter_mut().enumerate() {
        *v -= sum[bin(i)];
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
    fn sparse_bursts_are_kept_when_the_mad_is_zero() {
        let mut x = vec![0.0; 100];
        for i in (0..100).step_by(10) {
            x[i] = 5.0;
        }
        clip_outliers(&mut x, CLIP_SIGMAS);
        assert!(x[0] > 2.0, "bursts were flattened: {}", x[0]);
    }
}
