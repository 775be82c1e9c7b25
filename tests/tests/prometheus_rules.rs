//! deploy/prometheus/: the example configuration, the recording and alert rules and
//! their promtool unit tests pass `deploy/prometheus/check.sh`, and every `poolprof_*`
//! metric the rules name (in expressions, annotations and the unit tests' series), and
//! every one the Grafana dashboards of dashboards/ name, is one
//! our programs really publish: the names are read from the simulated exporter's
//! `/metrics` (beside a fake kubelet and an injected process, so that pod and kernel
//! metrics exist) and from poolprof-analyzer's output on simulated history, never from
//! the sources. Then the rule files are loaded into a real Prometheus scraping that
//! exporter: every rule must evaluate without error on its series, and the recording
//! rules must give the scenario's numbers.

#[allow(dead_code)] // only `FakeKubelet::start` and `pod` are used here
#[path = "../../exporter/tests/fake_kubelet/mod.rs"]
mod fake_kubelet;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_kubelet::{pod, FakeKubelet, Mode};
use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::dashboards;
use poolprof_e2e::exporter::Exporter;
use poolprof_e2e::exposition;
use poolprof_e2e::history;
use poolprof_e2e::process::output_text;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::server::get_text;
use poolprof_e2e::wait::until;
use poolprof_exporter::kubelet::proto::ListPodResourcesResponse;
use poolprof_inject::aggregate::{Aggregator, KernelRun};
use poolprof_inject::sample::Sample;
use poolprof_inject::sender::{Sender, Source};
use poolprof_inject::wire::{DutyCycle, Geometry, Hello};
use serde::Deserialize;

const WAIT: Duration = Duration::from_secs(60);
/// End of the simulated history for the analyzer (2026-01-01T00:00:00Z).
const END: f64 = 1_767_225_600.0;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/prometheus")
}

#[test]
fn check_sh_passes() {
    let script = deploy_dir().join("check.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed ({}); promtool comes with Debian's prometheus package \
         (bash tests/run.sh installs it):\n{}",
        script.display(),
        out.status,
        output_text(&out)
    );
}

// --- The rule files and unit tests, as far as this test reads them ---------------------

#[derive(Debug, Deserialize)]
struct RuleFile {
    groups: Vec<RuleGroup>,
}

#[derive(Debug, Deserialize)]
struct RuleGroup {
    name: String,
    rules: Vec<Rule>,
}

#[derive(Debug, Deserialize)]
struct Rule {
    record: Option<String>,
    alert: Option<String>,
    expr: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct TestFile {
    tests: Vec<TestGroup>,
}

#[derive(Debug, Deserialize)]
struct TestGroup {
    #[serde(default)]
    input_series: Vec<InputSeries>,
    #[serde(default)]
    promql_expr_test: Vec<ExprTest>,
    #[serde(default)]
    alert_rule_test: Vec<AlertTest>,
}

#[derive(Debug, Deserialize)]
struct InputSeries {
    series: String,
}

#[derive(Debug, Deserialize)]
struct ExprTest {
    expr: String,
}

#[derive(Debug, Deserialize)]
struct AlertTest {
    alertname: String,
    #[serde(default)]
    exp_alerts: Vec<serde_yaml_ng::Value>,
}

fn yaml_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *{suffix} in {}", dir.display());
    files
}

