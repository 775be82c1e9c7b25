//! Which periodogram peaks stand out from the noise: a whitened Fisher's g-test.
//!
//! Fisher's g-test assumes white noise, under which every Fourier ordinate of the
//! periodogram is exponential with the same mean. GPU signals are rarely white: random
//! walks and slow drifts pile power into low frequencies and would pass a plain g-test.
//! So each ordinate is first divided by a local background: a line fitted to log-power
//! against log-frequency within a quarter of its frequency either side (at least 8 bins), which
//! follows the red slope, with peaks left out of the fit. The whitened ordinates are then
//! tested with Fisher's statistic g = max / sum, sequentially: after a peak is taken,
//! the next is tested against the remaining sum with one ordinate fewer (Siegel's
//! sequential form). The p-value is the first term of Fisher's exact series,
//! M (1 - g)^(M-1): an upper bound that is tight whenever p is small, which is the only
//! range where the decision matters.

/// The background never drops below this fraction of the mean ordinate: a noise-free
/// signal has only leakage between its lines, which must not count as noise.
const NOISE_FLOOR: f64 = 1e-3;

/// One local maximum of the whitened periodogram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    /// The Fourier index k (k cycles over the series).
    pub k: usize,
    /// The ordinate divided by its local background.
    pub ratio: f64,
}

/// The whitened Fourier ordinates for k in `k_min..=k_max` and their local maxima.
#[derive(Debug, Clone)]
pub struct Whitened {
    /// First tested Fourier index.
    pub k_min: usize,
    /// `ratio[i]` belongs to Fourier index `k_min + i`.
    pub ratio: Vec<f64>,
    /// The local background (exponential mean) each ratio was divided by.
    pub background: Vec<f64>,
    /// Sum of all ratios: the denominator of Fisher's g.
    pub total: f64,
}

/// Whitens the Fourier ordinates (`power[2k]`) for k in `k_min..=k_max`.
pub fn whiten(power: &[f64], k_min: usize, k_max: usize) -> Option<Whitened> {
    let k_all = (power.len() - 1) / 2;
    if k_min > k_max || k_max > k_all || k_min == 0 {
        return None;
    }
    let ordinates: Vec<f64> = (0..=k_all).map(|k| power[2 * k]).collect();
    let floor = NOISE_FLOOR * ordinates[1..].iter().sum::<f64>() / k_all as f64;
    let background: Vec<f64> = background(&ordinates, k_min, k_max)
        .into_iter()
        .map(|b| b.max(floor))
        .collect();
    let ratio: Vec<f64> = (k_min..=k_max)
        .zip(&background)
        .map(|(k, &b)| if b > 0.0 { ordinates[k] / b } else { 0.0 })
        .collect();
    let total = ratio.iter().sum();
    Some(Whitened {
        k_min,
        ratio,
        background,
        total,
    })
}

/// Local exponential means at each k in `k_min..=k_max`. At geometrically spaced
/// anchors a line is fitted to log-power against log-frequency over the anchor's window
/// (refitted once without points far above it, so peaks do not lift their own
/// background); the fits are interpolated in log-log space. O(n) overall.
fn background(ordinates: &[f64], k_min: usize, k_max: usize) -> Vec<f64> {
    let k_all = ordinates.len() - 1;
    LOG_K.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() < k_all + 1 {
            *cache = (0..=k_all).map(|k| (k.max(1) as f64).ln()).collect();
        }
        background_with(ordinates, &cache[..=k_all], k_min, k_max)
    })
}

