//! What one run produces: per-series findings and the run's own health, plus the seam
//! ([`Analyze`]) through which the pipeline calls the analyses.

use std::time::Duration;

use serde::Serialize;

use crate::analysis::classify::{Classification, TypeVerdict};
use crate::analysis::colocate::{PairPrediction, Placement};
pub use crate::analysis::findings::{Analysis, HorizonForecast, ThresholdEta};
use crate::analysis::profile::WorkloadProfile;
use crate::config::Identity;
use crate::series::Series;
use crate::source::prometheus::response::DroppedSamples;

/// What the pipeline asks of the analyses for one series.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisRequest {
    /// Seconds between samples (the query step).
    pub step_seconds: f64,
    /// Forecast horizons to report, ascending.
    pub horizons: Vec<Duration>,
    /// The limit the signal must stay under, when it has one (capacity signals).
    pub threshold: Option<f64>,
}

/// The analyses, as the pipeline sees them: pure and callable from many threads.
pub trait Analyze: Send + Sync + 'static {
    /// Finds periods, forecasts and the time to the threshold for one series.
    fn analyze(&self, series: &Series, request: &AnalysisRequest) -> Analysis;
}

/// One analyzed series with its owner.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesReport {
    /// Whether `owner` is a GPU uuid or a workload.
    pub identity: Identity,
    /// The uuid or workload name.
    pub owner: String,
    /// The signal's name.
    pub signal: String,
    /// The findings.
    pub analysis: Analysis,
    /// The window's samples, averaged down to at most
    /// [`recent::MAX_RECENT_POINTS`](super::recent::MAX_RECENT_POINTS) (for the HTML report).
    pub recent: Vec<(f64, f64)>,
}

/// Counts that tell an operator whether a run looked at what it should have.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunHealth {
    /// Series that went through the analyses.
    pub series_analyzed: u64,
    /// Series with no finite sample in the window.
    pub series_skipped_no_samples: u64,
    /// Series lacking the identity label (a config query that aggregates it away).
    pub series_skipped_no_identity: u64,
    /// Signals whose query returned no series at all.
    pub signals_empty: u64,
    /// Series whose forecast failed (too short, degenerate).
    pub forecasts_failed: u64,
    /// Series whose analysis failed outright (a bug: the log names the series and the
    /// reason); they are skipped and the run goes on with the others.
    pub series_failed: u64,
    /// Workloads left out of pairing beyond the configured limit.
    pub workloads_not_paired: u64,
    /// Whether building profiles failed this run (the log says why).
    pub profiles_failed: bool,
    /// Non-finite samples dropped.
    pub dropped: DroppedSamples,
    /// Wall time of the run.
    pub duration: Duration,
    /// When the run finished, unix seconds.
    pub finished_at: f64,
}

/// One workload's profile and what the analyses made of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadReport {
    /// The profile, measured while it ran alone.
    pub profile: WorkloadProfile,
    /// What bounds it.
    pub class: Classification,
    /// What kind of job it is.
    pub kind: TypeVerdict,
}

/// Everything one run produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunReport {
    /// Findings, one per analyzed series.
    pub series: Vec<SeriesReport>,
    /// Profiles with their classes, one per workload seen running alone, by name.
    pub workloads: Vec<WorkloadReport>,
    /// Co-location predictions for every pair of those workloads (`workload_a` < `workload_b`).
    pub pairs: Vec<PairPrediction>,
    /// Each workload against each other GPU's current load (its free capacity).
    pub placements: Vec<Placement>,
    /// The run's health.
    pub health: RunHealth,
}
