//! The pipeline over a scripted source with stand-in analyses: sharding, skips, counts
//! and capacity thresholds.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use poolprof_analyzer::analysis::periodicity::Period;
use poolprof_analyzer::config::{AnalysisSettings, Config, Identity, Signal};
use poolprof_analyzer::pipeline::{Analysis, AnalysisRequest, Analyze, Pipeline};
use poolprof_analyzer::retry::RetryPolicy;
use poolprof_analyzer::series::Series;
use poolprof_analyzer::shard::Shard;
use poolprof_analyzer::source::prometheus::{ClientOptions, PrometheusClient};
use support::{grid, matrix, FakeServer};

/// Reports the series' mean as its "period" and the threshold it was given, so the
/// test sees exactly what the pipeline handed over.
#[derive(Clone, Default)]
struct Echo {
    calls: Arc<AtomicUsize>,
}

impl Analyze for Echo {
    fn analyze(&self, series: &Series, request: &AnalysisRequest) -> Analysis {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mean = series.values().sum::<f64>() / series.points.len() as f64;
        Analysis {
            periods: vec![Period {
                period_seconds: mean,
                strength: request.step_seconds,
                confidence: 1.0,
                last_peak_seconds: None,
            }],
            no_period_reason: request.threshold.map(|t| t.to_string()),
            ..Default::default()
        }
    }
}

const GPUS: usize = 40;

fn fleet_server() -> FakeServer {
    FakeServer::start(|req, _| {
        let p = req.params();
        let q = p["query"].as_str();
        if req.path.ends_with("/query") {
            let body = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"uuid":"GPU-3"},"value":[1,"80"]}]}}"#;
            return (200, body.to_string());
        }
        match q {
            "empty" => (200, matrix(&[])),
            "all_nan" => {
                let values = grid(req)
                    .into_iter()
                    .map(|t| (t, "NaN".to_string()))
                    .collect();
                (200, matrix(&[(&[("uuid", "GPU-0")], values)]))
            }
            "no_label" => {
                let values = grid(req)
                    .into_iter()
                    .map(|t| (t, "1".to_string()))
                    .collect();
                (200, matrix(&[(&[("instance", "x")], values)]))
            }
            _ => {
                let labels: Vec<[(&str, String); 1]> =
                    (0..GPUS).map(|i| [("uuid", format!("GPU-{i}"))]).collect();
                let borrowed: Vec<[(&str, &str); 1]> =
                    labels.iter().map(|[(k, v)]| [(*k, v.as_str())]).collect();
                let refs: Vec<support::SeriesSpec> = borrowed
                    .iter()
                    .enumerate()
                    .map(|(i, l)| {
                        let values = grid(req).into_iter().map(|t| (t, i.to_string())).collect();
                        (&l[..], values)
                    })
                    .collect();
                (200, matrix(&refs))
            }
        }
    })
}

fn config(signals: Vec<(&str, &str, Option<&str>)>) -> Config {
    Config {
        analysis: AnalysisSettings {
            lookback: Duration::from_secs(3600),
            step: Some(Duration::from_secs(60)),
            horizons: vec![Duration::from_secs(600)],
            concurrency: 3,
        },
        signals: signals
            .into_iter()
            .map(|(name, query, capacity)| Signal {
                name: name.into(),
                identity: Identity::Uuid,
                query: query.into(),
                capacity: capacity.map(String::from),
            })
            .collect(),
        ..Config::default()
    }
}

fn client(server: &FakeServer) -> PrometheusClient {
    let mut o = ClientOptions::new(server.url());
    o.retry = RetryPolicy {
        attempts: 1,
        ..RetryPolicy::default()
    };
    PrometheusClient::new(o).unwrap()
}

