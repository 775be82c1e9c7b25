//! The models a forecast is chosen from, behind one trait.
//!
//! A candidate's parameters are estimated once, on the data before the validation
//! origins ([`build`]); [`Candidate::forecast`] then runs the model with those
//! parameters over any prefix and forecasts from its end, so validating at several
//! origins costs a pass over the data each, not an optimisation each. Adding a model
//! is one `impl` and one line in [`build`].

use super::decompose::Seasonals;
use super::ets::{self, EtsFit, EtsSpec, Season, Trend};
use super::linear::{least_squares_line, LinearFit};

/// Evaluations the optimiser may spend per ETS model.
const MAX_EVALS: usize = 40;

/// A forecast path: point forecasts and prediction variances, step 1 first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Path {
    /// Point forecasts.
    pub point: Vec<f64>,
    /// Prediction variances (analytic; calibrated later on validation errors).
    pub var: Vec<f64>,
}

/// A forecasting model with its parameters fixed.
pub trait Candidate: Send + Sync {
    /// The model's name, e.g. `snaive(24)` or `ets(A,Ad,A)`.
    fn name(&self) -> String;
    /// The season reported with the forecast, in steps.
    fn period(&self) -> Option<f64> {
        None
    }
    /// Forecasts `h` steps after `y`.
    fn forecast(&self, y: &[f64], h: usize) -> Path;
    /// Forecasts `h` steps from each origin (a prefix length of `y`).
    fn backtest(&self, y: &[f64], origins: &[usize], h: usize) -> Vec<Path> {
        origins.iter().map(|&o| self.forecast(&y[..o], h)).collect()
    }
}

/// The last value, held; a random walk's variance.
pub struct Naive;

impl Candidate for Naive {
    fn name(&self) -> String {
        "naive".into()
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let last = y.last().copied().unwrap_or(0.0);
        let s2 = mean_square_diff(y, 1);
        Path {
            point: vec![last; h],
            var: (1..=h).map(|j| s2 * j as f64).collect(),
        }
    }
}

/// The value one season earlier (`k` seasons earlier beyond the first).
pub struct SeasonalNaive(pub Season);

impl Candidate for SeasonalNaive {
    fn name(&self) -> String {
        format!("snaive({})", trim(self.0.period()))
    }
    fn period(&self) -> Option<f64> {
        Some(self.0.period())
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let n = y.len();
        let m = self.0.period();
        let lag = m.round().max(1.0) as usize;
        let s2 = mean_square_diff(y, lag);
        let (point, var) = (1..=h)
            .map(|j| {
                let cycles = (j as f64 / m).ceil();
                let at = (n as f64 + j as f64 - 1.0 - cycles * m).round();
                let at = (at.max(0.0) as usize).min(n - 1);
                (y[at], s2 * cycles)
            })
            .unzip();
        Path { point, var }
    }
}

/// The least-squares line over the window.
pub struct Line;

impl Candidate for Line {
    fn name(&self) -> String {
        "linear".into()
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let (point, var) = LinearFit::fit(y).forecast(h);
        Path { point, var }
    }
}

/// Exponential smoothing with one season (or none); parameters from the training data.
pub struct Ets(pub EtsFit);

impl Candidate for Ets {
    fn name(&self) -> String {
        self.0.spec.name()
    }
    fn period(&self) -> Option<f64> {
        self.0.spec.season.map(|s| s.period())
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let (point, var) = self.0.rerun(y).forecast(h);
        Path { point, var }
    }
}

/// Every season removed by [`Seasonals`], then non-seasonal ETS or Theta on the rest.
pub struct Decomposed {
    /// The seasons, dominant first.
    pub seasons: Vec<Season>,
    /// ETS without season, fitted to the seasonally adjusted training data.
    pub fit: EtsFit,
    /// Theta: simple smoothing plus half the line's slope, instead of the ETS trend.
    pub theta: bool,
}

