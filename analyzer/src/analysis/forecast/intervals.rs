//! Prediction intervals from a point forecast and its per-step variance.

use statrs::distribution::{ContinuousCDF, Normal};

/// Lower and upper bounds at one coverage level.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Band {
    /// Lower bounds, one per step.
    pub lower: Vec<f64>,
    /// Upper bounds, one per step.
    pub upper: Vec<f64>,
}

/// The standard normal quantile that leaves `coverage` (e.g. 0.95) in the middle.
pub fn z(coverage: f64) -> f64 {
    Normal::new(0.0, 1.0)
        .expect("standard normal")
        .inverse_cdf(0.5 + coverage / 2.0)
}

/// The central `coverage` band (e.g. 0.95) of normal errors with the given variances.
pub fn band(point: &[f64], variance: &[f64], coverage: f64) -> Band {
    let z = z(coverage);
    let (lower, upper) = point
        .iter()
        .zip(variance)
        .map(|(p, v)| {
            let w = z * v.max(0.0).sqrt();
            (p - w, p + w)
        })
        .unzip();
    Band { lower, upper }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ninety_five_percent_is_1_96_sigma() {
        let b = band(&[10.0], &[4.0], 0.95);
        assert!((b.upper[0] - (10.0 + 1.959964 * 2.0)).abs() < 1e-5);
        assert!((b.lower[0] - (10.0 - 1.959964 * 2.0)).abs() < 1e-5);
    }
}