fn read_yaml<T: for<'de> Deserialize<'de>>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every rule of every file in deploy/prometheus/rules/, with where it is.
fn rules() -> Vec<(String, Rule)> {
    let mut all = Vec::new();
    for path in yaml_files(&deploy_dir().join("rules"), ".yml") {
        let file: RuleFile = read_yaml(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for group in file.groups {
            for rule in group.rules {
                let what = rule
                    .record
                    .as_deref()
                    .or(rule.alert.as_deref())
                    .unwrap_or("?");
                all.push((format!("{name}: group {}: {what}", group.name), rule));
            }
        }
    }
    all
}

fn test_files() -> Vec<(PathBuf, TestFile)> {
    yaml_files(&deploy_dir().join("tests"), ".test.yml")
        .into_iter()
        .map(|path| {
            let file = read_yaml(&path);
            (path, file)
        })
        .collect()
}

/// The metric names in a PromQL expression (identifiers outside string literals that
/// are not followed by `(`, i.e. not functions); numbers and durations are skipped.
/// Keywords and label names come back too: callers keep the names they care about.
fn promql_names(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '[' {
            // a range or subquery: durations and Grafana's $__range, no names
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' && c != '`' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            names.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    names
}

/// The `poolprof_*` words of free text (annotations): a word starts after a character
/// that cannot be part of a metric name, so `libpoolprof_inject.so` is not one.
fn text_names(text: &str) -> Vec<String> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("poolprof_") {
        let before = rest[..at].chars().next_back();
        let word: String = rest[at..].chars().take_while(|c| is_name(*c)).collect();
        if !before.is_some_and(is_name) {
            names.push(word.clone());
        }
        rest = &rest[at + word.len()..];
    }
    names
}

#[test]
fn promql_names_skips_strings_numbers_and_functions_too() {
    let names = promql_names(
        r#"label_replace(max_over_time(a:poolprof_x:max[1h]) < 0.3 or sum_over_time(poolprof_s[$__range:1m]), "workload_a", "$1", "poolprof_in_a_string", "(.+)") and on (uuid) poolprof_y_total{kind='poolprof_z'} offset 15m"#,
    );
    assert!(names.contains(&"a:poolprof_x:max".to_string()), "{names:?}");
    assert!(names.contains(&"poolprof_y_total".to_string()), "{names:?}");
    assert!(names.contains(&"poolprof_s".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("range")), "{names:?}");
    assert!(!names
        .iter()
        .any(|n| n.contains("string") || n == "poolprof_z"));
    assert!(!names.iter().any(|n| n == "h" || n == "m"), "{names:?}");
    assert_eq!(
        text_names("see poolprof_gpu_up{uuid=\"x\"}, not libpoolprof_inject.so or POOLPROF_X"),
        vec!["poolprof_gpu_up".to_string()]
    );
}

/// Every `poolprof_*` metric name (without `:`) and every recording-rule name (with `:`)
/// the rule files and unit tests use, each with the places that use it.
fn referenced_names() -> BTreeMap<String, BTreeSet<String>> {
    let mut used: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut add = |names: Vec<String>, place: &str| {
        for name in names {
            if name.starts_with("poolprof_") || name.contains(':') {
                used.entry(name).or_default().insert(place.to_string());
            }
        }
    };
    for (place, rule) in rules() {
        add(promql_names(&rule.expr), &place);
        for (key, text) in &rule.annotations {
            add(text_names(text), &format!("{place}: annotation {key}"));
        }
    }
    for (place, expr) in dashboards::all_promql() {
        add(promql_names(&expr), &format!("dashboards/{place}"));
    }
    for (path, file) in test_files() {
        let place = path.file_name().unwrap().to_string_lossy().into_owned();
        for group in &file.tests {
            for series in &group.input_series {
                // the series' name, before its labels
                let name = series.series.split('{').next().unwrap_or("").trim();
                add(vec![name.to_string()], &format!("{place}: input series"));
            }
            for test in &group.promql_expr_test {
                add(
                    promql_names(&test.expr),
                    &format!("{place}: promql_expr_test"),
                );
            }
        }
    }
    used
}

#[test]
fn every_alert_is_labelled_annotated_and_tested_both_ways() {
    let mut problems = Vec::new();
    let mut alerts = BTreeSet::new();
    for (place, rule) in rules() {
        let Some(alert) = &rule.alert else { continue };
        alerts.insert(alert.clone());
        match rule.labels.get("severity").map(String::as_str) {
            Some("critical" | "warning" | "info") => {}
            other => problems.push(format!("{place}: severity {other:?}")),
        }
        for key in ["summary", "description", "runbook"] {
            if rule
                .annotations
                .get(key)
                .is_none_or(|t| t.trim().is_empty())
            {
                problems.push(format!("{place}: no {key} annotation"));
            }
        }
        if rule
            .annotations
            .get("runbook")
            .is_some_and(|t| t.contains('\n'))
        {
            problems.push(format!("{place}: the runbook is more than one line"));
        }
    }
    let (mut fires, mut quiet) = (BTreeSet::new(), BTreeSet::new());
    for (_, file) in test_files() {
        for test in file.tests.iter().flat_map(|g| &g.alert_rule_test) {
            if test.exp_alerts.is_empty() {
                quiet.insert(test.alertname.clone());
            } else {
                fires.insert(test.alertname.clone());
            }
        }
    }
    for alert in &alerts {
        if !fires.contains(alert) {
            problems.push(format!("{alert}: no unit test where it fires"));
        }
        if !quiet.contains(alert) {
            problems.push(format!("{alert}: no unit test where it does not fire"));
        }
    }
    for tested in fires.union(&quiet) {
        if !alerts.contains(tested) {
            problems.push(format!(
                "unit tests name {tested}, which no rule file defines"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// --- What our programs publish -------------------------------------------------------------

fn sample_names(body: &str, what: &str) -> BTreeSet<String> {
    exposition::parse(body)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .into_iter()
        .map(|s| s.name)
        .collect()
}

/// The metric names of `poolprof-analyzer run --once` (printed, not pushed) on two
/// hours of exporter/scenarios/colocation.toml backfilled into a real Prometheus: four
/// workloads, so classes, types and co-location scores; the sm_active signal is given a
/// capacity of 0.5, which the training GPU crosses, so that a time to threshold is
/// published too.
fn analyzer_names(dir: &Path) -> BTreeSet<String> {
    let scenario = format!(
        "{}/../exporter/scenarios/colocation.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let history = history::simulate(dir, "2h", "15s", END, &["--scenario", &scenario]);
    let data = dir.join("data");
    backfill_openmetrics(&history, &data);
    let source = Prometheus::start_on_data_dir(&data, &PrometheusConfig::default());
    let config = dir.join("analyzer.toml");
    std::fs::write(
        &config,
        r#"
[analysis]
lookback = "2h"
step = "15s"
horizons = ["1h"]

[[signals]]
name = "sm_active"
identity = "uuid"
query = "avg by (uuid) (poolprof_gpu_sm_active_ratio)"
capacity = "0.5 + 0 * max by (uuid) (poolprof_gpu_sm_active_ratio)"
"#,
    )
    .unwrap();
    let out = Command::new(workspace_bin("poolprof-analyzer"))
        .args(["run", "--once", "--prometheus", &source.url()])
        .args(["--end", &END.to_string(), "--attempts", "2", "--config"])
        .arg(&config)
        .output()
        .expect("poolprof-analyzer runs");
    assert!(
        out.status.success(),
        "poolprof-analyzer run --once exited {}:\n{}",
        out.status,
        output_text(&out)
    );
    let names = sample_names(&String::from_utf8_lossy(&out.stdout), "analyzer output");
    for family in [
        "poolprof_colocation_score",
        "poolprof_forecast_time_to_threshold_seconds",
    ] {
        assert!(
            names.contains(family),
            "the analyzer run published no {family}, so this test cannot vouch for the \
             rules that use it: {names:?}"
        );
    }
    names
}

/// A CUDA stand-in for the injection library's sender: one kernel, then nothing.
#[derive(Clone)]
struct FakeCupti(Arc<Mutex<Aggregator>>);

impl Source for FakeCupti {
    fn flush(&self, _forced: bool) {}
    fn take(&self) -> Sample {
        Sample::new(self.0.lock().unwrap().take(), DutyCycle::Always.ppm())
    }
    fn uuid(&self, _ordinal: u32) -> Option<[u8; 16]> {
        Some(poolprof_e2e::exporter::SIM_GPU0_UUID_BYTES)
    }
}

/// GPU 0 trains, GPU 1 falls off the bus (Xid 79) at 1 s and answers again at 2 s, so
/// that its Xid counter is published; GPU 2 idles; GPU 3 has MIG on, so that the MIG
/// families the dashboards use are published (docs/scenario.md).
const SCENARIO: &str = r#"
[[gpus]]
kind = "training"
period_seconds = 60
processes = [{ pid = 7001, name = "python", workload = "rules-train" }]

[[gpus]]
kind = "failing"
fail_at_seconds = 1
recover_at_seconds = 2

[[gpus]]
kind = "idle"

[[gpus]]
kind = "mig"

[[gpus.instances]]
profile = "3g.40gb"
kind = "inference"
"#;

/// UUID of simulated GPU 0 (docs/scenario.md).
const GPU0: &str = "GPU-00000000-0000-4000-8000-000000000000";

#[test]
fn the_rules_use_only_published_metrics_and_evaluate_on_them() {
    let referenced = referenced_names();
    let recorded: BTreeSet<String> = rules()
        .into_iter()
        .filter_map(|(_, rule)| rule.record)
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let mut known = analyzer_names(dir.path());
    known.extend(recorded.iter().cloned());

    // The exporter, with a kubelet answering that a pod holds GPU 0, and an injected
    // process reporting a kernel.
    let scenario = dir.path().join("scenario.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    let kubelet_socket = dir.path().join("kubelet.sock");
    let _kubelet = FakeKubelet::start(
        &kubelet_socket,
        Mode::Pods(ListPodResourcesResponse {
            pod_resources: vec![pod("ml", "train-0", "trainer", "nvidia.com/gpu", &[GPU0])],
        }),
    );
    let kernel_socket = dir.path().join("inject.sock");
    let exporter = Exporter::start(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--collect-interval",
        "1s",
        "--kernels.socket-path",
        kernel_socket.to_str().unwrap(),
        "--kubelet.pod-resources-socket",
        kubelet_socket.to_str().unwrap(),
        "--kubelet.pod-resources-interval",
        "1s",
    ]);
    let cupti = FakeCupti(Arc::new(Mutex::new(Aggregator::new(64))));
    cupti.0.lock().unwrap().record_kernel(&KernelRun {
        device: 0,
        name: "_Z4gemmPfS_S_",
        start_ns: 1_000,
        end_ns: 51_000,
        geometry: Geometry::default(),
    });
    let hello = Hello {
        pid: std::process::id(),
        process_name: "e2e".into(),
        workload: Some("rules-train".into()),
        library_version: "e2e".into(),
        interval_ms: 100,
        duty: DutyCycle::Always,
    };
    // Kept until the end: the exporter drops a workload's series after it disconnects.
    let mut sender = Sender::new(kernel_socket.clone(), hello, cupti, 64);
    until("the exporter's kernel socket", WAIT, || {
        std::os::unix::net::UnixStream::connect(&kernel_socket)
            .map(drop)
            .map_err(|e| format!("{e}; exporter log:\n{}", exporter.log_tail()))
    });
    sender.finish(Instant::now() + Duration::from_secs(5));

    // Every name the exporter publishes at some point (the Xid counter appears once the
    // failing GPU answers again), until the rules' names are all accounted for.
    let mut published = BTreeSet::new();
    let missing = |published: &BTreeSet<String>| -> Vec<String> {
        referenced
            .iter()
            .filter(|(name, _)| !known.contains(*name) && !published.contains(*name))
            .map(|(name, places)| {
                let kind = if name.contains(':') {
                    "no recording rule records it"
                } else {
                    "neither poolprof-exporter nor poolprof-analyzer publishes it"
                };
                format!(
                    "{name}: {kind}; used in {}",
                    places.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        published.extend(sample_names(&exporter.metrics_text(), "exporter /metrics"));
        let left = missing(&published);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rules use metric names nothing publishes:\n{}\n\nexporter log:\n{}",
            left.join("\n"),
            exporter.log_tail()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Sanity: the names really were checked, the pod and kernel families among them.
    for name in [
        "poolprof_gpu_pod_info",
        "poolprof_kernel_duration_seconds_total",
        "poolprof_gpu_xid_errors_total",
        "poolprof_inject_dropped_records_total",
        "poolprof_analyzer_last_success_timestamp_seconds",
        // used by the dashboards only
        "poolprof_mig_sm_active_ratio",
        "poolprof_colocation_predicted_progress_ratio",
    ] {
        assert!(
            referenced.contains_key(name),
            "neither the rules nor the dashboards use {name} any longer"
        );
        assert!(
            published.contains(name) || known.contains(name),
            "{name} was never published"
        );
    }

    // The rules evaluate cleanly on the real exposition (no matching errors, say): a
    // Prometheus scraping this exporter and loading the rule files reports every rule
    // healthy, and the recording rules give the scenario's numbers.
    let mut config = PrometheusConfig::scraping("poolprof-exporter", &exporter.address());
    config.rule_files = yaml_files(&deploy_dir().join("rules"), ".yml");
    let prom = Prometheus::start(&config);
    let expect = |promql: &str, want: f64| {
        until(promql, WAIT, || {
            let rows = prom.api().try_query(promql).map_err(|e| e.to_string())?;
            match rows.as_slice() {
                [row] if row.value == want => Ok(()),
                _ => Err(format!("{rows:?} (want one row of {want})")),
            }
        });
    };
    expect(":poolprof_gpu_up:count", 4.0);
    expect(":poolprof_gpus_allocated:count", 1.0);
    expect(
        &format!("uuid:poolprof_gpu_pod_info:count{{uuid=\"{GPU0}\"}}"),
        1.0,
    );
    expect(
        "workload:poolprof_workloads_per_gpu:max{workload=\"rules-train\"}",
        1.0,
    );
    // One kernel, long ago: launched at no rate now, but the series is there.
    expect(
        "count(workload_kernel:poolprof_kernel_launches:rate5m{workload=\"rules-train\"})",
        1.0,
    );
    // Every group has now run on the exporter's data (each runs every second); a rule
    // that cannot be evaluated on it is unhealthy from its first run on.
    std::thread::sleep(Duration::from_secs(3));
    let body = get_text(&format!("{}/api/v1/rules", prom.url()));
    let json: serde_json::Value = serde_json::from_str(&body).expect("/api/v1/rules is JSON");
    let loaded: Vec<&serde_json::Value> = json["data"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|group| group["rules"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(loaded.len(), rules().len(), "rules loaded: {body}");
    let unhealthy: Vec<String> = loaded
        .iter()
        .filter(|rule| rule["health"] != "ok")
        .map(|rule| format!("{}: {} {}", rule["name"], rule["health"], rule["lastError"]))
        .collect();
    assert!(
        unhealthy.is_empty(),
        "rules that do not evaluate on the exporter's series:\n{}",
        unhealthy.join("\n")
    );
    drop(sender);
}
