//! Samples of many collections, kept per series in compact columns and written out as
//! OpenMetrics grouped by family and, inside a family, by series in time order, as
//! `promtool tsdb create-blocks-from openmetrics` requires.

use crate::registry::{encode, MetricKind, MetricSet};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// Most samples encoded at once when writing (bounds the memory of the encoder's input).
const SAMPLES_PER_CHUNK: usize = 50_000;

/// One label set's points: collection index and value (12 bytes a point).
#[derive(Debug, Default)]
struct SeriesPoints {
    labels: Vec<(String, String)>,
    steps: Vec<u32>,
    values: Vec<f64>,
}

/// One family's series, in the order they first appeared.
#[derive(Debug)]
struct FamilyPoints {
    kind: MetricKind,
    help: String,
    series: Vec<SeriesPoints>,
    by_labels: HashMap<Vec<(String, String)>, usize>,
}

/// Every sample of a history, held by family and series.
#[derive(Debug, Default)]
pub struct History {
    families: BTreeMap<String, FamilyPoints>,
    samples: usize,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Samples recorded so far.
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// Series recorded so far.
    pub fn series(&self) -> usize {
        self.families.values().map(|f| f.series.len()).sum()
    }

    /// Records every sample of one collection, taken at collection number `step`.
    /// Steps must be recorded in increasing order.
    pub fn record(&mut self, step: u32, set: &MetricSet, skip: &[&str]) {
        for (kind, family) in set.families() {
            if skip.contains(&family.name()) {
                continue;
            }
            let points = self
                .families
                .entry(family.name().to_string())
                .or_insert_with(|| FamilyPoints {
                    kind,
                    help: family.help().to_string(),
                    series: Vec::new(),
                    by_labels: HashMap::new(),
                });
            for metric in family.get_metric() {
                let labels: Vec<(String, String)> = metric
                    .get_label()
                    .iter()
                    .map(|l| (l.name().to_string(), l.value().to_string()))
                    .collect();
                let value = match kind {
                    MetricKind::Counter => metric.get_counter().get_value(),
                    MetricKind::Gauge | MetricKind::Info => metric.get_gauge().get_value(),
                };
                let index = match points.by_labels.get(&labels) {
                    Some(index) => *index,
                    None => {
                        points.series.push(SeriesPoints {
                            labels: labels.clone(),
                            ..SeriesPoints::default()
                        });
                        points.by_labels.insert(labels, points.series.len() - 1);
                        points.series.len() - 1
                    }
                };
                let series = &mut points.series[index];
                series.steps.push(step);
                series.values.push(value);
                self.samples += 1;
            }
        }
    }

    /// Writes the OpenMetrics exposition: families in name order, each family's
    /// metadata once, its series one after another in time order, then `# EOF`.
    /// `timestamp_ms(step)` gives each collection's time.
    pub fn write(&self, timestamp_ms: impl Fn(u32) -> i64, out: &mut dyn Write) -> io::Result<()> {
        for (name, family) in &self.families {
            let mut first_chunk = true;
            for chunk in chunks(&family.series) {
                let mut set = MetricSet::new();
                for series in chunk {
                    let labels: Vec<(&str, &str)> = series
                        .labels
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect();
                    for (step, value) in series.steps.iter().zip(&series.values) {
                        let ts = Some(timestamp_ms(*step));
                        set.push(name, &family.help, family.kind, &labels, *value, ts);
                    }
                }
                write_samples(&encode::openmetrics(&set), first_chunk, out)?;
                first_chunk = false;
            }
        }
        out.write_all(b"# EOF\n")
    }
}

/// Splits a family's series into runs of at most [`SAMPLES_PER_CHUNK`] samples (a
/// series is never split, so its points stay together).
fn chunks(series: &[SeriesPoints]) -> Vec<&[SeriesPoints]> {
    let mut chunks = Vec::new();
    let (mut start, mut samples) = (0, 0);
    for (i, s) in series.iter().enumerate() {
        if samples > 0 && samples + s.steps.len() > SAMPLES_PER_CHUNK {
            chunks.push(&series[start..i]);
            (start, samples) = (i, 0);
        }
        samples += s.steps.len();
    }
    if start < series.len() {
        chunks.push(&series[start..]);
    }
    chunks
}

/// Writes one encoded chunk without its `# EOF` line, and without its `# TYPE` /
/// `# HELP` lines unless it is the family's first chunk.
fn write_samples(encoded: &[u8], with_metadata: bool, out: &mut dyn Write) -> io::Result<()> {
    let body = encoded.strip_suffix(b"# EOF\n").unwrap_or(encoded);
    if with_metadata {
        return out.write_all(body);
    }
    let mut rest = body;
    while rest.starts_with(b"# ") {
        match rest.iter().position(|b| *b == b'\n') {
            Some(end) => rest = &rest[end + 1..],
            None => rest = &[],
        }
    }
    out.write_all(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collection(value: f64) -> MetricSet {
        let mut set = MetricSet::new();
        for gpu in ["0", "1"] {
            set.gauge("poolprof_t_ratio", "A ratio.", &[("gpu", gpu)], value);
            set.counter("poolprof_t_total", "A count.", &[("gpu", gpu)], value * 2.0);
        }
        set.gauge("poolprof_t_skipped", "Skipped.", &[], 1.0);
        set
    }

    fn written(history: &History) -> String {
        let mut out = Vec::new();
        history
            .write(
                |step| 1_700_000_000_000 + i64::from(step) * 15_000,
                &mut out,
            )
            .expect("writing to a Vec");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn samples_come_out_grouped_by_family_then_series_in_time_order() {
        let mut history = History::new();
        for step in 0..3 {
            history.record(step, &collection(f64::from(step)), &["poolprof_t_skipped"]);
        }
        assert_eq!((history.samples(), history.series()), (12, 4));
        let text = written(&history);
        let expected = "\
# TYPE poolprof_t_ratio gauge
# HELP poolprof_t_ratio A ratio.
poolprof_t_ratio{gpu=\"0\"} 0 1700000000
poolprof_t_ratio{gpu=\"0\"} 1 1700000015
poolprof_t_ratio{gpu=\"0\"} 2 1700000030
poolprof_t_ratio{gpu=\"1\"} 0 1700000000
poolprof_t_ratio{gpu=\"1\"} 1 1700000015
poolprof_t_ratio{gpu=\"1\"} 2 1700000030
# TYPE poolprof_t counter
# HELP poolprof_t A count.
poolprof_t_total{gpu=\"0\"} 0 1700000000
poolprof_t_total{gpu=\"0\"} 2 1700000015
poolprof_t_total{gpu=\"0\"} 4 1700000030
poolprof_t_total{gpu=\"1\"} 0 1700000000
poolprof_t_total{gpu=\"1\"} 2 1700000015
poolprof_t_total{gpu=\"1\"} 4 1700000030
# EOF
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_family_split_into_chunks_has_its_metadata_once() {
        let mut history = History::new();
        let per_series = SAMPLES_PER_CHUNK / 2 + 1;
        for step in 0..per_series as u32 {
            let mut set = MetricSet::new();
            for gpu in ["0", "1", "2"] {
                set.gauge("poolprof_t_ratio", "A ratio.", &[("gpu", gpu)], 0.5);
            }
            history.record(step, &set, &[]);
        }
        let text = written(&history);
        assert_eq!(text.matches("# TYPE").count(), 1);
        assert_eq!(text.matches("# HELP").count(), 1);
        assert_eq!(text.lines().count(), 2 + 3 * per_series + 1);
        assert!(text.ends_with("# EOF\n"));
    }
}
