//! A time series as the analyses see it: identity labels and timestamped samples.

use std::collections::BTreeMap;

/// One series from a source: Prometheus, VictoriaMetrics or a file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Identity labels (`workload` or `uuid`, and `signal` once the source knows it).
    pub labels: BTreeMap<String, String>,
    /// Samples in ascending time order: (unix seconds, value). Finite values only;
    /// sources drop NaN and Inf and count them.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series with no labels, from (timestamp, value) pairs.
    pub fn from_points(points: Vec<(f64, f64)>) -> Self {
        Self {
            labels: BTreeMap::new(),
            points,
        }
    }

    /// A series with no labels from values spaced `step` seconds apart, starting at 0.
    pub fn from_values(values: &[f64], step: f64) -> Self {
        Self::from_points(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64 * step, *v))
                .collect(),
        )
    }

    /// The sample values, in time order.
    pub fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.points.iter().map(|(_, v)| *v)
    }
}
