//! Sawtooth series: memory that grows and is freed, a counter that wraps. A trend
//! fitted to the current ramp, extrapolated, runs past the level where the series has
//! always been reset; nothing in the history supports a value above its highest peak.

/// A one-step fall of more than this share of the window's range is a reset.
pub const RESET_SHARE: f64 = 0.5;

/// Fewest resets that make a sawtooth.
pub const MIN_RESETS: usize = 2;

/// Whether `y` falls by more than [`RESET_SHARE`] of its range in one step at least
/// [`MIN_RESETS`] times while it never rises that much in one step: it climbs
/// gradually and drops at once (a series that jumps both ways switches levels instead).
pub fn is_sawtooth(y: &[f64]) -> bool {
    let max = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = y.iter().copied().fold(f64::INFINITY, f64::min);
    let big = RESET_SHARE * (max - min);
    if big.is_nan() || big <= 0.0 {
        return false;
    }
    let mut resets = 0;
    for w in y.windows(2) {
        let d = w[1] - w[0];
        if d > big {
            return false;
        }
        resets += usize::from(-d > big);
    }
    resets >= MIN_RESETS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_that_reset_are_a_sawtooth_and_level_switches_are_not() {
        let saw: Vec<f64> = (0..300).map(|i| (i % 70) as f64).collect();
        assert!(is_sawtooth(&saw));
        let once: Vec<f64> = (0..100).map(|i| (i % 70) as f64).collect();
        assert!(!is_sawtooth(&once), "one reset is not a pattern");
        let switches: Vec<f64> = (0..300)
            .map(|i| if (i / 50) % 2 == 0 { 100.0 } else { 0.0 })
            .collect();
        assert!(!is_sawtooth(&switches));
        assert!(!is_sawtooth(&[1.0; 50]));
    }
}
