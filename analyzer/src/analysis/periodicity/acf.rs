//! Confirming and refining a candidate period on the autocorrelation.
//!
//! A real period shows as a hill of the autocorrelation at its lag: a local maximum
//! that rises clearly above the valley before it. Spectral leakage, harmonics of
//! bursty waveforms and red noise give periodogram peaks without such hills. The lag
//! is refined by a parabola through the hill's top three lags, then by the furthest
//! consistent multiple of it (k hills at k·T pin T down k times more precisely).

/// A confirmed hill of the autocorrelation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hill {
    /// The hill's lag, in steps (sub-lag, by parabolic interpolation).
    pub lag: f64,
    /// Autocorrelation at the first hill (bias-corrected), clamped to 0..=1.
    pub height: f64,
}

impl Hill {
    /// Whether this is the hill of `lag`: within half of it. A window around a short
    /// lag holds whole lags about its ends, and reaches the hill of twice the lag (a
    /// sawtooth of 5 steps was reported at 5 and at 2.5): a hill that far is another
    /// period's.
    pub fn is_own(&self, lag: f64) -> bool {
        (self.lag - lag).abs() < 0.5 * lag
    }
}

/// Thresholds a hill must pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HillRule {
    /// Least bias-corrected autocorrelation at the hill's top.
    pub min_height: f64,
    /// Least rise of the top above the lowest point between half its lag and its lag.
    pub min_prominence: f64,
}

/// The autocorrelation of `y` at `lag` about `centre` (not always its mean: a count at
/// 0 most of the time is measured from 0), computed directly: one lag needs no
/// transform. 0 for a series without spread. The callers' series are scaled to a
/// largest magnitude of 1, so no square overflows.
pub fn about(y: &[f64], centre: f64, lag: usize) -> f64 {
    about_with(y, centre, spread(y, centre), lag)
}

/// The sum of squares of `y` about `centre`: [`about`]'s denominator.
pub fn spread(y: &[f64], centre: f64) -> f64 {
    y.iter().map(|v| (v - centre) * (v - centre)).sum()
}

/// [`about`] with its denominator, `spread`, computed once for several lags.
pub fn about_with(y: &[f64], centre: f64, spread: f64, lag: usize) -> f64 {
    if spread <= 0.0 {
        return 0.0;
    }
    let covariance: f64 = y
        .iter()
        .zip(y.get(lag..).unwrap_or_default())
        .map(|(a, b)| (a - centre) * (b - centre))
        .sum();
    covariance / spread
}

/// [`about`] the mean of `y`.
pub fn about_mean(y: &[f64], lag: usize) -> f64 {
    about(y, y.iter().sum::<f64>() / y.len().max(1) as f64, lag)
}

/// Bias-corrected autocorrelation at an integer lag: the biased estimate × n / (n - lag).
fn corrected(acf: &[f64], lag: usize) -> f64 {
    let n = acf.len();
    acf[lag] * n as f64 / (n - lag) as f64
}

/// The highest local maximum of the autocorrelation in [center - half, center + half]
/// that passes `rule`.
pub fn confirm(acf: &[f64], center: f64, half: f64, rule: HillRule) -> Option<Hill> {
    let max_lag = acf.len() * 2 / 3;
    let top = best_local_max(acf, center, half, max_lag)?;
    let height = corrected(acf, top);
    let valley = (top / 2..top)
        .map(|l| corrected(acf, l))
        .fold(f64::INFINITY, f64::min);
    if height < rule.min_height || height - valley < rule.min_prominence {
        return None;
    }
    Some(Hill {
        lag: parabolic(acf, top),
        height: height.clamp(0.0, 1.0),
    })
}

/// Whether the series repeats at whole multiples of `hill`'s lag: the hill itself and
/// a local maximum within max(1.5, 3%) of j·lag for j = 2..=`count` (those within the
/// two thirds of the series [`confirm`] searches) are each at least `z` standard errors
/// of white noise's autocorrelation high (1/√(n − lag)). Noise rarely lines up hills at
/// every multiple of one lag; a periodic series does.
pub fn repeats(acf: &[f64], hill: &Hill, z: f64, count: usize) -> bool {
    let n = acf.len() as f64;
    let tall = |lag: f64, height: f64| height >= z / (n - lag).max(1.0).sqrt();
    let any_top = HillRule {
        min_height: f64::NEG_INFINITY,
        min_prominence: f64::NEG_INFINITY,
    };
    tall(hill.lag, hill.height)
        && (2..=count)
            .map(|j| j as f64 * hill.lag)
            .take_while(|&lag| lag < (acf.len() * 2 / 3) as f64)
            .all(|lag| {
                confirm(acf, lag, (0.03 * lag).max(1.5), any_top)
                    .is_some_and(|h| tall(h.lag, h.height))
            })
}

