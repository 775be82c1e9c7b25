//! The latest encoded collection, shared between the collection loop and the server.

use super::gzip::gzip;
use super::{encode, MetricSet};
use bytes::Bytes;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

/// One collection, encoded in each exposition format when first asked for: a
/// Prometheus negotiates one format, so the other is usually never written.
#[derive(Debug)]
pub struct Snapshot {
    /// What was collected (empty when built from encoded bodies).
    metrics: MetricSet,
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
    /// A snapshot of `metrics`, encoded on demand.
    pub fn from_metrics(metrics: MetricSet, success: bool) -> Self {
        Self {
            metrics,
            text: OnceLock::new(),
            openmetrics: OnceLock::new(),
            collected_at: Instant::now(),
            success,
            gzip_text: OnceLock::new(),
            gzip_openmetrics: OnceLock::new(),
        }
    }

    /// A snapshot from already-encoded bodies.
    pub fn new(text: Bytes, openmetrics: Bytes, success: bool) -> Self {
        Self {
            text: OnceLock::from(text),
            openmetrics: OnceLock::from(openmetrics),
            ..Self::from_metrics(MetricSet::new(), success)
        }
    }

    /// The body in text format 0.0.4, encoded at most once per snapshot.
    pub fn text(&self) -> Bytes {
        self.text
            .get_or_init(|| encode::text(&self.metrics))
            .clone()
    }

    /// The body in OpenMetrics 1.0.0, encoded at most once per snapshot.
    pub fn openmetrics(&self) -> Bytes {
        self.openmetrics
            .get_or_init(|| encode::openmetrics(&self.metrics))
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
