//! Resampling onto a uniform time grid, with short gaps filled and long ones split.
//!
//! Both analyses need evenly spaced values. Samples that fall into the same grid cell
//! are averaged; runs of up to `max_fill_steps` missing cells are filled by linear
//! interpolation; a longer gap ends one segment and starts the next.

/// The most grid cells one series may span; a finer step is refused as a likely mistake.
pub const MAX_GRID_CELLS: usize = 5_000_000;

/// A run of evenly spaced values without long gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Unix seconds of the first value.
    pub start: f64,
    /// Seconds between values.
    pub step: f64,
    /// The values, one per step.
    pub values: Vec<f64>,
}

impl Segment {
    /// Unix seconds of the last value.
    pub fn end(&self) -> f64 {
        self.start + self.step * (self.values.len().saturating_sub(1)) as f64
    }
}

/// Why a series could not be put on a grid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GridError {
    /// Fewer than two samples: no step can be inferred and nothing can be analysed.
    #[error("only {0} sample(s); need at least 2")]
    TooFewSamples(usize),
    /// The step is not a positive finite number.
    #[error("step {0} s is not a positive number of seconds")]
    BadStep(f64),
    /// The step is so small against the time span that the grid would be huge.
    #[error("{cells} grid cells at a step of {step} s exceeds the limit of {MAX_GRID_CELLS}; pass a larger --step")]
    TooManyCells {
        /// Cells the grid would need.
        cells: f64,
        /// The step in seconds.
        step: f64,
    },
}

/// The median spacing of the timestamps, ignoring repeated timestamps.
pub fn median_step(points: &[(f64, f64)]) -> Option<f64> {
    if let [a, b, ..] = points {
        let d = b.0 - a.0;
        if d > 0.0 && points.windows(2).all(|w| w[1].0 - w[0].0 == d) {
            return Some(d);
        }
    }
    let mut diffs: Vec<f64> = points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| *d > 0.0 && d.is_finite())
        .collect();
    if diffs.is_empty() {
        return None;
    }
    let mid = diffs.len() / 2;
    let (_, m, _) = diffs.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

/// Puts the points on a grid of `step` seconds (the median spacing when `None`) and
/// returns the segments between long gaps, in time order.
pub fn segments(
    points: &[(f64, f64)],
    step: Option<f64>,
    max_fill_steps: usize,
) -> Result<Vec<Segment>, GridError> {
    if points.len() < 2 {
        return Err(GridError::TooFewSamples(points.len()));
    }
    let sorted = sorted_points(points);
    let step = match step {
        Some(s) => s,
        None => median_step(&sorted).ok_or(GridError::TooFewSamples(1))?,
    };
    if !(step.is_finite() && step > 0.0) {
        return Err(GridError::BadStep(step));
    }
    let t0 = sorted[0].0;
    let cells = (sorted[sorted.len() - 1].0 - t0) / step;
    if cells.is_nan() || cells >= MAX_GRID_CELLS as f64 {
        return Err(GridError::TooManyCells { cells, step });
    }
    if let Some(segment) = regular(&sorted, step) {
        return Ok(vec![segment]);
    }
    Ok(bin_and_split(&sorted, t0, step, max_fill_steps))
}

/// The points as one segment where each is exactly `step` after the one before, as a
/// range query returns them: each then has a cell of its own and no gap is filled, so
/// [`bin_and_split`] would give these values, at several times the cost. Each time is
/// then a whole number of steps from the first, and its cell is that number: for
/// positive times within a factor of two of each other every difference is exact
/// (Sterbenz); from 0, each time is at least a step, so it and the next one are.
fn regular(sorted: &[(f64, f64)], step: f64) -> Option<Segment> {
    let (t0, last) = (sorted.first()?.0, sorted.last()?.0);
    let exact = t0 == 0.0 || (t0 > 0.0 && last <= 2.0 * t0);
    (exact && sorted.windows(2).all(|w| w[1].0 - w[0].0 == step)).then(|| Segment {
        // as binning writes it: -0 becomes 0
        start: t0 + 0.0,
        step,
        values: sorted.iter().map(|p| p.1).collect(),
    })
}

