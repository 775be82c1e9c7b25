//! A least-squares line: the fallback model, and `predict_linear` with intervals.

/// A line fitted to evenly spaced values.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearFit {
    intercept: f64,
    slope: f64,
    n: usize,
    t_mean: f64,
    sxx: f64,
    /// Residual variance (SSE / (n - 2)).
    pub sigma2: f64,
    /// Sum of squared residuals.
    pub sse: f64,
}

/// Intercept and slope of the least-squares line through `y` at t = 0, 1, 2, …
/// (slope 0 for fewer than two values).
pub fn least_squares_line(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let t_mean = (n - 1.0) / 2.0;
    let y_mean = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in y.iter().enumerate() {
        let dt = i as f64 - t_mean;
        sxy += dt * (v - y_mean);
        sxx += dt * dt;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (y_mean - slope * t_mean, slope)
}

/// The share of `y`'s variance that its least-squares line explains (R²; 0 where `y`
/// does not vary).
pub fn explained_share(y: &[f64]) -> f64 {
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let total: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    if total > 0.0 {
        1.0 - LinearFit::fit(y).sse / total
    } else {
        0.0
    }
}

impl LinearFit {
    /// Fits y = a + b·t with t = 0, 1, 2, … (needs at least 3 values).
    pub fn fit(y: &[f64]) -> LinearFit {
        let n = y.len();
        let nf = n as f64;
        let (intercept, slope) = least_squares_line(y);
        // For t = 0, 1, …, n-1 both depend on n alone.
        let t_mean = (nf - 1.0) / 2.0;
        let sxx = nf * (nf * nf - 1.0) / 12.0;
        let sse: f64 = y
            .iter()
            .enumerate()
            .map(|(i, v)| (v - intercept - slope * i as f64).powi(2))
            .sum();
        LinearFit {
            intercept,
            slope,
            n,
            t_mean,
            sxx,
            sigma2: sse / (nf - 2.0).max(1.0),
            sse,
        }
    }

    /// Point forecasts and their prediction variances for steps 1..=h after the data.
    pub fn forecast(&self, h: usize) -> (Vec<f64>, Vec<f64>) {
        let nf = self.n as f64;
        (1..=h)
            .map(|j| {
                let t = self.n as f64 - 1.0 + j as f64;
                let lever = if self.sxx > 0.0 {
                    (t - self.t_mean).powi(2) / self.sxx
                } else {
                    0.0
                };
                (
                    self.intercept + self.slope * t,
                    self.sigma2 * (1.0 + 1.0 / nf + lever),
                )
            })
            .unzip()
    }

    /// AICc of the fit (3 parameters: intercept, slope, variance).
    pub fn aicc(&self) -> f64 {
        super::ets::aicc(self.sse, self.n, 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extends_a_line_with_widening_variance() {
        let y: Vec<f64> = (0..50)
            .map(|i| 2.0 + 0.5 * i as f64 + if i % 2 == 0 { 0.1 } else { -0.1 })
            .collect();
        let fit = LinearFit::fit(&y);
        let (p, v) = fit.forecast(10);
        assert!((p[0] - (2.0 + 0.5 * 50.0)).abs() < 0.05);
        assert!(v[9] > v[0] && v[0] > 0.0);
    }
}
