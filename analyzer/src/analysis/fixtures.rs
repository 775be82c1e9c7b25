//! Test inputs shared by the analyses' unit tests: a seeded noise stream and a forecast
//! with the default settings.

use crate::analysis::forecast::{forecast, Forecast, ForecastConfig};
use crate::series::Series;

/// Draws from a fixed xorshift stream: the same seed, the same series on every machine.
pub struct Noise(pub u64);

impl Noise {
    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// The default forecast of `h` steps after `y`, `step` seconds apart.
pub fn forecast_steps(y: &[f64], step: f64, h: usize) -> Forecast {
    let config = ForecastConfig {
        horizon_steps: h,
        ..ForecastConfig::default()
    };
    forecast(&Series::from_values(y, step), &config).expect("forecast")
}
