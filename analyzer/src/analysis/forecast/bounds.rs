//! Limits a series shows it has: a forecast of GPU utilisation past 100%, or of a
//! non-negative quantity below zero, is wrong before it is scored.

use super::resets::is_sawtooth;

/// A side is a limit when at least this share of the window sits on it (a GPU pinned
/// at 100% or idle at 0 for hours).
pub const SATURATED_SHARE: f64 = 0.05;

/// Values within this of the extreme count as on it (the series is scaled to ±1).
const ON_LIMIT: f64 = 1e-9;

/// The limits found in a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Nothing below this.
    pub lower: f64,
    /// Nothing above this.
    pub upper: f64,
}

impl Bounds {
    /// Limits of `y`: its maximum (minimum) when saturated there, its maximum too when
    /// it is a sawtooth (a ramp is not extrapolated past the peaks it was reset at);
    /// zero below when it never goes negative; otherwise none.
    pub fn of(y: &[f64]) -> Bounds {
        let n = y.len().max(1) as f64;
        let (min, max) = crate::analysis::extent::extent(y);
        let share = |at: f64| y.iter().filter(|v| (*v - at).abs() <= ON_LIMIT).count() as f64 / n;
        let upper = if share(max) >= SATURATED_SHARE || is_sawtooth(y) {
            max
        } else {
            f64::INFINITY
        };
        let lower = if share(min) >= SATURATED_SHARE {
            min
        } else if min >= 0.0 {
            0.0
        } else {
            f64::NEG_INFINITY
        };
        Bounds { lower, upper }
    }

    /// `v` within the limits.
    pub fn clamp(&self, v: f64) -> f64 {
        v.max(self.lower).min(self.upper)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_series_is_bounded_and_a_ramp_is_not() {
        let pinned: Vec<f64> = (0..100).map(|i| if i < 50 { 1.0 } else { 0.3 }).collect();
        let b = Bounds::of(&pinned);
        assert_eq!((b.lower, b.upper), (0.3, 1.0));
        assert_eq!(b.clamp(1.4), 1.0);
        let ramp: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
        let b = Bounds::of(&ramp);
        assert_eq!((b.lower, b.upper), (0.0, f64::INFINITY));
        let saw: Vec<f64> = (0..300).map(|i| (i % 70) as f64 / 100.0).collect();
        assert_eq!(Bounds::of(&saw).upper, 0.69, "a sawtooth stops at its peak");
        let signed: Vec<f64> = (0..100).map(|i| i as f64 / 100.0 - 0.5).collect();
        assert_eq!(Bounds::of(&signed).lower, f64::NEG_INFINITY);
    }
}
