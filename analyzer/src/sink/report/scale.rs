//! Linear maps from data to pixels, shared by the SVG plots.

/// Maps `[d0, d1]` onto `[r0, r1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    /// A map of the domain onto the range; a domain of zero width is widened so that
    /// its one value lands mid-range instead of dividing by zero.
    pub fn new((d0, d1): (f64, f64), (r0, r1): (f64, f64)) -> Scale {
        let (d0, d1) = if d1 > d0 {
            (d0, d1)
        } else {
            let pad = if d0 == 0.0 { 1.0 } else { d0.abs() * 0.1 };
            (d0 - pad, d0 + pad)
        };
        Scale { d0, d1, r0, r1 }
    }

    /// The pixel of `v`.
    pub fn at(&self, v: f64) -> f64 {
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }

    /// The domain, after widening.
    pub fn domain(&self) -> (f64, f64) {
        (self.d0, self.d1)
    }
}

/// The smallest and largest finite values, when there is one.
pub fn extent(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_ends_to_ends_and_flips_for_the_y_axis() {
        let s = Scale::new((0.0, 10.0), (100.0, 0.0));
        assert_eq!(s.at(0.0), 100.0);
        assert_eq!(s.at(10.0), 0.0);
        assert_eq!(s.at(5.0), 50.0);
    }

    #[test]
    fn a_flat_domain_is_widened_around_its_value() {
        let s = Scale::new((3.0, 3.0), (0.0, 100.0));
        assert!((s.at(3.0) - 50.0).abs() < 1e-9);
        assert!(Scale::new((0.0, 0.0), (0.0, 10.0)).at(0.0).is_finite());
    }

    #[test]
    fn extent_skips_non_finite_values() {
        assert_eq!(
            extent([f64::NAN, 2.0, -1.0, f64::INFINITY]),
            Some((-1.0, 2.0))
        );
        assert_eq!(extent(Vec::<f64>::new()), None);
    }
}
