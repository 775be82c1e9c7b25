//! poolprof-analyzer's failures as a cron job sees them: exit codes and messages
//! against real servers (DESIGN.md: 2 bad input, 3 source unreachable, 4 sink refused),
//! plus empty results, NaN/Inf samples and `serve`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use poolprof_e2e::analyzer_cli::{run_once, stderr, write, SM_ACTIVE_CONFIG};
use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::ports::free_port;
use poolprof_e2e::process::ChildGuard;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::{backfill_openmetrics, check_metrics};
use poolprof_e2e::pushgateway::Pushgateway;
use poolprof_e2e::server::get_text;
use poolprof_e2e::wait;

const END: f64 = 1_767_225_600.0;

/// An hour at 15 s of one GPU's SM activity: a 300 s square wave with one NaN and two
/// infinite samples, backfilled into a fresh Prometheus.
fn small_history(dir: &Path) -> Prometheus {
    let mut text = String::from("# TYPE poolprof_gpu_sm_active_ratio gauge\n");
    let start = END - 3600.0;
    for i in 0..=240 {
        let t = start + 15.0 * f64::from(i);
        let v = match i {
            100 => "NaN".to_string(),
            150 => "+Inf".to_string(),
            151 => "-Inf".to_string(),
            _ if (t - start) % 300.0 < 240.0 => "0.9".to_string(),
            _ => "0.1".to_string(),
        };
        text.push_str(&format!(
            "poolprof_gpu_sm_active_ratio{{gpu=\"0\",uuid=\"GPU-a\"}} {v} {t}\n"
        ));
    }
    text.push_str("# EOF\n");
    let file = write(dir, "small.om", &text);
    let data = dir.join("data");
    backfill_openmetrics(Path::new(&file), &data);
    Prometheus::start_on_data_dir(&data, &PrometheusConfig::default())
}

/// [`SM_ACTIVE_CONFIG`] and a signal whose query finds no series.
fn signals() -> String {
    format!(
        "{SM_ACTIVE_CONFIG}\n[[signals]]\nname = \"absent\"\nidentity = \"uuid\"\nquery = \"avg by (uuid) (poolprof_no_such_metric)\"\n"
    )
}

#[test]
fn an_unreachable_source_exits_3_and_names_the_url() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = run_once(&url, &["--attempts", "2", "--timeout", "2s"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&url) && err.contains("after 2 attempt"),
        "{err}"
    );
}

#[test]
fn a_promql_error_exits_2_with_prometheus_message() {
    let dir = tempfile::tempdir().unwrap();
    let prom = Prometheus::start(&PrometheusConfig::default());
    let config = write(
        dir.path(),
        "bad.toml",
        "[[signals]]\nname = \"bad\"\nidentity = \"uuid\"\nquery = \"rate(poolprof_gpu_sm_active_ratio[5m]\"\n",
    );
    let out = run_once(&prom.url(), &["--config", &config]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    // Prometheus's own parser message, verbatim.
    assert!(
        err.contains("parse error") && err.contains("bad_data"),
        "{err}"
    );
}

#[test]
fn a_bad_config_exits_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "a.toml", "[analysis]\nlookback = \"forever\"\n");
    let out = run_once("http://127.0.0.1:1", &["--config", &config]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&config) && err.contains("analysis.lookback"),
        "{err}"
    );
}