#[tokio::test]
async fn shards_split_the_fleet_without_overlap_and_see_every_sample() {
    let server = fleet_server();
    let mut seen = Vec::new();
    for i in 0..3 {
        let echo = Echo::default();
        let pipeline = Pipeline::new(
            client(&server),
            config(vec![("sm", "fleet", None)]),
            Shard::new(i, 3).unwrap(),
            echo.clone(),
        )
        .with_end(Some(1_700_000_000.0));
        let report = pipeline.run().await.unwrap();
        assert_eq!(report.health.series_analyzed as usize, report.series.len());
        assert_eq!(echo.calls.load(Ordering::SeqCst), report.series.len());
        assert!(!report.series.is_empty(), "shard {i} got nothing");
        for s in &report.series {
            assert!(Shard::new(i, 3).unwrap().owns(&s.owner));
            // Echo's "period" is the mean of the values: the GPU's index, every sample kept.
            let index: f64 = s.owner.trim_start_matches("GPU-").parse().unwrap();
            assert_eq!(s.analysis.periods[0].period_seconds, index);
            assert_eq!(
                s.analysis.periods[0].strength, 60.0,
                "the configured step is passed on"
            );
            seen.push(s.owner.clone());
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), GPUS, "every GPU analyzed by exactly one shard");
}

#[tokio::test]
async fn empty_results_and_series_without_samples_or_identity_are_skipped_and_counted() {
    let server = fleet_server();
    let echo = Echo::default();
    let cfg = config(vec![
        ("a", "empty", None),
        ("b", "all_nan", None),
        ("c", "no_label", None),
    ]);
    let report = Pipeline::new(client(&server), cfg, Shard::ALL, echo.clone())
        .with_end(Some(1_700_000_000.0))
        .run()
        .await
        .unwrap();
    assert_eq!(echo.calls.load(Ordering::SeqCst), 0);
    assert!(report.series.is_empty());
    let h = report.health;
    assert_eq!(h.signals_empty, 1);
    assert_eq!(h.series_skipped_no_samples, 1);
    assert_eq!(h.series_skipped_no_identity, 1);
    assert_eq!(h.dropped.nan, 61, "one NaN per step of the hour at 60s");
}

#[tokio::test]
async fn capacity_thresholds_reach_their_owner_only() {
    let server = fleet_server();
    let cfg = config(vec![(
        "memory_used",
        "fleet",
        Some("max by (uuid) (total)"),
    )]);
    let report = Pipeline::new(client(&server), cfg, Shard::ALL, Echo::default())
        .with_end(Some(1_700_000_000.0))
        .run()
        .await
        .unwrap();
    for s in &report.series {
        let expected = (s.owner == "GPU-3").then(|| "80".to_string());
        assert_eq!(s.analysis.no_period_reason, expected, "{}", s.owner);
    }
    let instant = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/v1/query")
        .unwrap();
    assert_eq!(instant.params()["time"], "1700000000");
}

#[tokio::test]
async fn a_query_error_stops_the_run_with_exit_2() {
    let server = FakeServer::start(|_, _| {
        (
            422,
            support::api_error(
                "execution",
                "vector cannot contain metrics with the same labelset",
            ),
        )
    });
    let err = Pipeline::new(
        client(&server),
        config(vec![("a", "x", None)]),
        Shard::ALL,
        Echo::default(),
    )
    .run()
    .await
    .unwrap_err();
    assert_eq!(err.exit_code().code(), 2);
    assert!(err.to_string().contains("same labelset"));
}

#[tokio::test]
async fn a_series_without_identity_is_counted_once_across_chunks() {
    let server = fleet_server();
    let mut cfg = config(vec![("c", "no_label", None)]);
    cfg.analysis.lookback = Duration::from_secs(8 * 86_400); // 11,521 points at 60 s: two chunks
    let report = Pipeline::new(client(&server), cfg, Shard::ALL, Echo::default())
        .with_end(Some(1_700_000_000.0))
        .run()
        .await
        .unwrap();
    // the signal's two chunks (the workload stage's own queries come after)
    let signal_queries = server
        .requests()
        .iter()
        .filter(|r| r.params().get("query").map(String::as_str) == Some("no_label"))
        .count();
    assert_eq!(signal_queries, 2);
    assert_eq!(report.health.series_skipped_no_identity, 1);
    assert_eq!(
        report.health.signals_empty, 0,
        "not empty: misconfigured, and counted as such"
    );
}