thread_local! {
    /// ln k for k = 0.. (ln 1 at 0), grown on demand: the same for every series.
    static LOG_K: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn background_with(ordinates: &[f64], log_k: &[f64], k_min: usize, k_max: usize) -> Vec<f64> {
    let k_all = ordinates.len() - 1;
    let log_p: Vec<f64> = ordinates.iter().map(|p| p.max(1e-300).ln()).collect();
    let mut anchors: Vec<(f64, f64)> = Vec::new();
    let mut k = k_min as f64;
    loop {
        let kc = k.round() as usize;
        let half = ((kc as f64) * HALF_WIDTH).max(8.0) as usize;
        let lo = kc.saturating_sub(half).max(1);
        let hi = (kc + half).min(k_all);
        let level = local_log_level(&log_k[lo..=hi], &log_p[lo..=hi], log_k[kc]);
        anchors.push((log_k[kc], level));
        if kc >= k_max {
            break;
        }
        k = (k * ANCHOR_SPACING).max(k + 1.0).min(k_max as f64);
    }
    let mut out = Vec::with_capacity(k_max - k_min + 1);
    let mut a = 0;
    for k in k_min..=k_max {
        let lk = (k as f64).ln();
        while a + 1 < anchors.len() && anchors[a + 1].0 < lk {
            a += 1;
        }
        let (x0, y0) = anchors[a];
        let v = match anchors.get(a + 1) {
            Some(&(x1, y1)) if x1 > x0 => y0 + (y1 - y0) * ((lk - x0) / (x1 - x0)).clamp(0.0, 1.0),
            _ => y0,
        };
        out.push(v.exp());
    }
    out
}

/// A background window spans k·(1 ± this), at least 8 bins either side.
const HALF_WIDTH: f64 = 0.25;
/// Ratio between successive anchor frequencies.
const ANCHOR_SPACING: f64 = 1.15;

/// Euler–Mascheroni constant: E[ln X] = ln(mean) - EULER for exponential X.
const EULER: f64 = 0.577_215_664_901_532_9;

/// Residuals (in ln units) above the first fit beyond which a point is left out.
const PEAK_RESIDUAL: f64 = 2.5;

/// ln of the exponential mean at ln k = `x0`, from a line through (ln k, ln power).
fn local_log_level(log_k: &[f64], log_p: &[f64], x0: f64) -> f64 {
    let pts = || log_k.iter().zip(log_p).map(move |(x, y)| (x - x0, *y));
    let (a, b) = fit_line(pts());
    let (a, _) = fit_line(pts().filter(|(x, y)| y - (a + b * x) < PEAK_RESIDUAL));
    a + EULER
}

/// Least-squares intercept and slope, in one pass (x is centred near zero by the
/// caller, so the single-pass sums lose no precision).
fn fit_line(pts: impl Iterator<Item = (f64, f64)>) -> (f64, f64) {
    let (mut n, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x, y) in pts {
        n += 1.0;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    if n == 0.0 {
        return (0.0, 0.0);
    }
    let var = sxx - sx * sx / n;
    let b = if var > 1e-12 {
        (sxy - sx * sy / n) / var
    } else {
        0.0
    };
    ((sy - b * sx) / n, b)
}

impl Whitened {
    /// Local maxima of the whitened ordinates, strongest first.
    pub fn peaks(&self) -> Vec<Peak> {
        let mut peaks = self.local_maxima();
        peaks.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
        peaks
    }

    /// Local maxima of the whitened ordinates, in frequency order.
    fn local_maxima(&self) -> Vec<Peak> {
        let r = &self.ratio;
        (0..r.len())
            .filter(|&i| {
                let left = if i > 0 { r[i - 1] } else { f64::NEG_INFINITY };
                let right = r.get(i + 1).copied().unwrap_or(f64::NEG_INFINITY);
                r[i] >= left && r[i] > right
            })
            .map(|i| Peak {
                k: self.k_min + i,
                ratio: r[i],
            })
            .collect()
    }

    /// The `count` strongest local maxima, strongest first: what [`Whitened::peaks`]
    /// starts with, without sorting the long tail of small ones.
    pub fn strongest_peaks(&self, count: usize) -> Vec<Peak> {
        // Ties in frequency order, as the stable sort of `peaks` leaves them.
        let order = |a: &Peak, b: &Peak| b.ratio.total_cmp(&a.ratio).then(a.k.cmp(&b.k));
        let mut peaks = self.local_maxima();
        if peaks.len() > count {
            peaks.select_nth_unstable_by(count, order);
            peaks.truncate(count);
        }
        peaks.sort_by(order);
        peaks
    }

    /// Last tested Fourier index.
    pub fn k_max(&self) -> usize {
        self.k_min + self.ratio.len() - 1
    }

    /// Number of tested ordinates, M in Fisher's test.
    pub fn count(&self) -> usize {
        self.ratio.len()
    }
}

/// Fisher's p-value for the largest of `m` exponential ordinates being `g` of their sum.
pub fn fisher_p(g: f64, m: usize) -> f64 {
    if m < 2 || g.is_nan() || g <= 0.0 {
        return 1.0;
    }
    let m = m as f64;
    let log_p = m.ln() + (m - 1.0) * (1.0 - g.min(1.0)).max(0.0).ln();
    log_p.exp().min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fisher_p_is_small_for_a_dominant_peak_and_one_for_an_even_spread() {
        assert!(fisher_p(0.5, 1000) < 1e-100);
        assert_eq!(fisher_p(1.0 / 1000.0, 1000), 1.0);
        // Exact value for m = 2: p = 2 (1 - g) when g > 1/2.
        assert!((fisher_p(0.8, 2) - 0.4).abs() < 1e-12);
    }

    #[test]
    fn the_strongest_peaks_are_the_head_of_all_peaks() {
        let ratio: Vec<f64> = (0..400).map(|i| ((i * 7919) % 113) as f64 / 10.0).collect();
        let w = Whitened {
            k_min: 3,
            total: ratio.iter().sum(),
            background: vec![1.0; ratio.len()],
            ratio,
        };
        let all = w.peaks();
        assert!(all.len() > 20);
        assert_eq!(w.strongest_peaks(12), all[..12].to_vec());
        assert_eq!(w.strongest_peaks(1000), all);
    }

    #[test]
    fn whitening_flattens_a_red_spectrum() {
        // Power falling as 1/k^2 (a random walk's shape) whitens to ratios near ln 2 / ln 2.
        let n = 2000;
        let power: Vec<f64> = (0..=2 * n)
            .map(|j| 1.0 / ((j.max(1) as f64) / 2.0).powi(2))
            .collect();
        let w = whiten(&power, 3, n - 1).unwrap();
        let max = w.ratio.iter().cloned().fold(0.0, f64::max);
        assert!(
            max < 4.0,
            "a smooth red spectrum should not stand out: {max}"
        );
    }
}
