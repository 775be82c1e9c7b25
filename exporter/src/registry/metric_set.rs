//! An ordered set of metric families built during one collection.

use prometheus::proto::{Counter, Gauge, LabelPair, Metric, MetricFamily, MetricType};
use std::collections::BTreeMap;

/// How a family is typed in the exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A value that goes up and down.
    Gauge,
    /// A monotonically increasing count; the name ends in `_total`.
    Counter,
    /// Constant 1 with identity labels; the name ends in `_info`.
    Info,
}

/// Metric families keyed by name, so every family is written once, in name order.
#[derive(Debug, Default, Clone)]
pub struct MetricSet {
    families: BTreeMap<String, (MetricKind, MetricFamily)>,
}

impl MetricSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one gauge sample.
    pub fn gauge(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        self.push(name, help, MetricKind::Gauge, labels, value, None);
    }

    /// Adds one counter sample; `name` must end in `_total`.
    pub fn counter(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: f64) {
        debug_assert!(
            name.ends_with("_total"),
            "counter {name} must end in _total"
        );
        self.push(name, help, MetricKind::Counter, labels, value, None);
    }

    /// Adds one info sample (value 1); `name` must end in `_info`.
    pub fn info(&mut self, name: &str, help: &str, labels: &[(&str, &str)]) {
        debug_assert!(
            name.ends_with("_info"),
            "info metric {name} must end in _info"
        );
        self.push(name, help, MetricKind::Info, labels, 1.0, None);
    }

    /// Adds one sample with an explicit timestamp (milliseconds since the epoch), for
    /// history written by `simulate --history`.
    pub fn push(
        &mut self,
        name: &str,
        help: &str,
        kind: MetricKind,
        labels: &[(&str, &str)],
        value: f64,
        timestamp_ms: Option<i64>,
    ) {
        let metric = sample(kind, labels, value, timestamp_ms);
        // Looked up before inserting: most samples join a family that exists, and
        // `entry` would allocate the name for each of them.
        match self.families.get_mut(name) {
            Some((_, family)) => family.mut_metric().push(metric),
            None => {
                let mut family = new_family(name, help, kind);
                family.mut_metric().push(metric);
                self.families.insert(name.to_string(), (kind, family));
            }
        }
    }

    /// Moves every family of `other` into this set, keeping this set's help text.
    pub fn merge(&mut self, other: MetricSet) {
        for (name, (kind, mut family)) in other.families {
            match self.families.get_mut(&name) {
                Some((_, mine)) => mine.mut_metric().append(family.mut_metric()),
                None => {
                    self.families.insert(name, (kind, family));
                }
            }
        }
    }

    /// The families in name order, with their kinds.
    pub fn families(&self) -> impl Iterator<Item = (MetricKind, &MetricFamily)> {
        self.families.values().map(|(kind, family)| (*kind, family))
    }

    /// Looks one family up by name (tests and the encoders use it).
    pub fn get(&self, name: &str) -> Option<&MetricFamily> {
        self.families.get(name).map(|(_, family)| family)
    }

    /// The value of the sample of `name` whose labels include every pair of `labels`
    /// (tests read what a collector or the kernel store wrote with it).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let family = self.get(name)?;
        let metric = family.get_metric().iter().find(|m| {
            labels.iter().all(|(k, v)| {
                m.get_label()
                    .iter()
                    .any(|p| p.name() == *k && p.value() == *v)
            })
        })?;
        Some(match family.get_field_type() {
            prometheus::proto::MetricType::COUNTER => metric.get_counter().get_value(),
            _ => metric.get_gauge().get_value(),
        })
    }

    /// Number of samples across all families.
    pub fn sample_count(&self) -> usize {
        self.families
            .values()
            .map(|(_, family)| family.get_metric().len())
            .sum()
    }
}

/// Significant digits a fractional value keeps.
const SIGNIFICANT_DIGITS: usize = 15;

/// `value` without the last-digit noise of binary arithmetic (97.8486 / 100 prints as
/// 0.9784860000000001): fractional values are rounded to [`SIGNIFICANT_DIGITS`], well
/// beyond any reading's precision. Whole numbers (counts, bytes) are kept exact, and
/// rounding is monotone, so counters still never go down.
pub fn tidy(value: f64) -> f64 {
    if !value.is_finite() || value.fract() == 0.0 {
        return value;
    }
    // Formatted on the stack: this runs for most samples of every collection, and an
    // allocation per sample showed in the collection thread's profile.
    use std::io::Write;
    let mut buf = [0u8; 48];
    let mut rest = &mut buf[..];
    if write!(rest, "{value:.prec$e}", prec = SIGNIFICANT_DIGITS - 1).is_err() {
        return value;
    }
    let left = rest.len();
    let len = buf.len() - left;
    std::str::from_utf8(&buf[..len])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(value)
}

fn new_family(name: &str, help: &str, kind: MetricKind) -> MetricFamily {
    let mut family = MetricFamily::default();
    family.set_name(name.to_string());
    family.set_help(help.to_string());
    family.set_field_type(match kind {
        MetricKind::Counter => MetricType::COUNTER,
        MetricKind::Gauge | MetricKind::Info => MetricType::GAUGE,
    });
    family
}

fn sample(kind: MetricKind, labels: &[(&str, &str)], value: f64, ts: Option<i64>) -> Metric {
    let mut metric = Metric::default();
    metric.set_label(
        labels
            .iter()
            .map(|(name, value)| {
                let mut pair = LabelPair::default();
                pair.set_name(name.to_string());
                pair.set_value(value.to_string());
                pair
            })
            .collect(),
    );
    let value = tidy(value);
    match kind {
        MetricKind::Counter => {
            let mut counter = Counter::default();
            counter.set_value(value);
            metric.set_counter(counter);
        }
        MetricKind::Gauge | MetricKind::Info => {
            let mut gauge = Gauge::default();
            gauge.set_value(value);
            metric.set_gauge(gauge);
        }
    }
    if let Some(ts) = ts {
        metric.set_timestamp_ms(ts);
    }
    metric
}

#[cfg(test)]
mod tests {
    #[test]
    fn stack_formatting_rounds_as_a_formatted_string_would() {
        let reference = |v: f64| -> f64 { format!("{v:.14e}").parse().unwrap() };
        for v in [
            -1.0e-5 / 3.0,
            -0.1 - 0.2,
            1.0 / 3.0,
            2.5e-300 / 7.0,
            f64::MIN_POSITIVE * 1.5,
            123_456_789.123_456_78,
            6.02e-3 / 7.0,
            4_503_599_627_370_495.5,
        ] {
            assert_eq!(super::tidy(v), reference(v), "{v:e}");
        }
    }

    #[test]
    fn fractional_values_lose_binary_noise_whole_ones_stay_exact() {
        assert_eq!(super::tidy(97.8486 / 100.0).to_string(), "0.978486");
        assert_eq!(super::tidy(0.1 + 0.2).to_string(), "0.3");
        assert_eq!(
            super::tidy(9_007_199_254_740_993.0),
            9_007_199_254_740_993.0
        );
        assert!(super::tidy(f64::NAN).is_nan());
        assert_eq!(super::tidy(f64::INFINITY), f64::INFINITY);
        assert_eq!(super::tidy(-2.5e-7 / 3.0), -8.33333333333333e-8);
    }
}
