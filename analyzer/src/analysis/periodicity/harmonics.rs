//! Harmonic summation: a test that pools the harmonics of a candidate fundamental.
//!
//! A narrow pulse (a checkpoint dip, a cron spike, a sawtooth's drop) spreads its power
//! over many harmonics of similar size, so no single periodogram peak stands out, while
//! the sum of the whitened ordinates at f, 2f, …, Hf does. Under white noise each
//! whitened ordinate of the tapered periodogram is exponential with mean 1 (at any
//! frequency, not only Fourier ones), and harmonics of a fundamental at least 3 Fourier
//! bins up are 3 or more bins apart, where Hann-tapered ordinates are nearly
//! independent: the sum of H of them is Gamma(H, 1), whose tail is exact and cheap,
//! e^(−s) Σ_(i<H) s^i / i!. Fundamentals are tried on a quarter of the padded grid (an
//! eighth of a Fourier bin), so the H-th harmonic is read within H/16 + 1/4 bin of
//! where it is; H runs over 2, 4, 8, 16, as in pulsar searches. The p-value of the best
//! (fundamental, H) is multiplied by the number of pairs tried (Bonferroni): honest
//! however correlated neighbouring candidates are. Red noise is handled by the same
//! local whitening as the single-peak test ([`super::significance`]), and the
//! autocorrelation still has to confirm the period.

use super::significance::Whitened;

/// Harmonic counts summed.
const LEVELS: [usize; 4] = [2, 4, 8, 16];
/// Fundamental candidates per bin of the padded (half-Fourier-bin) grid.
const SUBSTEPS: usize = 4;
/// Most candidates returned.
const MAX_CANDIDATES: usize = 3;

/// A fundamental whose harmonics together stand out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Cycles over the series (a fractional Fourier index).
    pub k: f64,
    /// Harmonics in the winning sum.
    pub harmonics: usize,
    /// Bonferroni-corrected p-value of the sum.
    pub p: f64,
}

/// The whitened tapered periodogram on the padded grid (index j is j/2 cycles over the
/// series), for j in `2·k_min..=2·k_max`: the Fourier ordinates' backgrounds, and at
/// odd j the geometric mean of the two around it.
fn whitened_padded(power: &[f64], w: &Whitened) -> Vec<f64> {
    let j_max = 2 * w.k_max();
    let mut out = vec![0.0; j_max + 1];
    for (j, slot) in out.iter_mut().enumerate().skip(2 * w.k_min) {
        let i = j / 2 - w.k_min;
        let b = if j % 2 == 0 {
            w.background[i]
        } else {
            (w.background[i] * w.background[i + 1]).sqrt()
        };
        *slot = if b > 0.0 { power[j] / b } else { 0.0 };
    }
    out
}

/// ln P(Gamma(h, 1) ≥ s): the probability that h unit exponentials sum to s or more.
pub fn log_gamma_tail(h: usize, s: f64) -> f64 {
    if s <= 0.0 {
        return 0.0;
    }
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for i in 1..h {
        term *= s / i as f64;
        sum += term;
    }
    (sum.ln() - s).min(0.0)
}

/// The smallest uncorrected ln p-value over every (fundamental, H) tried, and how many
/// were tried: the null statistic of the search, for calibrating its correction.
pub fn min_log_p(power: &[f64], w: &Whitened) -> (f64, usize) {
    let r = whitened_padded(power, w);
    let (m_lo, m_hi) = (2 * w.k_min * SUBSTEPS, (r.len() - 1) * SUBSTEPS / 2);
    let mut top = [0.0f64; LEVELS.len()];
    for m in m_lo..=m_hi {
        for_each_level(&r, m, |l, sum| top[l] = top[l].max(sum));
    }
    let lp = (0..LEVELS.len())
        .map(|l| log_gamma_tail(LEVELS[l], top[l]))
        .fold(0.0, f64::min);
    (lp, trial_count(r.len() - 1, m_lo, m_hi))
}

/// Fundamentals (at least `k_min` cycles) whose harmonic sums pass `alpha` after the
/// correction for every (fundamental, H) tried, best first, at most 3, each more than
/// 3% from a better one.
pub fn candidates(power: &[f64], w: &Whitened, alpha: f64) -> Vec<Candidate> {
    let r = whitened_padded(power, w);
    let j_max = r.len() - 1;
    let m_lo = 2 * w.k_min * SUBSTEPS;
    // Fundamentals m / SUBSTEPS on the padded grid with at least 2 harmonics in range.
    let m_hi = j_max * SUBSTEPS / 2;
    if m_hi < m_lo {
        return Vec::new();
    }
    let log_trials = (trial_count(j_max, m_lo, m_hi).max(1) as f64).ln();
    let log_alpha = alpha.ln();
    // The sum each level needs to pass, found once: below it no logarithm is taken,
    // so a series where nothing stands out costs only the sums.
    let need: Vec<f64> = LEVELS
        .iter()
        .map(|&h| sum_needed(h, log_alpha - log_trials))
        .collect();
    // The best corrected ln p per fundamental and its level (infinite when no level
    // passes: above any passing value, so local minima are unchanged).
    let best: Vec<(f64, usize)> = (m_lo..=m_hi)
        .map(|m| {
            let mut b = (f64::INFINITY, 0usize);
            for_each_level(&r, m, |l, sum| {
                if sum >= need[l] {
                    let lp = log_gamma_tail(LEVELS[l], sum) + log_trials;
                    if lp < b.0 {
                        b = (lp, LEVELS[l]);
                    }
                }
            });
            b
        })
        .collect();
    let mut order: Vec<usize> = (0..best.len())
        .filter(|&i| best[i].0 <= log_alpha && is_local_min(&best, i))
        .collect();
    order.sort_by(|a, b| best[*a].0.total_cmp(&best[*b].0));
    let mut found: Vec<Candidate> = Vec::new();
    for i in order {
        let k = (m_lo + i) as f64 / (2 * SUBSTEPS) as f64;
        if found.iter().any(|c| (c.k - k).abs() < 0.03 * c.k) {
            continue;
        }
        found.push(Candidate {
            k,
            harmonics: best[i].1,
            p: best[i].0.exp().min(1.0),
        });
        if found.len() >= MAX_CANDIDATES {
            break;
        }
    }
    found
}

