//! poolprof-analyzer on hostile input, as a cron job or a service sees it: values at
//! the edges of f64, a poisoned series among good ones in a real Prometheus, a source
//! that answers garbage or never answers, and SIGTERM in the middle of a run.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use poolprof_e2e::analyzer_cli::{analyzer, run_once, stderr, write, SM_ACTIVE_CONFIG};
use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::ports::free_port;
use poolprof_e2e::process::ChildGuard;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::pushgateway::Pushgateway;
use poolprof_e2e::wait;

const END: f64 = 1_767_225_600.0;

/// A local HTTP server: every request is read, then `answer` runs on its own thread
/// with the raw request and writes whatever it likes to the stream (or nothing).
/// Returns its base URL and the count of requests seen.
fn raw_server(
    answer: impl Fn(&mut std::net::TcpStream) + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (answer, counter) = (Arc::clone(&answer), Arc::clone(&counter));
            std::thread::spawn(move || {
                // The analyzer's requests are small form POSTs: one read holds them.
                let mut buf = [0u8; 65536];
                let _ = stream.read(&mut buf);
                counter.fetch_add(1, Ordering::SeqCst);
                answer(&mut stream);
            });
        }
    });
    (url, seen)
}

fn respond_200(stream: &mut std::net::TcpStream, body: &str) {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

#[test]
fn periods_and_forecast_take_extreme_values_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let wave = |i: usize| 10.0 + (2.0 * std::f64::consts::PI * i as f64 / 24.0).sin();
    let csv = |f: &dyn Fn(usize) -> String| -> String {
        (0..600)
            .map(|i| format!("{},{}\n", 1.7e9 + 60.0 * i as f64, f(i)))
            .collect()
    };
    let files = [
        (
            "huge_spike",
            csv(&|i| {
                if i == 300 {
                    "1.7e308".into()
                } else {
                    wave(i).to_string()
                }
            }),
        ),
        (
            "alternating",
            csv(&|i| {
                if i % 2 == 0 {
                    "1e308".into()
                } else {
                    "-1e308".into()
                }
            }),
        ),
        (
            "spike_1e200",
            csv(&|i| {
                if i == 300 {
                    "1e200".into()
                } else {
                    wave(i).to_string()
                }
            }),
        ),
        (
            "subnormal",
            csv(&|i| format!("{:e}", (wave(i) - 10.0) * 1e-310)),
        ),
    ];
    for (name, text) in files {
        let path = write(dir.path(), &format!("{name}.csv"), &text);
        let out = analyzer(&["periods", "--input", &path]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "periods {name}: {}",
            stderr(&out)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if name != "alternating" {
            let p = v["periods"][0]["period_seconds"]
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: {v}"));
            assert!((p - 1440.0).abs() < 30.0, "{name}: {v}");
        }
        let out = analyzer(&["forecast", "--input", &path, "--horizon", "24"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "forecast {name}: {}",
            stderr(&out)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in ["forecast", "lower", "upper"] {
            let values = v[key].as_array().unwrap_or_else(|| panic!("{name}: {v}"));
            assert_eq!(values.len(), 24);
            assert!(
                values
                    .iter()
                    .all(|x| x.as_f64().is_some_and(f64::is_finite)),
                "{name}: {key} not finite: {v}"
            );
        }
        if name == "huge_spike" || name == "spike_1e200" {
            let point = v["forecast"].as_array().unwrap();
            assert!(
                point
                    .iter()
                    .all(|x| (8.0..=12.0).contains(&x.as_f64().unwrap())),
                "{name}: the spike leaked into the forecast: {v}"
            );
        }
    }
}

#[test]
fn a_csv_with_an_unterminated_quote_exits_2_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "q.csv", "value\n1\n2\n\"3\n4\n5\n");
    let out = analyzer(&["periods", "--input", &path]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&path) && err.contains("line 4") && err.contains("never closed"),
        "{err}"
    );
}

