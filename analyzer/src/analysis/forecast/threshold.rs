//! When a forecast reaches a threshold (memory reaching the GPU's total, say).

use super::Forecast;

/// When an upward crossing of a threshold is forecast, in seconds after the last sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdCrossing {
    /// When the point forecast first reaches the threshold; `None` beyond the horizon.
    pub seconds_point: Option<f64>,
    /// When the upper 95% bound first reaches it: the earliest plausible time.
    pub seconds_earliest: f64,
    /// When the lower 95% bound first reaches it: the latest plausible time; `None`
    /// when it may not happen within the horizon at all.
    pub seconds_latest: Option<f64>,
}

/// The first steps at which the forecast and its 95% band reach `threshold` from below,
/// or `None` when not even the upper bound gets there within the horizon.
pub fn time_to_threshold(forecast: &Forecast, threshold: f64) -> Option<ThresholdCrossing> {
    let at = |values: &[f64]| -> Option<f64> {
        values
            .iter()
            .position(|v| *v >= threshold)
            .map(|i| (i + 1) as f64 * forecast.step_seconds)
    };
    Some(ThresholdCrossing {
        seconds_earliest: at(&forecast.upper_95)?,
        seconds_point: at(&forecast.point),
        seconds_latest: at(&forecast.lower_95),
    })
}