impl Candidate for Decomposed {
    fn name(&self) -> String {
        let periods: Vec<String> = self.seasons.iter().map(|s| trim(s.period())).collect();
        let rest = if self.theta {
            "theta".to_string()
        } else {
            self.fit.spec.name()
        };
        format!("mstl({})+{rest}", periods.join(","))
    }
    fn period(&self) -> Option<f64> {
        self.seasons.first().map(|s| s.period())
    }
    fn forecast(&self, y: &[f64], h: usize) -> Path {
        let seasonals = Seasonals::of(y, &self.seasons);
        let adjusted = seasonals.adjust(y);
        let fit = self.fit.rerun(&adjusted);
        let (mut point, var) = fit.forecast(h);
        if self.theta {
            // Theta(2) as simple smoothing with drift: half the slope of the line,
            // phased in as the level forgets its start.
            let (_, slope) = least_squares_line(&adjusted);
            let a = fit.alpha();
            let fade = (1.0 - a).powi(adjusted.len().min(i32::MAX as usize) as i32) / a;
            for (j, p) in point.iter_mut().enumerate() {
                *p += 0.5 * slope * (j as f64 + 1.0 / a - fade);
            }
        }
        for (p, s) in point.iter_mut().zip(seasonals.extend(h)) {
            *p += s;
        }
        Path { point, var }
    }
}

/// The candidates for `train` (scaled to ±1) with `seasons` (dominant first; each fits
/// twice in `train`): naive, seasonal-naive per season, the line, ETS with the dominant
/// season (or none) and trend none / additive / damped, and with several seasons (or
/// one) the decomposition with ETS(A,N,N), ETS(A,Ad,N) and Theta.
pub fn build(train: &[f64], seasons: &[Season]) -> Vec<Box<dyn Candidate>> {
    let mut out: Vec<Box<dyn Candidate>> = vec![Box::new(Naive)];
    for s in seasons {
        out.push(Box::new(SeasonalNaive(*s)));
    }
    if train.len() < 10 {
        return out;
    }
    out.push(Box::new(Line));
    let dominant = seasons.first().copied();
    for trend in [Trend::None, Trend::Additive, Trend::Damped] {
        let spec = EtsSpec {
            trend,
            season: dominant,
        };
        out.push(Box::new(Ets(ets::fit(train, spec, MAX_EVALS))));
    }
    if !seasons.is_empty() {
        let adjusted = Seasonals::of(train, seasons).adjust(train);
        for trend in [Trend::None, Trend::Damped] {
            let spec = EtsSpec {
                trend,
                season: None,
            };
            let fit = ets::fit(&adjusted, spec, MAX_EVALS);
            if trend == Trend::None {
                out.push(Box::new(Decomposed {
                    seasons: seasons.to_vec(),
                    fit: fit.clone(),
                    theta: true,
                }));
            }
            out.push(Box::new(Decomposed {
                seasons: seasons.to_vec(),
                fit,
                theta: false,
            }));
        }
    }
    out
}

/// Mean square of the lag-`lag` differences (0 when there are none).
fn mean_square_diff(y: &[f64], lag: usize) -> f64 {
    if y.len() <= lag {
        return 0.0;
    }
    let n = y.len() - lag;
    y.windows(lag + 1)
        .map(|w| (w[lag] - w[0]).powi(2))
        .sum::<f64>()
        / n as f64
}

/// A period for a model name: whole numbers without decimals.
fn trim(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seasonal_naive_repeats_the_last_season() {
        let y: Vec<f64> = (0..50).map(|i| (i % 10) as f64).collect();
        let p = SeasonalNaive(Season::new(10.0).unwrap()).forecast(&y, 25);
        let expected: Vec<f64> = (50..75).map(|i| (i % 10) as f64).collect();
        assert_eq!(p.point, expected);
        assert_eq!(p.var[0], 0.0);
    }

    #[test]
    fn naive_holds_the_last_value_with_growing_variance() {
        let p = Naive.forecast(&[1.0, 2.0, 1.0, 2.0], 3);
        assert_eq!(p.point, vec![2.0; 3]);
        assert_eq!(p.var, vec![1.0, 2.0, 3.0]);
    }
}
