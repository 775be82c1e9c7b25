//! Runs: the maximal stretches of a series that span no more than a band (one value,
//! with a band of 0). A job stopped, a GPU pinned, a process idle and a stretch of
//! idle power settling are all runs; the rules that hold, cut or snap to them
//! ([`super::pinned`], [`super::held`], [`super::floor`], [`super::breaks`]) read them
//! from one place.

use std::ops::Range;

/// The runs of `y`, in order, that span no more than `band`; they cover all of `y`.
pub fn runs(y: &[f64], band: f64) -> Runs<'_> {
    Runs { y, band, at: 0 }
}

/// Iterator over the runs of a series (see [`runs`]).
pub struct Runs<'a> {
    y: &'a [f64],
    band: f64,
    at: usize,
}

impl Iterator for Runs<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let start = self.at;
        let first = *self.y.get(start)?;
        let (mut lo, mut hi) = (first, first);
        let mut end = start + 1;
        while let Some(&v) = self.y.get(end) {
            let (l, h) = (lo.min(v), hi.max(v));
            if h - l > self.band {
                break;
            }
            (lo, hi) = (l, h);
            end += 1;
        }
        self.at = end;
        Some(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_series_and_split_where_the_band_is_exceeded() {
        let y = [1.0, 1.0, 2.0, 2.05, 1.98, 5.0];
        let exact: Vec<_> = runs(&y, 0.0).collect();
        assert_eq!(exact, vec![0..2, 2..3, 3..4, 4..5, 5..6]);
        let near: Vec<_> = runs(&y, 0.1).collect();
        assert_eq!(near, vec![0..2, 2..5, 5..6]);
        assert_eq!(runs(&[], 0.0).count(), 0);
    }
}
