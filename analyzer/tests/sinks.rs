//! Results as metrics (checked by promtool) and the Pushgateway sink against a scripted server.

mod support;

use poolprof_e2e::promtool::check_metrics;
use std::time::Duration;

use poolprof_analyzer::analysis::classify::{self, Thresholds};
use poolprof_analyzer::analysis::colocate::{self, Constants};
use poolprof_analyzer::analysis::periodicity::Period;
use poolprof_analyzer::analysis::profile::{Coverage, ProfileSignal as S, Window, WorkloadProfile};
use poolprof_analyzer::config::Identity;
use poolprof_analyzer::error::{Error, ExitCode};
use poolprof_analyzer::pipeline::{
    Analysis, HorizonForecast, RunHealth, RunReport, SeriesReport, ThresholdEta, WorkloadReport,
};
use poolprof_analyzer::retry::RetryPolicy;
use poolprof_analyzer::sink::pushgateway::{PushError, Pushgateway};
use poolprof_analyzer::sink::results::{format_horizon, render};
use poolprof_analyzer::source::prometheus::response::DroppedSamples;
use support::FakeServer;

fn workload(name: &str, duty: f64, tensor: f64, dram: f64) -> WorkloadReport {
    let w = Window {
        start: 0.0,
        end: 600.0,
    };
    let mut profile = WorkloadProfile::new(name, Coverage::NvmlOnly)
        .with(S::Busy, duty, w)
        .with(S::SmActive, duty * 0.9, w)
        .with(S::SmOccupancy, duty * 0.4, w)
        .with(S::TensorActive, tensor, w)
        .with(S::DramActive, dram, w)
        .with(S::MemoryBytes, 20e9, w);
    profile.gpu_name = Some("NVIDIA H100 80GB HBM3".into());
    WorkloadReport {
        class: classify::classify(&profile, Thresholds::Roofline),
        kind: classify::workload_type(&profile),
        profile,
    }
}

fn report() -> RunReport {
    let periodic = Analysis {
        periods: vec![
            Period {
                period_seconds: 300.0,
                strength: 0.8,
                confidence: 0.99,
                last_peak_seconds: Some(1_767_225_542.0),
            },
            Period {
                period_seconds: 86_400.0,
                strength: 0.1,
                confidence: 0.6,
                last_peak_seconds: None,
            },
        ],
        forecasts: vec![HorizonForecast {
            horizon: Duration::from_secs(3600),
            point: 0.5,
            lower: 0.2,
            upper: 0.8,
        }],
        ..Default::default()
    };
    let capacity = Analysis {
        no_period_reason: Some("flat".into()),
        forecasts: vec![HorizonForecast {
            horizon: Duration::from_secs(5400),
            point: 7e10,
            lower: 6e10,
            upper: 8e10,
        }],
        time_to_threshold: Some(ThresholdEta {
            point: Some(3000.0),
            lower: 1800.0,
            upper: None,
        }),
        ..Default::default()
    };
    RunReport {
        series: vec![
            SeriesReport {
                identity: Identity::Workload,
                owner: "ns/train \"a\"".into(),
                signal: "sm_active".into(),
                analysis: periodic.clone(),
                recent: Vec::new(),
            },
            SeriesReport {
                identity: Identity::Uuid,
                owner: "GPU-1".into(),
                signal: "sm_active".into(),
                analysis: periodic,
                recent: Vec::new(),
            },
            SeriesReport {
                identity: Identity::Uuid,
                owner: "GPU-1".into(),
                signal: "memory_used".into(),
                analysis: capacity,
                recent: Vec::new(),
            },
        ],
        workloads: vec![
            workload("train", 0.9, 0.7, 0.15),
            workload("etl", 0.95, 0.02, 0.85),
        ],
        pairs: vec![colocate::predict(
            &workload("train", 0.9, 0.7, 0.15).profile,
            &workload("etl", 0.95, 0.02, 0.85).profile,
            &Constants::default(),
        )],
        placements: vec![colocate::place(
            &workload("train", 0.9, 0.7, 0.15).profile,
            &workload("GPU-2", 0.3, 0.1, 0.2).profile,
            &Constants::default(),
        )],
        health: RunHealth {
            series_analyzed: 3,
            series_skipped_no_samples: 1,
            dropped: DroppedSamples { nan: 4, inf: 2 },
            duration: Duration::from_millis(1500),
            finished_at: 1_767_225_600.0,
            ..Default::default()
        },
    }
}

