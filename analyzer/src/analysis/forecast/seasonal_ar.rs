//! Today's deviation from the days before, fading: the seasonal ARIMA
//! (1,0,0)(0,1,1) of a season of m steps. The change over one season, w_t = y_t − y_{t−m},
//! follows w_t = φ·w_{t−1} + e_t − Θ·e_{t−m}: a load running above yesterday's stays
//! above it for the next hours at the rate such deviations faded before (φ), and the
//! seasonal profile is an average of past cycles that weights recent ones more (Θ),
//! not the last cycle alone as seasonal-naive's. On its own it forecast real hourly
//! loads better than seasonal-naive (transformer loads MASE 0.962 against 1.024,
//! ad-exchange rates 1.174 against 1.497;
//! `docs/validation/analyzer/forecast-public-session26.md`, section 3).

use super::candidates::Path;

/// The fades φ and weights Θ tried, then refined around the best by a step of
/// [`REFINE`]: one-step errors are cheap and a grid never leaves the stable region.
const PHIS: [f64; 7] = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95];
const THETAS: [f64; 6] = [0.0, 0.2, 0.4, 0.6, 0.8, 0.9];
const REFINE: f64 = 0.05;
/// Largest φ and Θ: at 1 the model is no longer stationary or invertible.
const MAX_COEFFICIENT: f64 = 0.98;

/// Fitted coefficients of the model for a season of `m` steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeasonalAr {
    /// Season in steps.
    pub m: usize,
    /// Fade of the seasonal change per step.
    pub phi: f64,
    /// Weight of the seasonal moving average.
    pub theta: f64,
    /// Variance of the one-step errors.
    pub sigma2: f64,
}

/// Cycles the fit needs: one to difference, one for the errors' moving average to
/// settle, one to measure them on.
pub const MIN_CYCLES: usize = 3;

/// Cycles of recent data the model is fitted to and run over, at least: one more than
/// the fit needs, so that an origin a cycle later still fits.
pub const WINDOW_CYCLES: usize = MIN_CYCLES + 1;

impl SeasonalAr {
    /// The coefficients with the least squared one-step error over `y`; `None` where
    /// `y` holds fewer than [`MIN_CYCLES`] seasons and two steps.
    pub fn fit(y: &[f64], m: usize) -> Option<SeasonalAr> {
        if m == 0 || y.len() < MIN_CYCLES * m + 2 {
            return None;
        }
        // taken once for every pair of coefficients tried
        let w = seasonal_changes(y, m);
        let (mut scratch, mut near_scratch) = (Vec::new(), Vec::new());
        let coarse = PHIS.iter().fold((f64::INFINITY, 0.0, 0.0), |best, &phi| {
            better_of(best, &w, m, phi, THETAS, &mut scratch)
        });
        let (_, phi0, theta0) = coarse;
        let clamp = |v: f64| v.clamp(0.0, MAX_COEFFICIENT);
        let steps = [-REFINE, 0.0, REFINE];
        let best = steps.iter().fold(coarse, |best, &dp| {
            let thetas = steps.map(|dt| clamp(theta0 + dt));
            better_of(best, &w, m, clamp(phi0 + dp), thetas, &mut near_scratch)
        });
        let (sum, phi, theta) = best;
        let counted = y.len() - (2 * m + 1);
        Some(SeasonalAr {
            m,
            phi,
            theta,
            sigma2: sum / counted as f64,
        })
    }

    /// Forecasts `h` steps after `y` with these coefficients, the errors run over `y`
    /// from its start (the caller passes a recent window); the last value held where
    /// `y` holds less than two seasons.
    pub fn forecast(&self, y: &[f64], h: usize) -> Path {
        let (m, n) = (self.m, y.len());
        if n < 2 * m + 1 {
            let last = y.last().copied().unwrap_or(0.0);
            return Path {
                point: vec![last; h],
                var: vec![self.sigma2; h],
            };
        }
        let (mut e, _) = errors(y, m, self.phi, self.theta);
        let mut ext = y.to_vec();
        let mut w_prev = y[n - 1] - y[n - 1 - m];
        for t in n..n + h {
            let w = self.phi * w_prev - self.theta * e[t - m];
            ext.push(ext[t - m] + w);
            e.push(0.0);
            w_prev = w;
        }
        Path {
            point: ext.split_off(n),
            var: self.variances(h),
        }
    }

    /// The forecast error variance at each of `h` steps: σ² times the running sum of the
    /// squared weights of past errors (the model's response to one error).
    fn variances(&self, h: usize) -> Vec<f64> {
        let m = self.m;
        // the response of the seasonal change (w) and of the series (psi) to one error
        let mut psi: Vec<f64> = Vec::with_capacity(h);
        let (mut w, mut total) = (0.0, 0.0);
        (0..h)
            .map(|j| {
                let shock = match j {
                    0 => 1.0,
                    _ if j == m => -self.theta,
                    _ => 0.0,
                };
                w = self.phi * w + shock;
                let yj = w + if j >= m { psi[j - m] } else { 0.0 };
                psi.push(yj);
                total += yj * yj;
                self.sigma2 * total
            })
            .collect()
    }
}

