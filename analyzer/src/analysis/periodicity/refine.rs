//! Sub-bin frequency refinement: the maximiser of the untapered periodogram near a peak.
//!
//! The periodogram maximiser is the least-squares (maximum-likelihood, for white noise)
//! frequency of a sinusoid and is far more precise than any grid: with many cycles it
//! pins the period to a small fraction of a percent. It is found by golden-section
//! search, evaluating the spectrum at one frequency with Goertzel's recurrence (O(n)).

/// Golden-section iterations; each shrinks the bracket to 0.618 of its width.
const ITERATIONS: usize = 12;

/// Periodogram of `x` at `f` cycles per step.
pub fn power_at(x: &[f64], f: f64) -> f64 {
    let w = 2.0 * std::f64::consts::PI * f;
    let coeff = 2.0 * w.cos();
    let (mut s1, mut s2) = (0.0, 0.0);
    for v in x {
        let s = v + coeff * s1 - s2;
        s2 = s1;
        s1 = s;
    }
    s1 * s1 + s2 * s2 - coeff * s1 * s2
}

/// The frequency in [f - half, f + half] with the highest periodogram of `x`.
pub fn peak_frequency(x: &[f64], f: f64, half: f64) -> f64 {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = ((f - half).max(1e-9), f + half);
    let mut c = b - ratio * (b - a);
    let mut d = a + ratio * (b - a);
    let (mut pc, mut pd) = (power_at(x, c), power_at(x, d));
    for _ in 0..ITERATIONS {
        if pc > pd {
            b = d;
            d = c;
            pd = pc;
            c = b - ratio * (b - a);
            pc = power_at(x, c);
        } else {
            a = c;
            c = d;
            pc = pd;
            d = a + ratio * (b - a);
            pd = power_at(x, d);
        }
    }
    (a + b) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_a_frequency_between_bins() {
        let f = 1.0 / 37.3;
        let x: Vec<f64> = (0..400)
            .map(|i| (2.0 * std::f64::consts::PI * f * i as f64 + 0.4).sin())
            .collect();
        let got = peak_frequency(&x, 1.0 / 36.0, 1.0 / 400.0);
        assert!((1.0 / got - 37.3).abs() < 0.01, "{}", 1.0 / got);
    }
}
