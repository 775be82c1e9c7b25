//! The lag a series repeats at best near its detected period. The detector resolves a
//! period to about period / cycles, and refines it to a fraction of a step: 40.94
//! steps for a 40 s training cycle seen six times. Seasonal-naive and the seasonal
//! models copy each phase from one season back; off by most of a step, every edge of
//! a square cycle lands a step late. The series itself says which lag it repeats at:
//! the one whose seasonal differences are smallest.

/// Most recent points whose seasonal differences are compared.
pub const LAG_WINDOW: usize = 2048;

/// The lag near `period` (steps) at which `y` repeats itself best: `period` itself, or
/// the whole step below or above it where the mean absolute seasonal difference over
/// the last [`LAG_WINDOW`] points is smaller. A smooth cycle truly between whole steps
/// (37.3) repeats best at itself, interpolated. Only the two neighbours are tried: a
/// reading held for several steps repeats about as well at lags further off, by chance.
pub fn best_lag(y: &[f64], period: f64) -> f64 {
    if !period.is_finite() || period.fract() == 0.0 {
        return period;
    }
    let (below, above) = (period.floor().max(2.0), period.ceil());
    let n = y.len();
    let start = (above as usize + 1).max(n.saturating_sub(LAG_WINDOW));
    if start + 2 > n {
        return period;
    }
    [below, above]
        .into_iter()
        .map(|m| (m, seasonal_difference(y, start, m)))
        .fold(
            (period, seasonal_difference(y, start, period)),
            |best, (m, e)| if e < best.1 { (m, e) } else { best },
        )
        .0
}

/// Mean absolute difference between `y[t]` and `y` one lag `m` earlier (interpolated
/// between steps), for `t` from `start` to the end.
fn seasonal_difference(y: &[f64], start: usize, m: f64) -> f64 {
    let (whole, frac) = (m.floor() as usize, m.fract());
    let sum: f64 = (start..y.len())
        .map(|t| {
            let back = y[t - whole] * (1.0 - frac) + y[t - whole - usize::from(frac > 0.0)] * frac;
            (y[t] - back).abs()
        })
        .sum();
    sum / (y.len() - start) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(period: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| {
                if (i as f64 / period).fract() < 0.75 {
                    1.0
                } else {
                    0.2
                }
            })
            .collect()
    }

    #[test]
    fn a_period_refined_off_the_whole_step_is_locked_back_to_it() {
        // a 40-step cycle that the detector read as 40.94
        assert_eq!(best_lag(&square(40.0, 400), 40.94), 40.0);
        assert_eq!(best_lag(&square(40.0, 400), 39.2), 40.0);
        // only the neighbouring whole steps are tried
        assert_eq!(best_lag(&square(40.0, 400), 41.5), 41.0);
    }

    #[test]
    fn a_smooth_period_between_whole_steps_stays_where_it_is() {
        let y: Vec<f64> = (0..800)
            .map(|i| (std::f64::consts::TAU * i as f64 / 37.3).sin())
            .collect();
        assert_eq!(best_lag(&y, 37.3), 37.3);
    }

    #[test]
    fn too_short_a_series_keeps_the_period() {
        assert_eq!(best_lag(&square(40.0, 60), 40.94), 40.94);
        assert_eq!(best_lag(&[], 24.0), 24.0);
    }
}
