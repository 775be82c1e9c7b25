//! One analysis run: for each configured signal, query the source, keep this shard's
//! series, and stream them through the analyses with bounded concurrency.
//!
//! Memory holds at most one query's result (this shard's part of it) plus the small
//! findings: each series is moved into its analysis task and freed when it finishes.

pub mod analyses;
pub mod profiles;
pub mod progress;
pub mod recent;
pub mod report;
pub mod store;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::stream::{self, StreamExt};

pub use analyses::Analyses;
pub use report::{
    Analysis, AnalysisRequest, Analyze, HorizonForecast, RunHealth, RunReport, SeriesReport,
    ThresholdEta, WorkloadReport,
};

use crate::analysis::classify::{self, Thresholds};
use crate::analysis::colocate::{self, Constants};
use crate::config::{Config, Signal};
use crate::error::Error;
use crate::series::Series;
use crate::shard::Shard;
use crate::source::prometheus::{PrometheusClient, QueryRange};
use progress::Progress;

/// Series without the identity label are counted up to this many (a misconfigured query
/// could return a whole fleet of them).
const MAX_TRACKED_WITHOUT_IDENTITY: usize = 10_000;

/// Workloads paired by default: every pair of 200 is 19,900 pairs, each a handful of series.
pub const MAX_PAIRED_WORKLOADS: usize = 200;

/// How the second stage classifies and pairs workloads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadSettings {
    /// The rule set for compute- / memory-bound.
    pub thresholds: Thresholds,
    /// The co-location model's constants.
    pub constants: Constants,
    /// At most this many workloads (by name) are paired; the rest are counted.
    pub max_paired: usize,
}

impl Default for WorkloadSettings {
    fn default() -> Self {
        WorkloadSettings {
            thresholds: Thresholds::Roofline,
            constants: Constants::default(),
            max_paired: MAX_PAIRED_WORKLOADS,
        }
    }
}

/// A run's fixed inputs.
pub struct Pipeline<A: Analyze> {
    client: PrometheusClient,
    config: Config,
    shard: Shard,
    analyses: Arc<A>,
    end: Option<f64>,
    workloads: WorkloadSettings,
}

impl<A: Analyze> Pipeline<A> {
    /// A pipeline over `client` for `config`'s signals, this `shard` of the fleet.
    pub fn new(client: PrometheusClient, config: Config, shard: Shard, analyses: A) -> Self {
        Pipeline {
            client,
            config,
            shard,
            analyses: Arc::new(analyses),
            end: None,
            workloads: WorkloadSettings::default(),
        }
    }

    /// Classifies and pairs workloads with `settings` instead of the defaults.
    pub fn with_workloads(mut self, settings: WorkloadSettings) -> Self {
        self.workloads = settings;
        self
    }

    /// Analyzes the window ending at `end` (unix seconds) instead of now, e.g. for backfilled history.
    pub fn with_end(mut self, end: Option<f64>) -> Self {
        self.end = end;
        self
    }

    /// The shard this pipeline analyzes.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// Runs every signal once; a source failure ends the run with its error.
    pub async fn run(&self) -> Result<RunReport, Error> {
        let started = Instant::now();
        let step = self.config.step();
        let end = self.end.unwrap_or_else(|| align_down(unix_now(), step));
        let range = QueryRange::ending_at(end, self.config.analysis.lookback, Some(step));
        let mut report = RunReport::default();
        for signal in &self.config.signals {
            self.run_signal(signal, range, &mut report).await?;
        }
        if self.shard.index() == 0 {
            self.run_workloads(range, &mut report).await;
        }
        report.health.duration = started.elapsed();
        report.health.finished_at = unix_now();
        Ok(report)
    }