/// The shortest whole fraction of lag `t` (halved or divided by three, as often as it
/// holds) where `hill_at` finds a hill at least `share` as high as `hill`: a series
/// that repeats there repeats at every multiple too, and a multiple's hill can stand
/// higher by chance. Returns that lag, its hill, and how many times it divides `t`.
pub fn shortest_fraction(
    mut t: f64,
    mut hill: Hill,
    share: f64,
    hill_at: impl Fn(f64) -> Option<Hill>,
) -> (f64, Hill, f64) {
    let mut divisor = 1.0;
    while let Some((d, shorter)) = [2.0, 3.0].iter().find_map(|&d| {
        let h = hill_at(t / d).filter(|h| h.height >= share * hill.height)?;
        Some((d, h))
    }) {
        t /= d;
        divisor *= d;
        hill = shorter;
    }
    (t, hill, divisor)
}

/// The integer lag of the highest local maximum within the window, if any.
fn best_local_max(acf: &[f64], center: f64, half: f64, max_lag: usize) -> Option<usize> {
    let lo = ((center - half).floor().max(2.0)) as usize;
    let hi = ((center + half).ceil() as usize).min(max_lag.saturating_sub(1));
    (lo..=hi)
        .filter(|&l| {
            let c = corrected(acf, l);
            c >= corrected(acf, l - 1) && c > corrected(acf, l + 1)
        })
        .max_by(|a, b| corrected(acf, *a).total_cmp(&corrected(acf, *b)))
}

/// The vertex of the parabola through lags top-1, top, top+1.
fn parabolic(acf: &[f64], top: usize) -> f64 {
    top as f64
        + super::refine::vertex(
            corrected(acf, top - 1),
            corrected(acf, top),
            corrected(acf, top + 1),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acf_of(x: &[f64]) -> Vec<f64> {
        let n = x.len();
        let mean = x.iter().sum::<f64>() / n as f64;
        let c = |lag: usize| -> f64 {
            (0..n - lag)
                .map(|i| (x[i] - mean) * (x[i + lag] - mean))
                .sum()
        };
        let c0 = c(0);
        (0..n).map(|l| c(l) / c0).collect()
    }

    const RULE: HillRule = HillRule {
        min_height: 0.1,
        min_prominence: 0.1,
    };

    #[test]
    fn a_non_integer_period_is_refined_below_a_tenth_of_a_step() {
        let x: Vec<f64> = (0..600)
            .map(|i| (2.0 * std::f64::consts::PI * i as f64 / 12.37).sin())
            .collect();
        let hill = confirm(&acf_of(&x), 12.0, 2.0, RULE).expect("hill");
        assert!((hill.lag - 12.37).abs() < 0.05, "{}", hill.lag);
        assert!(hill.height > 0.9);
    }

    #[test]
    fn repeats_need_a_tall_hill_at_every_multiple() {
        let sine: Vec<f64> = (0..200)
            .map(|i| (2.0 * std::f64::consts::PI * i as f64 / 20.3).sin())
            .collect();
        let acf = acf_of(&sine);
        let hill = confirm(&acf, 20.0, 2.0, RULE).expect("hill");
        assert!(repeats(&acf, &hill, 2.5, 3));
        // One bump at lag 20 and nothing at 40 or 60: not a repeat.
        let bump: Vec<f64> = (0..200)
            .map(|l| {
                let d = (l as f64 - 20.0) / 3.0;
                if l == 0 {
                    1.0
                } else {
                    0.5 * (-d * d).exp()
                }
            })
            .collect();
        let one = confirm(&bump, 20.0, 2.0, RULE).expect("hill");
        assert!(!repeats(&bump, &one, 2.5, 3));
        assert!(
            repeats(&bump, &one, 2.5, 1),
            "the hill alone is tall enough"
        );
        // Too low for 200 points: 2.5 / √180 ≈ 0.19.
        let low = Hill {
            lag: hill.lag,
            height: 0.15,
        };
        assert!(!repeats(&acf, &low, 2.5, 1));
    }

    #[test]
    fn a_monotone_decay_has_no_hill() {
        let acf: Vec<f64> = (0..500).map(|l| (-(l as f64) / 40.0).exp()).collect();
        assert_eq!(confirm(&acf, 50.0, 10.0, RULE), None);
    }
}