fn sorted_points(points: &[(f64, f64)]) -> std::borrow::Cow<'_, [(f64, f64)]> {
    if points.windows(2).all(|w| w[0].0 <= w[1].0) {
        std::borrow::Cow::Borrowed(points)
    } else {
        let mut v = points.to_vec();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        std::borrow::Cow::Owned(v)
    }
}

/// Accumulates cells in one pass: averages samples sharing a cell, fills or splits gaps.
fn bin_and_split(sorted: &[(f64, f64)], t0: f64, step: f64, max_fill: usize) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut seg_start_cell = 0i64;
    let mut values: Vec<f64> = Vec::with_capacity(sorted.len());
    let mut cell = i64::MIN;
    let (mut mean, mut count) = (0.0, 0u32);
    for &(t, v) in sorted {
        let c = round_to_cell((t - t0) / step);
        if c == cell {
            count += 1;
            // A running mean, each term divided before the subtraction: a sum (or
            // `v - mean`) of two values near f64::MAX would overflow to infinity.
            let k = f64::from(count);
            mean += v / k - mean / k;
            continue;
        }
        if count > 0 {
            values.push(mean);
            let missing = (c - cell - 1) as usize;
            if missing > max_fill {
                out.push(Segment {
                    start: t0 + seg_start_cell as f64 * step,
                    step,
                    values: std::mem::take(&mut values),
                });
                seg_start_cell = c;
            } else if missing > 0 {
                fill_linear(&mut values, v, missing);
            }
        } else {
            seg_start_cell = c;
        }
        cell = c;
        mean = v;
        count = 1;
    }
    values.push(mean);
    out.push(Segment {
        start: t0 + seg_start_cell as f64 * step,
        step,
        values,
    });
    out
}

/// `x.round() as i64` for the cell offsets [`segments`] allows (below
/// [`MAX_GRID_CELLS`]), without the call to `round` that a CPU without SSE4.1 makes for
/// every sample: the fraction `x - trunc(x)` is exact below 2^53.
fn round_to_cell(x: f64) -> i64 {
    let whole = x as i64;
    let fraction = x - whole as f64;
    if fraction >= 0.5 {
        whole + 1
    } else if fraction <= -0.5 {
        whole - 1
    } else {
        whole
    }
}

/// Appends `missing` values on the line from the last value towards `next`.
fn fill_linear(values: &mut Vec<f64>, next: f64, missing: usize) {
    let last = *values.last().expect("fill follows a value");
    let span = (missing + 1) as f64;
    // Weighted as (1 - f)·last + f·next: never beyond the larger of the two, where
    // `last + (next - last)·f` overflows when they are near ±f64::MAX.
    values.extend((1..=missing).map(|i| {
        let f = i as f64 / span;
        last * (1.0 - f) + next * f
    }));
}

/// The longest segment (the earliest among equals).
pub fn longest(segments: Vec<Segment>) -> Segment {
    segments
        .into_iter()
        .reduce(|best, s| {
            if s.values.len() > best.values.len() {
                s
            } else {
                best
            }
        })
        .expect("segments() returns at least one segment")
}