#[test]
fn a_source_answering_malformed_json_exits_3() {
    for body in ["<html>proxy error page</html>", r#"{"unexpected":"shape"}"#] {
        let (url, seen) = raw_server(move |s| respond_200(s, body));
        let out = run_once(&url, &["--attempts", "1"]);
        assert_eq!(out.status.code(), Some(3), "{body}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&url) && err.contains("malformed"), "{err}");
        assert!(seen.load(Ordering::SeqCst) >= 1);
    }
}

#[test]
fn a_truncated_answer_exits_3_and_says_so() {
    let (url, _) = raw_server(|s| {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metr"#;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len() + 1000
        );
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(body.as_bytes());
    });
    let out = run_once(&url, &["--attempts", "1"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("truncated") && !err.contains("cannot reach"),
        "{err}"
    );
}

#[test]
fn a_poisoned_series_in_prometheus_does_not_stop_the_good_ones_being_pushed() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("# TYPE poolprof_gpu_sm_active_ratio gauge\n");
    let start = END - 3600.0;
    for i in 0..=240 {
        let t = start + 15.0 * f64::from(i);
        let wave = if (t - start) % 300.0 < 240.0 {
            "0.9"
        } else {
            "0.1"
        };
        let huge = if i == 120 { "1.7e308" } else { wave };
        let alternating = if i % 2 == 0 { "1e308" } else { "-1e308" };
        for (uuid, v) in [
            ("GPU-good-0", wave),
            ("GPU-good-1", wave),
            ("GPU-huge", huge),
            ("GPU-alternating", alternating),
        ] {
            text.push_str(&format!(
                "poolprof_gpu_sm_active_ratio{{uuid=\"{uuid}\"}} {v} {t}\n"
            ));
        }
    }
    text.push_str("# EOF\n");
    let file = write(dir.path(), "poisoned.om", &text);
    let data = dir.path().join("data");
    backfill_openmetrics(Path::new(&file), &data);
    let prom = Prometheus::start_on_data_dir(&data, &PrometheusConfig::default());
    let gateway = Pushgateway::start();
    let config = write(dir.path(), "signals.toml", SM_ACTIVE_CONFIG);
    let end = END.to_string();
    let out = run_once(
        &prom.url(),
        &["--config", &config, "--end", &end, "--push", &gateway.url()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let periods = gateway.samples("poolprof_workload_period_seconds");
    for good in ["GPU-good-0", "GPU-good-1", "GPU-huge"] {
        let p = periods
            .iter()
            .find(|s| s.label("uuid") == good && s.label("rank") == "1")
            .unwrap_or_else(|| panic!("no period pushed for {good}: {periods:?}"));
        assert!((p.value - 300.0).abs() < 6.0, "{good}: {p:?}");
    }
    let analyzed = gateway.samples("poolprof_analyzer_series_analyzed");
    assert_eq!(analyzed[0].value, 4.0, "{analyzed:?}");
    let failed = gateway
        .samples("poolprof_analyzer_series_skipped")
        .into_iter()
        .find(|s| s.label("reason") == "analysis_failed")
        .expect("the failure count is pushed");
    assert_eq!(failed.value, 0.0);
    let forecasts = gateway.samples("poolprof_forecast");
    assert!(
        forecasts.iter().all(|s| s.value.is_finite()),
        "{forecasts:?}"
    );
}

/// A source that takes every request and never answers.
fn silent_source() -> (String, Arc<AtomicUsize>) {
    raw_server(|_| std::thread::sleep(Duration::from_secs(120)))
}

/// Waits until the source has seen a query, sends SIGTERM, and expects `child` to
/// exit with 0 within 5 s.
fn terminate_once_queried(child: &mut ChildGuard, seen: &AtomicUsize) {
    wait::until(
        "the run to query the source",
        Duration::from_secs(30),
        || {
            if seen.load(Ordering::SeqCst) > 0 {
                Ok(())
            } else {
                Err(format!("no query yet; log:\n{}", child.log_tail()))
            }
        },
    );
    child.terminate();
    let status = wait_for_exit(child, Duration::from_secs(5));
    assert!(
        status.success(),
        "{} exited {status}; log:\n{}",
        child.name(),
        child.log_tail()
    );
}

fn wait_for_exit(child: &mut ChildGuard, within: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_exit_status() {
            return status;
        }
        assert!(
            started.elapsed() < within,
            "{} still running {within:?} after SIGTERM; log:\n{}",
            child.name(),
            child.log_tail()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_mid_run_stops_serve_within_5_s_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = silent_source();
    let mut cmd = Command::new(workspace_bin("poolprof-analyzer"));
    cmd.args(["serve", "--prometheus", &url, "--timeout", "120s"])
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--api", &format!("127.0.0.1:{}", free_port())])
        .args(["--interval", "1h"]);
    let mut child = ChildGuard::spawn(
        "poolprof-analyzer serve",
        cmd,
        &dir.path().join("serve.log"),
    );
    terminate_once_queried(&mut child, &seen);
}

#[test]
fn sigterm_mid_run_stops_run_once_within_5_s_with_exit_0_and_nothing_pushed() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = silent_source();
    let gateway = Pushgateway::start();
    let mut cmd = Command::new(workspace_bin("poolprof-analyzer"));
    cmd.args(["run", "--once", "--prometheus", &url, "--timeout", "120s"])
        .args(["--push", &gateway.url()]);
    let mut child = ChildGuard::spawn(
        "poolprof-analyzer run --once",
        cmd,
        &dir.path().join("run.log"),
    );
    terminate_once_queried(&mut child, &seen);
    assert!(
        gateway
            .samples("poolprof_analyzer_series_analyzed")
            .is_empty(),
        "a cancelled run pushed results"
    );
}