    async fn run_signal(
        &self,
        signal: &Signal,
        range: QueryRange,
        report: &mut RunReport,
    ) -> Result<(), Error> {
        let label = signal.identity.label();
        // Distinct label sets, not samples: a long range answers in several chunks.
        let mut without_identity = HashSet::new();
        let result = self
            .client
            .query_range(&signal.query, range, |labels| match labels.get(label) {
                Some(owner) => self.shard.owns(owner),
                None => {
                    if without_identity.len() < MAX_TRACKED_WITHOUT_IDENTITY {
                        without_identity.insert(labels.clone());
                    }
                    false
                }
            })
            .await?;
        let no_identity = without_identity.len() as u64;
        report.health.dropped.add(result.dropped);
        report.health.series_skipped_no_identity += no_identity;
        if no_identity > 0 {
            tracing::warn!(
                signal = %signal.name,
                query = %signal.query,
                series = no_identity,
                "series without the {label} label skipped; keep it in the query's `by (...)`"
            );
        }
        if result.series.is_empty() {
            if no_identity == 0 {
                report.health.signals_empty += 1;
                tracing::warn!(
                    signal = %signal.name, identity = label, query = %signal.query,
                    "the query returned no series for this shard in the window; skipped"
                );
            }
            return Ok(());
        }
        let thresholds = self.thresholds(signal, range.end).await?;
        let progress = Progress::start(
            format!("{} by {label}", signal.name),
            result.series.len() as u64,
        );
        let request = AnalysisRequest {
            step_seconds: range.step,
            horizons: sorted(&self.config.analysis.horizons),
            threshold: None,
        };
        let tasks = result.series.into_iter().map(|(labels, points)| {
            let owner = labels.get(label).cloned().unwrap_or_default();
            let mut request = request.clone();
            request.threshold = thresholds.get(&owner).copied();
            let analyses = Arc::clone(&self.analyses);
            async move {
                if points.is_empty() {
                    return Ok((owner, None));
                }
                let series = Series { labels, points };
                tokio::task::spawn_blocking(move || {
                    let analysis = analyze_isolated(&*analyses, &series, &request);
                    let recent = recent::downsample(&series.points, recent::MAX_RECENT_POINTS);
                    analysis.map(|a| (a, recent))
                })
                .await
                .map(|a| (owner, Some(a)))
            }
        });
        let mut results = stream::iter(tasks).buffer_unordered(self.config.analysis.concurrency);
        while let Some(done) = results.next().await {
            progress.inc();
            let (owner, analysis) =
                done.map_err(|e| Error::Runtime(format!("an analysis task failed: {e}")))?;
            let (analysis, recent) = match analysis {
                None => {
                    report.health.series_skipped_no_samples += 1;
                    tracing::warn!(signal = %signal.name, %owner, "no finite samples in the window; skipped");
                    continue;
                }
                Some(Err(reason)) => {
                    report.health.series_failed += 1;
                    tracing::error!(
                        signal = %signal.name, %owner, %reason,
                        "the analysis of this series failed; skipped, the other series are unaffected (please report this with the series' data)"
                    );
                    continue;
                }
                Some(Ok(found)) => found,
            };
            report.health.series_analyzed += 1;
            if analysis.forecast_error.is_some() {
                report.health.forecasts_failed += 1;
            }
            report.series.push(SeriesReport {
                identity: signal.identity,
                owner,
                signal: signal.name.clone(),
                analysis,
                recent,
            });
        }
        progress.finish();
        Ok(())
    }

    /// The second stage: profiles from the window, their classes, and every pair's
    /// prediction. A failure here loses only this stage: the per-series results stand.
    async fn run_workloads(&self, range: QueryRange, report: &mut RunReport) {
        let mut found = match profiles::fetch(&self.client, range).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "workload profiles could not be built this run; per-series results are unaffected");
                report.health.profiles_failed = true;
                return;
            }
        };
        for profile in &mut found.workloads {
            profiles::enrich(profile, &report.series);
        }
        let settings = self.workloads;
        report.workloads = found
            .workloads
            .into_iter()
            .map(|profile| WorkloadReport {
                class: classify::classify(&profile, settings.thresholds),
                kind: classify::workload_type(&profile),
                profile,
            })
            .collect();
        report
            .workloads
            .sort_by(|a, b| a.profile.workload.cmp(&b.profile.workload));
        let paired = &report.workloads[..report.workloads.len().min(settings.max_paired)];
        report.health.workloads_not_paired = (report.workloads.len() - paired.len()) as u64;
        if report.health.workloads_not_paired > 0 {
            tracing::warn!(
                workloads = report.workloads.len(),
                paired = paired.len(),
                "more workloads than --max-paired-workloads: the rest are profiled but not paired"
            );
        }
        let mut pairs = Vec::new();
        for (i, a) in paired.iter().enumerate() {
            for b in &paired[i + 1..] {
                pairs.push(colocate::predict(
                    &a.profile,
                    &b.profile,
                    &settings.constants,
                ));
            }
        }
        report.pairs = pairs;
        // Each workload against every GPU it does not run on, within the same budget
        // of predictions as the pairs.
        let budget = settings.max_paired * settings.max_paired / 2;
        report.placements = paired
            .iter()
            .flat_map(|w| {
                found
                    .gpus
                    .iter()
                    .filter(move |g| w.profile.uuid.as_deref() != Some(g.workload.as_str()))
                    .map(move |g| (w, g))
            })
            .take(budget)
            .map(|(w, g)| colocate::place(&w.profile, g, &settings.constants))
            .collect();
    }

    /// The capacity per owner at the window's end, when the signal has one.
    async fn thresholds(&self, signal: &Signal, at: f64) -> Result<HashMap<String, f64>, Error> {
        let Some(query) = &signal.capacity else {
            return Ok(HashMap::new());
        };
        let label = signal.identity.label();
        let values = self.client.query(query, at).await?;
        Ok(values
            .into_iter()
            .filter_map(|(labels, v)| labels.get(label).map(|o| (o.clone(), v)))
            .collect())
    }
}

/// Runs the analyses on one series, turning a panic into that series' failure: the
/// last line of defence, so that one series the analyses mishandle (a bug) costs only
/// itself, not the whole run and every other series' results.
fn analyze_isolated<A: Analyze>(
    analyses: &A,
    series: &Series,
    request: &AnalysisRequest,
) -> Result<Analysis, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        analyses.analyze(series, request)
    }))
    .map_err(|panic| {
        panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the analysis panicked".to_string())
    })
}

fn sorted(horizons: &[Duration]) -> Vec<Duration> {
    let mut h = horizons.to_vec();
    h.sort();
    h.dedup();
    h
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Rounds `t` down to a multiple of `step`, so runs on a schedule query the same grid.
fn align_down(t: f64, step: Duration) -> f64 {
    let s = step.as_secs_f64();
    (t / s).floor() * s
}
