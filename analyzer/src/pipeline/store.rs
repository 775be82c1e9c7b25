//! The latest report, shared by every sink of `serve`: `/metrics` serves its
//! exposition, the REST API reads its profiles and pairs.

use std::sync::{Arc, RwLock};

use bytes::Bytes;

use super::RunReport;
use crate::sink::results;

/// What the sinks see: the last successful report and whether the latest run failed.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The last successful run's report (empty before the first).
    pub report: Arc<RunReport>,
    /// Whether the latest run succeeded (false: `report` is an earlier run's).
    pub last_run_ok: bool,
    /// Whether any run has succeeded yet.
    pub ready: bool,
    /// `report` rendered as the exposition `/metrics` serves.
    pub exposition: Bytes,
}

/// The store; cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct ReportStore(Arc<RwLock<Snapshot>>);

impl ReportStore {
    /// Publishes a successful run's report.
    pub fn publish(&self, report: RunReport) {
        let exposition = Bytes::from(results::render(&report, true).encode());
        self.set(Snapshot {
            report: Arc::new(report),
            last_run_ok: true,
            ready: true,
            exposition,
        });
    }

    /// Records a failed run: the previous report stays, marked as such.
    pub fn mark_failed(&self) {
        let mut s = self.get();
        s.last_run_ok = false;
        s.exposition = Bytes::from(results::render(&s.report, false).encode());
        self.set(s);
    }

    /// The current snapshot.
    pub fn get(&self) -> Snapshot {
        // A poisoned lock only means a reader panicked; the data is still whole.
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, s: Snapshot) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = s;
    }
}