/// `n` steps cut into `max` consecutive buckets of nearly equal length (all of them,
/// one step each, when `n <= max`; none when `max` is 0): what a series is averaged
/// down over, for a plot or a comparison at fewer points.
pub fn buckets(n: usize, max: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let count = n.min(max);
    (0..count).map(move |b| b * n / count..(b + 1) * n / count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_step_once_in_nearly_equal_runs() {
        let b: Vec<_> = buckets(10, 4).collect();
        assert_eq!(b, vec![0..2, 2..5, 5..7, 7..10]);
        assert_eq!(buckets(3, 5).collect::<Vec<_>>(), vec![0..1, 1..2, 2..3]);
        assert_eq!(buckets(7, 0).count(), 0);
    }

    #[test]
    fn cells_round_half_away_from_zero_as_round_does() {
        let offsets = [
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            2.4999,
            7.000001,
            1e9 + 0.5,
        ];
        for x in offsets.into_iter().flat_map(|x| [x, -x]) {
            assert_eq!(round_to_cell(x), x.round() as i64, "{x}");
        }
    }

    #[test]
    fn evenly_spaced_points_give_what_binning_gives() {
        // (first time, step, whether every difference is exactly the step and the
        // shortcut applies): steps that are binary fractions and ones that are not,
        // times near now, from 0 and -0, and near zero (where binning must decide)
        for (t0, step, shortcut) in [
            (1.7e9, 15.0, true),
            (1.7e9 + 0.5, 0.25, true),
            (1024.0, 0.125, true),
            (1.7e9 + 0.1, 0.1, false),
            (1_764_000_000.123, 1.0 / 3.0, false),
            (3.0, 0.7, false),
            (0.0, 0.7, false),
            (0.0, 15.0, true),
            (-0.0, 0.25, true),
            (1.0, 1.0, false),
            (1e-300, 1e-301, false),
        ] {
            let mut pts = vec![(t0, 1.0)];
            for i in 1..5_000 {
                let t = pts[i - 1].0 + step;
                pts.push((t, (i as f64 * 0.37).sin()));
            }
            let binned = bin_and_split(&pts, t0, step, 10);
            assert_eq!(
                segments(&pts, Some(step), 10).unwrap(),
                binned,
                "{t0} {step}"
            );
            assert_eq!(regular(&pts, step).is_some(), shortcut, "{t0} {step}");
        }
    }

    #[test]
    fn median_step_ignores_duplicates() {
        let pts = [
            (0.0, 1.0),
            (0.0, 2.0),
            (15.0, 1.0),
            (30.0, 1.0),
            (60.0, 1.0),
        ];
        assert_eq!(median_step(&pts), Some(15.0));
    }

    #[test]
    fn short_gap_is_filled_linearly_and_long_gap_splits() {
        let mut pts: Vec<(f64, f64)> = vec![(0.0, 0.0), (10.0, 1.0), (40.0, 4.0)];
        pts.extend((0..6).map(|i| (1000.0 + 10.0 * i as f64, 7.0)));
        let segs = segments(&pts, Some(10.0), 3).unwrap();
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].values, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(segs[1].start, 1000.0);
        assert_eq!(segs[1].values.len(), 6);
        assert_eq!(longest(segs).start, 1000.0);
    }

    #[test]
    fn samples_in_one_cell_are_averaged_and_unsorted_input_is_sorted() {
        let pts = [(20.0, 5.0), (0.0, 1.0), (1.0, 3.0), (10.0, 4.0)];
        let segs = segments(&pts, Some(10.0), 0).unwrap();
        assert_eq!(segs[0].values, vec![2.0, 4.0, 5.0]);
    }

    #[test]
    fn extreme_values_average_and_fill_without_overflow() {
        let big = f64::MAX;
        let pts = [(0.0, big), (0.4, big), (10.0, -big), (40.0, big)];
        let segs = segments(&pts, Some(10.0), 3).unwrap();
        let v = &segs[0].values;
        assert_eq!(v.len(), 5);
        assert!(v.iter().all(|x| x.is_finite()), "{v:?}");
        assert_eq!(v[0], big);
        assert_eq!(v[4], big);
    }

    #[test]
    fn bad_steps_are_refused() {
        let pts = [(0.0, 1.0), (1e9, 1.0)];
        assert!(matches!(
            segments(&pts, Some(0.0), 0),
            Err(GridError::BadStep(_))
        ));
        assert!(matches!(
            segments(&pts, Some(1.0), 0),
            Err(GridError::TooManyCells { .. })
        ));
        assert_eq!(
            segments(&pts[..1], None, 0),
            Err(GridError::TooFewSamples(1))
        );
    }
}
