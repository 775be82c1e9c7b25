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
    /// Share of the ordinates' power (k ≥ 1) above `k_max`: cycles faster than the
    /// shortest period searched; 0 without power.
    pub fast_share: f64,
}

/// Whitens the Fourier ordinates (`power[2k]`) for k in `k_min..=k_max`.
pub fn whiten(power: &[f64], k_min: usize, k_max: usize) -> Option<Whitened> {
    let k_all = (power.len() - 1) / 2;
    if k_min > k_max || k_max > k_all || k_min == 0 {
        return None;
    }
    let ordinates: Vec<f64> = (0..=k_all).map(|k| power[2 * k]).collect();
    let power_total = ordinates[1..].iter().sum::<f64>();
    let floor = NOISE_FLOOR * power_total / k_all as f64;
    let fast = ordinates[k_max + 1..].iter().sum::<f64>();
    let fast_share = if power_total > 0.0 {
        fast / power_total
    } else {
        0.0
    };
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
        fast_share,
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
    let sums = PrefixSums::of(log_k, &log_p);
    let mut anchors: Vec<(f64, f64)> = Vec::new();
    let mut k = k_min as f64;
    loop {
        let kc = k.round() as usize;
        let half = ((kc as f64) * HALF_WIDTH).max(8.0) as usize;
        let lo = kc.saturating_sub(half).max(1);
        let hi = (kc + half).min(k_all);
        let level = local_log_level(&sums, log_k, &log_p, lo..=hi, log_k[kc]);
        anchors.push((log_k[kc], level));
        if kc >= k_max {
            break;
        }
        k = (k * ANCHOR_SPACING).max(k + 1.0).min(k_max as f64);
    }
    let mut out = Vec::with_capacity(k_max - k_min + 1);
    let mut a = 0;
    for &lk in &log_k[k_min..=k_max] {
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

/// Running sums of x, y, x², x·y over (ln k, ln power): any window's least-squares
/// line in O(1) instead of a pass over the window.
struct PrefixSums {
    /// `at[i]` sums points 0..i.
    at: Vec<Moments>,
}

/// Sums of a set of points (x, y): count, Σx, Σy, Σx², Σxy.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Moments {
    n: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
}

impl Moments {
    fn add(self, x: f64, y: f64, sign: f64) -> Moments {
        Moments {
            n: self.n + sign,
            x: self.x + sign * x,
            y: self.y + sign * y,
            xx: self.xx + sign * x * x,
            xy: self.xy + sign * x * y,
        }
    }

    /// The same points with x measured from `x0` (which keeps the fit well
    /// conditioned: x0 is the window's centre).
    fn centred(self, x0: f64) -> Moments {
        Moments {
            n: self.n,
            x: self.x - self.n * x0,
            y: self.y,
            xx: self.xx - 2.0 * x0 * self.x + self.n * x0 * x0,
            xy: self.xy - x0 * self.y,
        }
    }

    /// Least-squares intercept and slope.
    fn line(self) -> (f64, f64) {
        if self.n <= 0.0 {
            return (0.0, 0.0);
        }
        let var = self.xx - self.x * self.x / self.n;
        let b = if var > 1e-12 {
            (self.xy - self.x * self.y / self.n) / var
        } else {
            0.0
        };
        ((self.y - b * self.x) / self.n, b)
    }
}

impl PrefixSums {
    fn of(xs: &[f64], ys: &[f64]) -> PrefixSums {
        let mut at = Vec::with_capacity(xs.len() + 1);
        let mut m = Moments::default();
        at.push(m);
        for (x, y) in xs.iter().zip(ys) {
            m = m.add(*x, *y, 1.0);
            at.push(m);
        }
        PrefixSums { at }
    }

    /// The sums over points `lo..=hi`.
    fn window(&self, lo: usize, hi: usize) -> Moments {
        let (a, b) = (self.at[lo], self.at[hi + 1]);
        Moments {
            n: b.n - a.n,
            x: b.x - a.x,
            y: b.y - a.y,
            xx: b.xx - a.xx,
            xy: b.xy - a.xy,
        }
    }
}

/// ln of the exponential mean at ln k = `x0`, from a line through (ln k, ln power)
/// over the window `range`, refitted without the points far above the first line.
/// The first fit comes from the running sums; the refit subtracts the few points
/// left out, so the window is read once, to find them.
fn local_log_level(
    sums: &PrefixSums,
    log_k: &[f64],
    log_p: &[f64],
    range: std::ops::RangeInclusive<usize>,
    x0: f64,
) -> f64 {
    let all = sums.window(*range.start(), *range.end()).centred(x0);
    let (a, b) = all.line();
    let mut kept = all;
    for i in range {
        let (x, y) = (log_k[i] - x0, log_p[i]);
        if y - (a + b * x) >= PEAK_RESIDUAL {
            kept = kept.add(x, y, -1.0);
        }
    }
    kept.line().0 + EULER
}

impl Whitened {
    /// The whitened ordinate at Fourier index `i` (0 outside the tested band).
    pub fn ratio_at(&self, i: usize) -> f64 {
        i.checked_sub(self.k_min)
            .and_then(|j| self.ratio.get(j))
            .copied()
            .unwrap_or(0.0)
    }

    /// The higher whitened ordinate of the two Fourier indices either side of `k`
    /// cycles (0 outside the tested band).
    pub fn ratio_near(&self, k: f64) -> f64 {
        self.ratio_at(k.floor() as usize)
            .max(self.ratio_at(k.ceil() as usize))
    }

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
            fast_share: 0.0,
        };
        let all = w.peaks();
        assert!(all.len() > 20);
        assert_eq!(w.strongest_peaks(12), all[..12].to_vec());
        assert_eq!(w.strongest_peaks(1000), all);
    }

    /// The local level by two direct least-squares passes over the window.
    fn direct_level(log_k: &[f64], log_p: &[f64], x0: f64) -> f64 {
        let fit = |keep: &dyn Fn(f64, f64) -> bool| {
            let pts: Vec<(f64, f64)> = log_k
                .iter()
                .zip(log_p)
                .map(|(x, y)| (x - x0, *y))
                .filter(|(x, y)| keep(*x, *y))
                .collect();
            let n = pts.len() as f64;
            let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
            let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
            let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
            let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
            let b = sxy / sxx;
            (my - b * mx, b)
        };
        let (a, b) = fit(&|_, _| true);
        fit(&|x, y| y - (a + b * x) < PEAK_RESIDUAL).0 + EULER
    }

    #[test]
    fn the_running_sums_fit_what_direct_passes_fit() {
        let k_all = 5000;
        let log_k: Vec<f64> = (0..=k_all).map(|k| (k.max(1) as f64).ln()).collect();
        // A red slope, a jumble, and tall peaks every 97 bins that the refit leaves out.
        let log_p: Vec<f64> = (0..=k_all)
            .map(|k| {
                let peak = if k % 97 == 0 { 6.0 } else { 0.0 };
                -1.5 * log_k[k] + ((k * 7919) % 101) as f64 / 40.0 + peak
            })
            .collect();
        let sums = PrefixSums::of(&log_k, &log_p);
        for (lo, hi) in [(1, 17), (90, 110), (700, 1200), (3000, 5000)] {
            let x0 = log_k[(lo + hi) / 2];
            let got = local_log_level(&sums, &log_k, &log_p, lo..=hi, x0);
            let want = direct_level(&log_k[lo..=hi], &log_p[lo..=hi], x0);
            assert!((got - want).abs() < 1e-9, "{lo}..={hi}: {got} vs {want}");
        }
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