/// Panics on one GPU's series, as a bug in an analysis would.
#[derive(Clone, Default)]
struct PanicsOnGpu7;

impl Analyze for PanicsOnGpu7 {
    fn analyze(&self, series: &Series, request: &AnalysisRequest) -> Analysis {
        if series.labels.get("uuid").map(String::as_str) == Some("GPU-7") {
            panic!("poisoned series");
        }
        Echo::default().analyze(series, request)
    }
}

#[tokio::test]
async fn a_series_whose_analysis_panics_is_skipped_and_counted_not_fatal() {
    let server = fleet_server();
    let report = Pipeline::new(
        client(&server),
        config(vec![("sm", "fleet", None)]),
        Shard::ALL,
        PanicsOnGpu7,
    )
    .with_end(Some(1_700_000_000.0))
    .run()
    .await
    .expect("one bad series must not fail the run");
    assert_eq!(report.health.series_failed, 1);
    assert_eq!(report.health.series_analyzed as usize, GPUS - 1);
    assert!(report.series.iter().all(|s| s.owner != "GPU-7"));
}

#[tokio::test]
async fn extreme_values_in_one_series_leave_the_others_analysed() {
    use poolprof_analyzer::pipeline::Analyses;
    // GPU-0 and GPU-1: a 1200 s square wave; GPU-2 the same with one sample at 1.7e308;
    // GPU-3 alternating ±1e308; GPU-4 subnormal.
    let server = FakeServer::start(|req, _| {
        if req.path.ends_with("/query") {
            return (200, support::api_error("bad_data", "no capacity here"));
        }
        let t = grid(req);
        let wave = |i: usize| if (i * 60) % 1200 < 960 { 0.9 } else { 0.1 };
        let series = |f: &dyn Fn(usize) -> f64| -> Vec<(f64, String)> {
            t.iter()
                .enumerate()
                .map(|(i, t)| (*t, format!("{:e}", f(i))))
                .collect()
        };
        let good = series(&wave);
        let spiked = series(&|i| if i == 30 { 1.7e308 } else { wave(i) });
        let alternating = series(&|i| if i % 2 == 0 { 1e308 } else { -1e308 });
        let tiny = series(&|i| wave(i) * 1e-310);
        (
            200,
            matrix(&[
                (&[("uuid", "GPU-0")], good.clone()),
                (&[("uuid", "GPU-1")], good),
                (&[("uuid", "GPU-2")], spiked),
                (&[("uuid", "GPU-3")], alternating),
                (&[("uuid", "GPU-4")], tiny),
            ]),
        )
    });
    let mut cfg = config(vec![("sm", "x", None)]);
    cfg.analysis.lookback = Duration::from_secs(6 * 3600);
    let report = Pipeline::new(client(&server), cfg, Shard::ALL, Analyses::default())
        .with_end(Some(1_700_000_000.0))
        .run()
        .await
        .unwrap();
    assert_eq!(report.health.series_failed, 0);
    assert_eq!(report.health.series_analyzed, 5);
    for s in &report.series {
        let a = &s.analysis;
        for f in &a.forecasts {
            assert!(
                [f.point, f.lower, f.upper].iter().all(|v| v.is_finite()),
                "{}: {a:?}",
                s.owner
            );
        }
        if s.owner == "GPU-3" {
            // it alternates every step: shorter than any period searched
            assert!(a.periods.is_empty(), "{a:?}");
        } else {
            let p = a
                .periods
                .first()
                .unwrap_or_else(|| panic!("{}: {a:?}", s.owner));
            assert!(
                (p.period_seconds - 1200.0).abs() < 24.0,
                "{}: {a:?}",
                s.owner
            );
        }
    }
}
