//! A bounded picture of each analyzed series, kept in the report so that the HTML report
//! can draw it: the window's samples, averaged down to at most [`MAX_RECENT_POINTS`].

use crate::analysis::grid::buckets;

/// The most points kept per series (about 8 KiB each): enough for a plot a few hundred
/// pixels wide, small enough for a fleet's worth of series in memory.
pub const MAX_RECENT_POINTS: usize = 500;

/// `points` (ascending time) as at most `max` points: unchanged when short enough,
/// otherwise the mean time and mean value of `max` consecutive, nearly equal buckets.
pub fn downsample(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points.to_vec();
    }
    buckets(points.len(), max)
        .map(|range| {
            let bucket = &points[range];
            let k = bucket.len() as f64;
            let (t, v) = bucket
                .iter()
                .fold((0.0, 0.0), |(t, v), p| (t + p.0, v + p.1));
            (t / k, v / k)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_kept_as_they_are() {
        let p = vec![(0.0, 1.0), (15.0, 2.0)];
        assert_eq!(downsample(&p, 500), p);
    }

    #[test]
    fn long_series_are_averaged_into_at_most_max_points_spanning_the_window() {
        let p: Vec<(f64, f64)> = (0..1001)
            .map(|i| (f64::from(i), f64::from(i % 2)))
            .collect();
        let d = downsample(&p, 500);
        assert_eq!(d.len(), 500);
        assert!(
            d.windows(2).all(|w| w[0].0 < w[1].0),
            "time stays ascending"
        );
        assert!(d[0].0 < 2.0 && d[499].0 > 998.0, "{:?} {:?}", d[0], d[499]);
        // alternating 0/1 averages to about one half
        assert!(d.iter().all(|(_, v)| (0.3..=0.7).contains(v)), "{d:?}");
    }
}
