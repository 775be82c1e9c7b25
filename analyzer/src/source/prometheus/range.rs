//! The time range of a `query_range` call: its step, and its split into chunks that
//! each stay under the source's per-series point limit.

use std::time::Duration;

/// Prometheus refuses a `query_range` whose resolution would exceed this many points
/// per series; VictoriaMetrics accepts more, so chunking for Prometheus suits both.
pub const PROMETHEUS_MAX_POINTS: u64 = 11_000;

/// Points per chunk, kept a margin below [`PROMETHEUS_MAX_POINTS`].
pub const POINTS_PER_CHUNK: u64 = 10_000;

/// When no step is given, the range is cut into about this many steps (a week at 1 min).
pub const TARGET_POINTS: u64 = 10_080;

/// The shortest step chosen automatically: a common scrape interval.
pub const MIN_STEP: Duration = Duration::from_secs(15);

/// Steps the automatic choice rounds up to, so results line up with dashboards.
const NICE_STEPS_S: [u64; 14] = [
    15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
];

/// A query window in unix seconds, `start <= end`, sampled every `step`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryRange {
    /// First evaluation time, unix seconds.
    pub start: f64,
    /// Last evaluation time (inclusive), unix seconds.
    pub end: f64,
    /// Seconds between evaluations (> 0).
    pub step: f64,
}

impl QueryRange {
    /// The range `[end - lookback, end]` at `step`, or at [`choose_step`]'s step when none.
    pub fn ending_at(end: f64, lookback: Duration, step: Option<Duration>) -> QueryRange {
        let step = step.unwrap_or_else(|| choose_step(lookback));
        QueryRange {
            start: end - lookback.as_secs_f64(),
            end,
            step: step.as_secs_f64(),
        }
    }

    /// Points per series the whole range yields.
    pub fn points(&self) -> u64 {
        points_between(self.start, self.end, self.step)
    }

    /// Consecutive sub-ranges on the same grid, each with at most `max_points` points,
    /// covering every evaluation time of `self` exactly once.
    pub fn chunks(&self, max_points: u64) -> Vec<QueryRange> {
        let max_points = max_points.max(1);
        let total = self.points();
        let mut chunks = Vec::with_capacity(total.div_ceil(max_points) as usize);
        let mut first = 0u64;
        while first < total {
            let last = (first + max_points).min(total) - 1;
            chunks.push(QueryRange {
                start: self.start + first as f64 * self.step,
                end: self.start + last as f64 * self.step,
                step: self.step,
            });
            first = last + 1;
        }
        chunks
    }
}

/// Evaluation times in `[start, end]` at `step`: Prometheus counts `floor((end-start)/step)+1`.
fn points_between(start: f64, end: f64, step: f64) -> u64 {
    if end < start || step <= 0.0 {
        return 0;
    }
    // A tiny epsilon keeps 3600/15 from landing on 239.99999.
    ((end - start) / step + 1e-9).floor() as u64 + 1
}

/// The step for a lookback when the user gives none: `lookback / TARGET_POINTS` rounded up
/// to the next nice step, never below [`MIN_STEP`]; beyond a day, whole days.
pub fn choose_step(lookback: Duration) -> Duration {
    let raw = lookback.as_secs().div_ceil(TARGET_POINTS);
    let step = NICE_STEPS_S
        .iter()
        .copied()
        .find(|s| *s >= raw)
        .unwrap_or_else(|| raw.div_ceil(86_400) * 86_400);
    Duration::from_secs(step).max(MIN_STEP)
}