/// The number of (fundamental, level) pairs [`for_each_level`] visits for the
/// fundamentals `m_lo..=m_hi`: level H reaches fundamentals up to (4·j_max + 1) / H.
fn trial_count(j_max: usize, m_lo: usize, m_hi: usize) -> usize {
    LEVELS
        .iter()
        .map(|&h| {
            let top = ((SUBSTEPS * j_max + SUBSTEPS / 2 - 1) / h).min(m_hi);
            (top + 1).saturating_sub(m_lo)
        })
        .sum()
}

/// A sum of `h` whitened ordinates below which ln P(Gamma(h, 1) ≥ sum) stays above
/// `log_p` (bisection; the bound returned errs low, so no passing sum is skipped).
fn sum_needed(h: usize, log_p: f64) -> f64 {
    if log_p >= 0.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, h as f64 - log_p + 10.0);
    while log_gamma_tail(h, hi) > log_p {
        hi *= 2.0;
    }
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if log_gamma_tail(h, mid) > log_p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Calls `f(level index, sum)` for each level whose harmonics of the fundamental
/// `m / SUBSTEPS` (padded grid) are all in range; harmonic j is read at the nearest
/// padded bin, in integer arithmetic.
fn for_each_level(r: &[f64], m: usize, mut f: impl FnMut(usize, f64)) {
    let j_max = r.len() - 1;
    let (mut sum, mut j) = (0.0, 1);
    for (l, &h) in LEVELS.iter().enumerate() {
        if (h * m + SUBSTEPS / 2) / SUBSTEPS > j_max {
            return;
        }
        while j <= h {
            sum += r[(j * m + SUBSTEPS / 2) / SUBSTEPS];
            j += 1;
        }
        f(l, sum);
    }
}

fn is_local_min(best: &[(f64, usize)], i: usize) -> bool {
    let v = best[i].0;
    let left = if i > 0 { best[i - 1].0 } else { f64::INFINITY };
    let right = best.get(i + 1).map_or(f64::INFINITY, |b| b.0);
    v <= left && v < right
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gamma_tail_matches_known_values() {
        // One exponential: P(X ≥ s) = e^-s.
        assert!((log_gamma_tail(1, 3.0) + 3.0).abs() < 1e-12);
        // Two: e^-s (1 + s).
        let want = (-5.0f64).exp() * 6.0;
        assert!((log_gamma_tail(2, 5.0).exp() - want).abs() < 1e-12);
        // The mean of Gamma(16) is not in the tail; far beyond it is (4.1688e-12 at 60,
        // from the series summed independently).
        assert!(log_gamma_tail(16, 16.0).exp() > 0.4);
        let far = log_gamma_tail(16, 60.0).exp();
        assert!((far / 4.1688e-12 - 1.0).abs() < 0.001, "{far}");
    }

    #[test]
    fn the_trial_count_is_the_pairs_the_search_visits() {
        for j_max in [20usize, 81, 400, 8064] {
            let r = vec![1.0; j_max + 1];
            let m_lo = 24;
            let m_hi = j_max * SUBSTEPS / 2;
            let mut visited = 0;
            for m in m_lo..=m_hi {
                for_each_level(&r, m, |_, _| visited += 1);
            }
            assert_eq!(trial_count(j_max, m_lo, m_hi), visited, "j_max {j_max}");
        }
    }

    #[test]
    fn the_null_statistic_is_the_best_candidate_before_its_correction() {
        // A comb of harmonics every 10 Fourier bins (power at even j = Fourier k).
        let n = 400;
        let power: Vec<f64> = (0..=n)
            .map(|j| if j % 20 == 0 && j > 0 { 30.0 } else { 1.0 })
            .collect();
        let w = crate::analysis::periodicity::significance::whiten(&power, 3, 160).unwrap();
        let (lp, trials) = min_log_p(&power, &w);
        let best = candidates(&power, &w, 1.0)[0];
        let want = (lp + (trials as f64).ln()).exp().min(1.0);
        assert!((best.p / want - 1.0).abs() < 1e-9, "{} vs {want}", best.p);
        assert!((best.k - 10.0).abs() < 0.2, "{}", best.k);
    }

    #[test]
    fn the_sum_needed_is_where_the_tail_crosses_the_level() {
        for h in LEVELS {
            for log_p in [-3.0, -12.0, -40.0] {
                let s = sum_needed(h, log_p);
                assert!(log_gamma_tail(h, s) >= log_p, "h {h}: below at {s}");
                assert!(
                    log_gamma_tail(h, s + 1e-6) <= log_p + 1e-6,
                    "h {h}: {s} too low"
                );
            }
        }
        assert_eq!(sum_needed(4, 0.5), 0.0);
    }
}
