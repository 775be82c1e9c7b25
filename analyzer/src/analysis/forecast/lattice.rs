//! Series that take only values on a lattice: integer percent of a GPU's utilization,
//! a process's SM share in whole percent, counts of jobs. Their median at a future step
//! is a lattice value, and a forecast between two of them misses every step: an idle
//! process forecast at 0.003% instead of 0 scores 200% sMAPE wherever it stays idle.
//! The point forecast is rounded to the lattice, and each band widened to the lattice
//! values around it ([`Lattice`]).

/// Values within this share of a lattice step of a lattice value lie on it.
pub const ON_LATTICE: f64 = 1e-3;

/// Most lattice steps across a series' range: a finer lattice (power in milliwatts,
/// memory in bytes) is a continuous reading for any forecast.
pub const MAX_LEVELS: f64 = 1000.0;

/// Magnitude up to which every whole number is an f64 (2^53).
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// The values a series takes: `origin` plus whole multiples of `step`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lattice {
    /// One value on the lattice (the series' lowest).
    pub origin: f64,
    /// The distance between neighbouring values.
    pub step: f64,
}

impl Lattice {
    /// The lattice `y` lies on: the greatest common divisor of its changes is the step,
    /// if its range spans at most [`MAX_LEVELS`] such steps and every value lies on
    /// it. `None` for a constant series or one off any coarse lattice.
    pub fn of(y: &[f64]) -> Option<Lattice> {
        let (lo, hi) = crate::analysis::extent::extent(y);
        let range = hi - lo;
        if !(range > 0.0 && range.is_finite()) {
            return None;
        }
        let finest = range / MAX_LEVELS;
        let tolerance = finest * ON_LATTICE;
        let mut step = 0.0;
        for w in y.windows(2) {
            let d = (w[1] - w[0]).abs();
            if d > tolerance {
                step = if step == 0.0 {
                    d
                } else {
                    divisor(step, d, tolerance)
                };
                if step < finest {
                    return None;
                }
            }
        }
        let lattice = Lattice { origin: lo, step };
        y.iter().all(|v| lattice.is_on(*v)).then_some(lattice)
    }

    /// Steps from the origin to `v`, fractional off the lattice.
    fn steps(&self, v: f64) -> f64 {
        (v - self.origin) / self.step
    }

    fn at(&self, k: f64) -> f64 {
        self.origin + k * self.step
    }

    fn is_on(&self, v: f64) -> bool {
        let k = self.steps(v);
        (k - k.round()).abs() <= ON_LATTICE
    }

    /// The lattice value nearest `v`.
    pub fn nearest(&self, v: f64) -> f64 {
        self.at(self.steps(v).round())
    }

    /// The highest lattice value at or below `v`, less a rounding error: the value as
    /// the data spells it (0.03, not 3 × 0.01) lies inside a band that ends there.
    pub fn below(&self, v: f64) -> f64 {
        let k = self.steps(v);
        let at = self.at(if self.is_on(v) { k.round() } else { k.floor() });
        at - self.slack(at)
    }

    /// The lowest lattice value at or above `v`, plus a rounding error (see
    /// [`Lattice::below`]).
    pub fn above(&self, v: f64) -> f64 {
        let k = self.steps(v);
        let at = self.at(if self.is_on(v) { k.round() } else { k.ceil() });
        at + self.slack(at)
    }

    /// Far more than the rounding error of a value near `v`, far less than a step; none
    /// on a lattice of whole numbers, whose values are exact (a count's band ends at 0,
    /// not at -1e-9).
    fn slack(&self, v: f64) -> f64 {
        let whole = self.origin.fract() == 0.0 && self.step.fract() == 0.0;
        if whole && v.abs() <= EXACT_INTEGERS {
            return 0.0;
        }
        (self.step * 1e-9).max(v.abs() * 1e-12)
    }
}

/// The greatest common divisor of two positive reals, to within `tolerance`.
fn divisor(mut a: f64, mut b: f64, tolerance: f64) -> f64 {
    if a < b {
        std::mem::swap(&mut a, &mut b);
    }
    while b > tolerance {
        let r = a % b;
        (a, b) = (b, if b - r <= tolerance { 0.0 } else { r });
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_percent_is_a_lattice_and_noise_or_milliwatts_are_not() {
        // whole percent changing by 37 or 64 at a time: the step is still 1%
        let percent: Vec<f64> = (0..100).map(|t| ((t * 37) % 101) as f64 * 0.01).collect();
        let lattice = Lattice::of(&percent).expect("whole percent");
        assert!((lattice.step - 0.01).abs() < 1e-12 && lattice.origin == 0.0);
        let noisy: Vec<f64> = (0..100).map(|t| (t as f64 * 0.7).sin()).collect();
        assert_eq!(Lattice::of(&noisy), None);
        assert_eq!(Lattice::of(&[3.0; 20]), None, "a constant series");
        let milliwatts: Vec<f64> = (0..100)
            .map(|t| 70.0 + ((t * 7919) % 400_001) as f64 * 1e-3)
            .collect();
        assert_eq!(Lattice::of(&milliwatts), None, "400,000 levels");
    }

    #[test]
    fn points_round_to_the_nearest_value_and_bands_widen_to_the_values_around_them() {
        // a process idle at 0 with blips of 1 and 2 percent
        let y: Vec<f64> = (0..60)
            .map(|t| [0.0, 0.0, 0.01, 0.0, 0.02][t % 5])
            .collect();
        let lattice = Lattice::of(&y).expect("whole percent");
        let near: Vec<f64> = [0.003, 0.006, 0.0149, 0.019]
            .map(|v| lattice.nearest(v))
            .into();
        assert_eq!(near, vec![0.0, 0.01, 0.01, 0.02]);
        let (lo, hi) = (lattice.below(0.0149), lattice.above(0.0149));
        assert!(
            (lo - 0.01).abs() < 1e-9 && (hi - 0.02).abs() < 1e-9,
            "{lo} {hi}"
        );
        // 0.03 as read lies inside a band that ends on it, though 3 × 0.01 is not 0.03
        let (lo, hi) = (lattice.below(0.03), lattice.above(0.03));
        assert!(lo <= 0.03 && 0.03 <= hi && hi - lo < 1e-9, "{lo} {hi}");
    }

    #[test]
    fn bands_of_counts_end_on_whole_numbers() {
        // jobs started per interval: 0 to 7
        let y: Vec<f64> = (0..60).map(|t| ((t * 5) % 8) as f64).collect();
        let lattice = Lattice::of(&y).expect("counts");
        assert_eq!(lattice.below(0.4), 0.0, "not -1e-9");
        assert_eq!(lattice.below(-2.0), -2.0);
        assert_eq!(lattice.above(14.2), 15.0, "not 15.000000001");
        assert_eq!(lattice.above(3.0), 3.0);
        // beyond 2^53 whole numbers are no longer every f64: the slack comes back
        let far = 2.0 * EXACT_INTEGERS;
        assert!(lattice.above(far) > far);
    }
}