#[test]
fn results_use_the_design_names_and_pass_promtool() {
    let text = render(&report(), true).encode();
    for line in [
        "poolprof_workload_period_seconds{rank=\"1\",signal=\"sm_active\",workload=\"ns/train \\\"a\\\"\"} 300",
        "poolprof_workload_period_seconds{rank=\"2\",signal=\"sm_active\",uuid=\"GPU-1\"} 86400",
        "poolprof_workload_periodicity_strength{rank=\"1\",signal=\"sm_active\",uuid=\"GPU-1\"} 0.8",
        "poolprof_workload_period_last_peak_timestamp_seconds{rank=\"1\",signal=\"sm_active\",uuid=\"GPU-1\"} 1767225542",
        "poolprof_forecast{bound=\"lower\",horizon=\"1h\",signal=\"sm_active\",uuid=\"GPU-1\"} 0.2",
        "poolprof_forecast{bound=\"upper\",horizon=\"1h30m\",signal=\"memory_used\",uuid=\"GPU-1\"} 80000000000",
        "poolprof_forecast_time_to_threshold_seconds{bound=\"lower\",signal=\"memory_used\",uuid=\"GPU-1\"} 1800",
        "poolprof_analyzer_last_success_timestamp_seconds 1767225600",
        "poolprof_analyzer_series_analyzed 3",
        "poolprof_analyzer_samples_dropped{reason=\"nan\"} 4",
        "poolprof_analyzer_series_skipped{reason=\"no_samples\"} 1",
        "poolprof_analyzer_last_run_success 1",
        "poolprof_workload_class{class=\"compute_bound\",workload=\"train\"} 1",
        "poolprof_workload_class{class=\"memory_bound\",workload=\"etl\"} 1",
        "poolprof_workload_type{type=\"training\",workload=\"train\"} 1",
        "poolprof_analyzer_workloads_profiled 2",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
    }
    // a period without a peak time has no such sample
    assert!(!text
        .lines()
        .any(|l| l.starts_with("poolprof_workload_period_last_peak_timestamp_seconds{rank=\"2\"")));
    // every mode of the pair, both directions of progress, one recommendation set to 1
    for mode in ["time_slicing", "mps", "mig"] {
        let score = format!(
            "poolprof_colocation_score{{mode=\"{mode}\",workload_a=\"etl\",workload_b=\"train\"}}"
        );
        assert!(
            text.lines().any(|l| l.starts_with(&score)),
            "missing {score}\n{text}"
        );
        let progress = format!("poolprof_colocation_predicted_progress_ratio{{mode=\"{mode}\",peer=\"etl\",workload=\"train\"}}");
        assert!(
            text.lines().any(|l| l.starts_with(&progress)),
            "missing {progress}"
        );
    }
    let placed = "poolprof_placement_predicted_progress_ratio{mode=\"mps\",uuid=\"GPU-2\",workload=\"train\"}";
    assert!(
        text.lines().any(|l| l.starts_with(placed)),
        "missing {placed}"
    );
    let recommended: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("poolprof_colocation_recommendation{") && l.ends_with(" 1"))
        .collect();
    assert_eq!(recommended.len(), 1, "{recommended:?}");
    // No period for the flat series, and no upper crossing when the optimistic side never crosses.
    assert!(!text
        .lines()
        .any(|l| l.starts_with("poolprof_workload_period_seconds") && l.contains("memory_used")));
    assert!(!text
        .lines()
        .any(|l| l.starts_with("poolprof_forecast_time_to_threshold_seconds{bound=\"upper\"")));
    assert_eq!(
        check_metrics(&text).output,
        "",
        "promtool check metrics must print nothing"
    );
}

#[test]
fn an_empty_run_still_reports_health_and_passes_promtool() {
    let text = render(&RunReport::default(), false).encode();
    assert!(text.contains("poolprof_analyzer_last_run_success 0"));
    assert!(!text.contains("poolprof_workload_period_seconds"));
    assert_eq!(check_metrics(&text).output, "");
}

#[test]
fn horizons_read_like_promql_durations() {
    assert_eq!(format_horizon(Duration::from_secs(3600)), "1h");
    assert_eq!(format_horizon(Duration::from_secs(900)), "15m");
    assert_eq!(format_horizon(Duration::from_secs(5400)), "1h30m");
    assert_eq!(format_horizon(Duration::from_secs(90_061)), "1d1h1m1s");
}

fn gateway(server: &FakeServer, attempts: u32) -> Pushgateway {
    let retry = RetryPolicy {
        attempts,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(10),
    };
    Pushgateway::new(&server.url(), "2-of-4", Duration::from_secs(5), retry).unwrap()
}

#[tokio::test]
async fn a_group_is_one_put_to_the_shard_grouping_key() {
    let server = FakeServer::start(|_, _| (200, String::new()));
    let text = render(&report(), true).encode();
    gateway(&server, 3)
        .replace_group(text.clone())
        .await
        .unwrap();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].method, "PUT");
    assert_eq!(
        reqs[0].path,
        "/metrics/job/poolprof-analyzer/instance/2-of-4"
    );
    assert_eq!(reqs[0].body, text);
    assert!(reqs[0].headers["content-type"].starts_with("text/plain"));
}

#[tokio::test]
async fn a_refusing_pushgateway_is_exit_4_with_its_message_and_no_retry() {
    let server =
        FakeServer::start(|_, _| (400, "pushed metrics are invalid or inconsistent".into()));
    let err = gateway(&server, 3)
        .replace_group("x 1\n".into())
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 1);
    assert!(matches!(err, PushError::Rejected { status: 400, .. }));
    assert!(err.to_string().contains("invalid or inconsistent"), "{err}");
    assert_eq!(Error::from(err).exit_code(), ExitCode::SinkRejected);
}

#[tokio::test]
async fn a_5xx_is_retried_then_reported() {
    let server = FakeServer::start(|_, _| (503, "down".into()));
    let err = gateway(&server, 2)
        .replace_group("x 1\n".into())
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 2);
    assert_eq!(Error::from(err).exit_code(), ExitCode::SinkRejected);
}

#[test]
fn a_push_url_that_is_not_http_is_a_usage_error() {
    let url = reqwest::Url::parse("mailto:ops@example.com").unwrap();
    let err = Pushgateway::new(
        &url,
        "0-of-1",
        Duration::from_secs(1),
        RetryPolicy::default(),
    )
    .unwrap_err();
    assert_eq!(Error::from(err).exit_code(), ExitCode::Usage);
}