#[test]
fn a_refusing_pushgateway_exits_4_and_the_group_keeps_its_old_content() {
    let dir = tempfile::tempdir().unwrap();
    let prom = small_history(dir.path());
    let config = write(dir.path(), "signals.toml", &signals());
    let end = END.to_string();
    let base = ["--config", &config, "--end", &end];

    // A URL that answers but is no Pushgateway: Prometheus refuses the PUT.
    let not_a_gateway = prom.url();
    let out = run_once(
        &prom.url(),
        &[&base[..], &["--push", &not_a_gateway]].concat(),
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("refused") && err.contains("/metrics/job/poolprof-analyzer/instance/0-of-1"),
        "{err}"
    );

    // A real Pushgateway holding an earlier push: a refused run must not touch it.
    let gateway = Pushgateway::start();
    let gateway_url = gateway.url();
    let pushing = [&base[..], &["--push", &gateway_url]].concat();
    assert_eq!(run_once(&prom.url(), &pushing).status.code(), Some(0));
    let before = gateway.samples("poolprof_workload_period_seconds");
    assert_eq!(before.len(), 1, "{before:?}");
    let unreachable_source = format!("http://127.0.0.1:{}", free_port());
    let out = run_once(
        &unreachable_source,
        &["--attempts", "1", "--push", &gateway_url],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(gateway.samples("poolprof_workload_period_seconds"), before);

    // The real Pushgateway refusing: another group holds, as a counter, a family this
    // run adds (time to threshold, from a capacity signal), so the whole push is
    // inconsistent and refused; the analyzer's group stays exactly as it was.
    gateway.push(
        "other",
        "# TYPE poolprof_forecast_time_to_threshold_seconds counter\npoolprof_forecast_time_to_threshold_seconds 1\n",
    );
    let capacity = signals().replace(
        "query = \"avg by (uuid) (poolprof_gpu_sm_active_ratio)\"",
        "query = \"avg by (uuid) (poolprof_gpu_sm_active_ratio)\"\ncapacity = 'label_replace(vector(0.5), \"uuid\", \"GPU-a\", \"\", \"\")'",
    );
    assert_ne!(capacity, signals());
    let config = write(dir.path(), "capacity.toml", &capacity);
    let out = run_once(
        &prom.url(),
        &["--config", &config, "--end", &end, "--push", &gateway_url],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("HTTP 400"), "{}", stderr(&out));
    assert_eq!(gateway.samples("poolprof_workload_period_seconds"), before);
    assert!(gateway
        .samples("poolprof_forecast_time_to_threshold_seconds")
        .iter()
        .all(|s| s.label("job") == "other"));
}

#[test]
fn empty_results_warn_and_nan_inf_are_dropped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let prom = small_history(dir.path());
    let config = write(dir.path(), "signals.toml", &signals());
    let end = END.to_string();
    let out = run_once(&prom.url(), &["--config", &config, "--end", &end]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("returned no series"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "poolprof_analyzer_signals_empty 1",
        "poolprof_analyzer_series_analyzed 1",
        "poolprof_analyzer_samples_dropped{reason=\"nan\"} 1",
        "poolprof_analyzer_samples_dropped{reason=\"inf\"} 2",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}:\n{text}");
    }
    let period = text
        .lines()
        .find(|l| {
            l.starts_with(
                "poolprof_workload_period_seconds{rank=\"1\",signal=\"sm_active\",uuid=\"GPU-a\"}",
            )
        })
        .unwrap_or_else(|| panic!("no period:\n{text}"));
    let v: f64 = period.rsplit_once(' ').unwrap().1.parse().unwrap();
    assert!((v - 300.0).abs() < 6.0, "{period}");
    let check = check_metrics(&text);
    assert!(check.is_clean(), "{check:?}");
}

#[test]
fn serve_exposes_the_latest_results_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let prom = small_history(dir.path());
    let config = write(dir.path(), "signals.toml", &signals());
    let listen = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new(workspace_bin("poolprof-analyzer"));
    cmd.args([
        "serve",
        "--prometheus",
        &prom.url(),
        "--config",
        &config,
        "--listen",
        &listen,
    ])
    .args(["--api", &format!("127.0.0.1:{}", free_port())])
    .args(["--interval", "1s", "--end", &END.to_string()]);
    let mut child = ChildGuard::spawn(
        "poolprof-analyzer serve",
        cmd,
        &dir.path().join("serve.log"),
    );
    let text = wait::until("serve's /metrics", Duration::from_secs(30), || {
        let text = std::panic::catch_unwind(|| get_text(&format!("http://{listen}/metrics")))
            .map_err(|_| format!("not answering yet; log:\n{}", child.log_tail()))?;
        if text.contains("poolprof_workload_period_seconds") {
            Ok(text)
        } else {
            Err(format!("no results yet:\n{text}"))
        }
    });
    assert!(
        text.contains("poolprof_analyzer_last_run_success 1"),
        "{text}"
    );
    assert!(check_metrics(&text).is_clean());
    child.terminate();
    let status = wait::until("serve to stop", Duration::from_secs(10), || {
        child
            .try_exit_status()
            .ok_or_else(|| "still running".to_string())
    });
    assert!(
        status.success(),
        "serve exited {status}; log:\n{}",
        child.log_tail()
    );
}
