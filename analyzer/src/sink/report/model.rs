//! What the report shows, taken from a run's [`RunReport`]: each owner's signals with
//! their periods and forecasts, each workload's class and kernel time by class, and the
//! co-location matrix. The HTML, JSON and CSV formats all render this one model.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analysis::colocate::{Mode, Recommendation};
use crate::analysis::periodicity::Period;
use crate::config::Identity;
use crate::pipeline::{HorizonForecast, RunReport};

/// Everything the report shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportData {
    /// How the run went.
    pub run: RunSummary,
    /// Signals per owner: workloads first, then GPUs, each by name.
    pub owners: Vec<OwnerSignals>,
    /// Each profiled workload's class and kernel time, by name.
    pub workloads: Vec<WorkloadSummary>,
    /// The co-location predictions of every paired workload.
    pub colocation: ColocationMatrix,
}

/// The run's health, as the report's header shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// When the run finished, unix seconds.
    pub finished_at: f64,
    /// Wall time of the run, seconds.
    pub duration_seconds: f64,
    /// Series analyzed.
    pub series_analyzed: u64,
    /// Series whose analysis failed.
    pub series_failed: u64,
    /// Series without a forecast.
    pub forecasts_failed: u64,
    /// Signals whose query returned nothing.
    pub signals_empty: u64,
    /// Workloads profiled but left out of pairing.
    pub workloads_not_paired: u64,
    /// Whether the workload stage failed this run.
    pub profiles_failed: bool,
}

/// One workload's or GPU's analyzed signals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnerSignals {
    /// `workload` or `uuid`.
    pub identity: &'static str,
    /// The workload name or GPU uuid.
    pub owner: String,
    /// Its signals, by name.
    pub signals: Vec<SignalData>,
}

/// One signal of one owner: its recent samples and what the analyses found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignalData {
    /// The signal's name.
    pub signal: String,
    /// The window's samples, (unix seconds, value), averaged down (pipeline::recent).
    pub points: Vec<(f64, f64)>,
    /// Periods, strongest first.
    pub periods: Vec<Period>,
    /// Why there is no period, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_period_reason: Option<String>,
    /// The forecast at each horizon, after the last sample.
    pub forecasts: Vec<HorizonForecast>,
    /// Why there is no forecast, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forecast_error: Option<String>,
}

/// One workload's classification and kernel time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadSummary {
    /// The workload.
    pub workload: String,
    /// What bounds it (`compute_bound`, …).
    pub class: &'static str,
    /// What kind of job it is (`training`, …).
    pub kind: &'static str,
    /// Share of kernel time by class; empty without kernel records.
    pub kernel_time_by_class: BTreeMap<String, f64>,
}

/// Every paired workload and every pair's prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColocationMatrix {
    /// The matrix's rows and columns, by name.
    pub workloads: Vec<String>,
    /// One entry per pair (`workload_a` < `workload_b`).
    pub pairs: Vec<PairCell>,
}

/// One pair: its score under each mode and what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairCell {
    /// The workload whose name sorts first.
    pub workload_a: String,
    /// The other.
    pub workload_b: String,
    /// The recommended mode; none when no mode can run the pair.
    pub recommended_mode: Option<Mode>,
    /// The verdict for that mode.
    pub recommendation: Recommendation,
    /// Score per mode, in `Mode::ALL` order.
    pub modes: Vec<ModeScore>,
}

/// A pair's prediction under one mode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModeScore {
    /// The mode.
    pub mode: Mode,
    /// Whether the pair can run this way at all.
    pub feasible: bool,
    /// Mean progress of the two sides, 0-1.
    pub score: f64,
}

impl PairCell {
    /// The prediction under `mode`.
    pub fn score(&self, mode: Mode) -> Option<ModeScore> {
        self.modes.iter().find(|m| m.mode == mode).copied()
    }
}

impl ReportData {
    /// The report of `report`.
    pub fn from_run(report: &RunReport) -> ReportData {
        ReportData {
            run: summary(report),
            owners: owners(report),
            workloads: report
                .workloads
                .iter()
                .map(|w| WorkloadSummary {
                    workload: w.profile.workload.clone(),
                    class: w.class.class.label(),
                    kind: w.kind.kind.label(),
                    kernel_time_by_class: w.profile.kernel_time_by_class.clone(),
                })
                .collect(),
            colocation: matrix(report),
        }
    }
}

fn summary(report: &RunReport) -> RunSummary {
    let h = &report.health;
    RunSummary {
        finished_at: h.finished_at,
        duration_seconds: h.duration.as_secs_f64(),
        series_analyzed: h.series_analyzed,
        series_failed: h.series_failed,
        forecasts_failed: h.forecasts_failed,
        signals_empty: h.signals_empty,
        workloads_not_paired: h.workloads_not_paired,
        profiles_failed: h.profiles_failed,
    }
}

fn owners(report: &RunReport) -> Vec<OwnerSignals> {
    // Workloads sort before GPUs, then by name, then signal.
    let mut grouped: BTreeMap<(bool, &str), (Identity, Vec<SignalData>)> = BTreeMap::new();
    for s in &report.series {
        let is_gpu = s.identity != Identity::Workload;
        grouped
            .entry((is_gpu, s.owner.as_str()))
            .or_insert_with(|| (s.identity, Vec::new()))
            .1
            .push(SignalData {
                signal: s.signal.clone(),
                points: s.recent.clone(),
                periods: s.analysis.periods.clone(),
                no_period_reason: s.analysis.no_period_reason.clone(),
                forecasts: s.analysis.forecasts.clone(),
                forecast_error: s.analysis.forecast_error.clone(),
            });
    }
    grouped
        .into_iter()
        .map(|((_, owner), (identity, mut signals))| {
            signals.sort_by(|a, b| a.signal.cmp(&b.signal));
            OwnerSignals {
                identity: identity.label(),
                owner: owner.to_string(),
                signals,
            }
        })
        .collect()
}

fn matrix(report: &RunReport) -> ColocationMatrix {
    let mut workloads: Vec<String> = report
        .pairs
        .iter()
        .flat_map(|p| [p.workload_a.clone(), p.workload_b.clone()])
        .collect();
    workloads.sort();
    workloads.dedup();
    let pairs = report
        .pairs
        .iter()
        .map(|p| PairCell {
            workload_a: p.workload_a.clone(),
            workload_b: p.workload_b.clone(),
            recommended_mode: p.recommended_mode,
            recommendation: p.recommendation,
            modes: p
                .modes
                .iter()
                .map(|m| ModeScore {
                    mode: m.mode,
                    feasible: m.feasible,
                    score: m.score,
                })
                .collect(),
        })
        .collect();
    ColocationMatrix { workloads, pairs }
}