/// `best` (squared error, φ, Θ), or the first of `phi` with `thetas` that errs less:
/// the first pair tried wins ties.
fn better_of<const K: usize>(
    best: (f64, f64, f64),
    w: &[f64],
    m: usize,
    phi: f64,
    thetas: [f64; K],
    scratch: &mut Vec<[f64; K]>,
) -> (f64, f64, f64) {
    let sses = squared_errors(w, m, phi, thetas, scratch);
    thetas.iter().zip(sses).fold(best, |best, (&theta, sse)| {
        if sse < best.0 {
            (sse, phi, theta)
        } else {
            best
        }
    })
}

/// The seasonal changes `w_t = y_t - y_{t-m}` (0 before step m).
fn seasonal_changes(y: &[f64], m: usize) -> Vec<f64> {
    (0..y.len())
        .map(|t| if t >= m { y[t] - y[t - m] } else { 0.0 })
        .collect()
}

/// The sums of squared one-step errors for `phi` and each of `thetas` over the
/// seasonal changes `w`, from step 2m+1 on (where the moving average has run a
/// season), in one pass: the pairs' recursions run side by side, so their additions
/// overlap instead of waiting on one another. `scratch` is left holding each step's
/// errors (zero before the first seasonal change has a predecessor).
fn squared_errors<const K: usize>(
    w: &[f64],
    m: usize,
    phi: f64,
    thetas: [f64; K],
    scratch: &mut Vec<[f64; K]>,
) -> [f64; K] {
    let n = w.len();
    scratch.clear();
    scratch.resize(n, [0.0; K]);
    let mut sse = [0.0; K];
    for t in m + 1..n {
        let base = w[t] - phi * w[t - 1];
        let back = scratch[t - m];
        let mut e = [0.0; K];
        for k in 0..K {
            e[k] = base + thetas[k] * back[k];
        }
        scratch[t] = e;
        if t > 2 * m {
            for k in 0..K {
                sse[k] += e[k] * e[k];
            }
        }
    }
    sse
}

/// The one-step errors of the model over `y` and their sum of squares
/// ([`squared_errors`] for one pair).
fn errors(y: &[f64], m: usize, phi: f64, theta: f64) -> (Vec<f64>, f64) {
    let mut e = Vec::new();
    let [sse] = squared_errors(&seasonal_changes(y, m), m, phi, [theta], &mut e);
    (e.into_iter().map(|[e]| e).collect(), sse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::{fading_days, usual_day};

    #[test]
    fn a_deviation_that_fades_is_fitted_and_forecast_fading() {
        let y = fading_days(24 * 40, 0.9, 3);
        let fit = SeasonalAr::fit(&y, 24).expect("forty days fit");
        assert!(fit.phi >= 0.75, "{fit:?}");
        // the seasonal average is long (the profile does not change): Θ near 1
        assert!(fit.theta >= 0.7, "{fit:?}");
        // a deviation of +8 at the end: the forecast starts above the profile and
        // returns to it within the day
        let mut z = y.clone();
        let n = z.len();
        for (k, v) in z[n - 6..].iter_mut().enumerate() {
            *v += 8.0 * (k + 1) as f64 / 6.0;
        }
        let p = fit.forecast(&z, 48);
        assert!(
            p.point[0] - usual_day(n) > 4.0,
            "{}",
            p.point[0] - usual_day(n)
        );
        assert!(
            (p.point[47] - usual_day(n + 47)).abs() < 2.5,
            "{}",
            p.point[47] - usual_day(n + 47)
        );
        assert!(p.var.windows(2).all(|v| v[1] >= v[0]), "{:?}", p.var);
    }

    #[test]
    fn a_season_repeated_exactly_is_forecast_exactly() {
        let y: Vec<f64> = (0..24 * 5).map(|t| (t % 24) as f64).collect();
        let fit = SeasonalAr::fit(&y, 24).expect("five days fit");
        let p = fit.forecast(&y, 30);
        let expected: Vec<f64> = (0..30).map(|t| (t % 24) as f64).collect();
        assert_eq!(p.point, expected);
        assert_eq!(fit.sigma2, 0.0);
    }

    #[test]
    fn too_few_cycles_fit_nothing_and_a_short_window_holds_the_last_value() {
        let y: Vec<f64> = (0..24 * 3 + 1).map(|t| (t % 24) as f64).collect();
        assert_eq!(SeasonalAr::fit(&y, 24), None);
        assert_eq!(SeasonalAr::fit(&y, 0), None);
        let fit = SeasonalAr::fit(&[y.clone(), y.clone()].concat(), 24).unwrap();
        let p = fit.forecast(&y[..40], 3);
        assert_eq!(p.point, vec![y[39]; 3]);
    }
}
