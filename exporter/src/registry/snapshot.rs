//! The latest encoded collection, shared between the collection loop and the server.

use super::{encode, MetricSet};
use bytes::Bytes;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

/// One collection, encoded at most once in each exposition format, when a scrape
/// first asks for it: a Prometheus asks for one format, so encoding both every
/// collection spent half the encoding CPU on bodies nobody read.
#[derive(Debug)]
pub struct Snapshot {
    /// The samples, until encoded; `None` for a snapshot made from encoded bodies.
    metrics: Option<MetricSet>,
    /// Text format 0.0.4.
    text: OnceLock<Bytes>,
    /// OpenMetrics 1.0.0 text, ending in `# EOF`.
    openmetrics: OnceLock<Bytes>,
    /// When the collection finished.
    pub collected_at: Instant,
    /// Whether the collection counts for readiness: at least one collector succeeded
    /// (one field that always fails must not keep `/-/ready` false forever).
    pub success: bool,
    gzip_text: OnceLock<Bytes>,
    gzip_openmetrics: OnceLock<Bytes>,
}

impl Snapshot {
    /// A snapshot from already-encoded bodies.
    pub fn new(text: Bytes, openmetrics: Bytes, success: bool) -> Self {
        Self {
            metrics: None,
            text: OnceLock::from(text),
            openmetrics: OnceLock::from(openmetrics),
            collected_at: Instant::now(),
            success,
            gzip_text: OnceLock::new(),
            gzip_openmetrics: OnceLock::new(),
        }
    }

    /// A snapshot of `metrics`, each format encoded on first use.
    pub fn from_metrics(metrics: MetricSet, success: bool) -> Self {
        Self {
            metrics: Some(metrics),
            text: OnceLock::new(),
            openmetrics: OnceLock::new(),
            collected_at: Instant::now(),
            success,
            gzip_text: OnceLock::new(),
            gzip_openmetrics: OnceLock::new(),
        }
    }

    /// The body in text format 0.0.4.
    pub fn text(&self) -> Bytes {
        self.text
            .get_or_init(|| self.metrics.as_ref().map(encode::text).unwrap_or_default())
            .clone()
    }

    /// The body in OpenMetrics 1.0.0 text, ending in `# EOF`.
    pub fn openmetrics(&self) -> Bytes {
        self.openmetrics
            .get_or_init(|| {
                self.metrics
                    .as_ref()
                    .map(encode::openmetrics)
                    .unwrap_or_default()
            })
            .clone()
    }

    /// The gzip-compressed body, compressed at most once per snapshot.
    pub fn gzipped(&self, openmetrics: bool) -> Bytes {
        if openmetrics {
            self.gzip_openmetrics
                .get_or_init(|| gzip(&self.openmetrics()))
                .clone()
        } else {
            self.gzip_text.get_or_init(|| gzip(&self.text())).clone()
        }
    }
}

fn gzip(body: &[u8]) -> Bytes {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;
    let mut encoder = GzEncoder::new(Vec::with_capacity(body.len() / 4), Compression::fast());
    encoder
        .write_all(body)
        .expect("writing to a Vec cannot fail");
    Bytes::from(encoder.finish().expect("writing to a Vec cannot fail"))
}

/// Holds the latest snapshot and when a collection last succeeded.
#[derive(Debug, Default)]
pub struct SnapshotStore {
    latest: RwLock<Option<Arc<Snapshot>>>,
    last_success: RwLock<Option<Instant>>,
}

impl SnapshotStore {
    /// An empty store: not ready until the first collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Publishes a new snapshot.
    pub fn publish(&self, snapshot: Snapshot) {
        if snapshot.success {
            *self.last_success.write().expect("lock poisoned") = Some(snapshot.collected_at);
        }
        *self.latest.write().expect("lock poisoned") = Some(Arc::new(snapshot));
    }

    /// The latest snapshot, if any collection has finished.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        self.latest.read().expect("lock poisoned").clone()
    }

    /// True when a collection succeeded within `window` (three intervals for `/-/ready`).
    pub fn succeeded_within(&self, window: Duration) -> bool {
        self.last_success
            .read()
            .expect("lock poisoned")
            .is_some_and(|at| at.elapsed() <= window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> MetricSet {
        let mut set = MetricSet::new();
        set.gauge("poolprof_gpu_up", "1 when up.", &[("gpu", "0")], 1.0);
        set.counter(
            "poolprof_gpu_xid_errors_total",
            "Xids.",
            &[("gpu", "0")],
            3.0,
        );
        set
    }

    #[test]
    fn each_format_is_encoded_when_first_asked_and_equals_the_encoders_output() {
        let snapshot = Snapshot::from_metrics(metrics(), true);
        assert!(snapshot.text.get().is_none() && snapshot.openmetrics.get().is_none());
        assert_eq!(snapshot.text(), encode::text(&metrics()));
        assert!(
            snapshot.openmetrics.get().is_none(),
            "serving text must not encode OpenMetrics"
        );
        assert_eq!(snapshot.openmetrics(), encode::openmetrics(&metrics()));
        assert!(snapshot.openmetrics().ends_with(b"# EOF\n"));
    }

    #[test]
    fn gzip_holds_the_lazily_encoded_body() {
        use std::io::Read;
        let snapshot = Snapshot::from_metrics(metrics(), true);
        let mut body = Vec::new();
        flate2::read::GzDecoder::new(&snapshot.gzipped(true)[..])
            .read_to_end(&mut body)
            .unwrap();
        assert_eq!(body, encode::openmetrics(&metrics()));
        assert!(snapshot.text.get().is_none());
    }
}
