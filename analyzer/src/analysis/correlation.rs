//! Pearson's correlation, shared by the analyses that compare two series: the
//! co-location evaluation (ranks of pair scores) and the holiday search (a day's shape
//! against a weekday's).

/// Pearson's correlation of `x` and `y` (paired, the shorter's length); `None` where
/// either is constant or empty, which has no correlation.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    if n == 0 {
        return None;
    }
    let (x, y) = (&x[..n], &y[..n]);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / n as f64;
    let (mx, my) = (mean(x), mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_correlates_fully_and_a_constant_not_at_all() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!((pearson(&x, &[2.0, 4.0, 6.0, 8.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((pearson(&x, &[8.0, 6.0, 4.0, 2.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(pearson(&x, &[5.0; 4]), None);
        assert_eq!(pearson(&[], &[]), None);
    }
}
