//! dashboards/: every Grafana dashboard is well formed (a `${datasource}` variable
//! every panel uses, only defined variables, unique ids), the provisioning files point
//! Grafana at the folder, and every panel's query, with its variables filled in from
//! the data as Grafana fills them (`label_values`), parses and returns at least one
//! series from a real Prometheus holding what the product publishes: two hours of the
//! local stack's simulated fleet (deploy/local/scenario.toml) backfilled, with the
//! kernel and pod families a real node adds, the recording rules of deploy/prometheus/
//! loaded, and `poolprof-analyzer run --once` pushing its results to a real Pushgateway
//! that Prometheus scrapes. That every metric name the dashboards use is one our
//! programs publish is checked with the rules' names in tests/prometheus_rules.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use poolprof_e2e::api::ApiClient;
use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::dashboards::{
    self, parse_label_values, substitute, used_variables, Target, Variable, BUILTINS,
};
use poolprof_e2e::history;
use poolprof_e2e::history_extras::{
    add_scrape_labels, append_kernels, append_pod, uuid_of, Kernel,
};
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::pushgateway::Pushgateway;
use poolprof_e2e::wait::until;

const WAIT: Duration = Duration::from_secs(60);
/// Variable combinations tried per dashboard at most (they multiply).
const MAX_COMBINATIONS: usize = 500;
/// The exporter's scrape labels in the backfilled history.
const JOB: &str = "poolprof-exporter";
const INSTANCE: &str = "gpu-node-1:9090";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

// --- Structure -----------------------------------------------------------------------

#[test]
fn every_dashboard_is_well_formed() {
    let mut problems = Vec::new();
    let mut uids = BTreeSet::new();
    let boards = dashboards::load_all();
    assert!(boards.len() >= 4, "fewer dashboards than the four planned");
    for board in &boards {
        let file = &board.file;
        let json = &board.json;
        let uid = json["uid"].as_str().unwrap_or_default();
        if uid.is_empty() || !uids.insert(uid.to_string()) {
            problems.push(format!("{file}: uid {uid:?} is empty or not unique"));
        }
        if json["title"].as_str().is_none_or(str::is_empty) {
            problems.push(format!("{file}: no title"));
        }
        if json["schemaVersion"].as_u64().is_none_or(|v| v < 36) {
            problems.push(format!(
                "{file}: schemaVersion {} (want >= 36)",
                json["schemaVersion"]
            ));
        }
        let vars = board.variables();
        if !vars
            .iter()
            .any(|v| v.name == "datasource" && v.kind == "datasource" && v.query == "prometheus")
        {
            problems.push(format!(
                "{file}: no `datasource` variable of type datasource (prometheus)"
            ));
        }
        let defined: BTreeSet<String> = vars
            .iter()
            .map(|v| v.name.clone())
            .chain(BUILTINS.iter().map(|(b, _)| b.to_string()))
            .collect();
        let mut ids = BTreeSet::new();
        for panel in board.panels() {
            let title = panel["title"].as_str().unwrap_or("?");
            if !ids.insert(panel["id"].as_u64()) {
                problems.push(format!(
                    "{file}: panel {title:?}: id {} not unique",
                    panel["id"]
                ));
            }
            for var in used_variables(title) {
                if !defined.contains(&var) {
                    problems.push(format!(
                        "{file}: panel {title:?}: title uses undefined ${var}"
                    ));
                }
            }
            if panel["type"] == "row" {
                continue;
            }
            if panel["datasource"]["uid"] != "${datasource}" {
                problems.push(format!(
                    "{file}: panel {title:?}: datasource is not ${{datasource}}"
                ));
            }
            let targets = panel["targets"].as_array().map_or(0, Vec::len);
            if targets == 0 {
                problems.push(format!("{file}: panel {title:?}: no query"));
            }
        }
        for target in board.targets() {
            for var in used_variables(&target.expr) {
                if !defined.contains(&var) {
                    problems.push(format!(
                        "{file}: panel {:?}: query uses undefined ${var}: {}",
                        target.panel, target.expr
                    ));
                }
            }
        }
        for var in &vars {
            if var.kind == "query" && parse_label_values(&var.query).is_none() {
                problems.push(format!(
                    "{file}: variable {}: query is not label_values(SELECTOR, LABEL): {}",
                    var.name, var.query
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn provisioning_points_grafana_at_the_folder() {
    let dir = dashboards::dir().join("provisioning");
    let read = |path: &Path| -> serde_yaml_ng::Value {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let providers = read(&dir.join("dashboards/poolprof.yaml"));
    let provider = &providers["providers"][0];
    assert_eq!(provider["type"].as_str(), Some("file"), "{providers:?}");
    assert_eq!(
        provider["options"]["path"].as_str(),
        Some("${POOLPROF_DASHBOARDS_DIR}"),
        "{providers:?}"
    );
    let sources = read(&dir.join("datasources/poolprof.yaml"));
    let source = &sources["datasources"][0];
    assert_eq!(source["type"].as_str(), Some("prometheus"), "{sources:?}");
    assert_eq!(
        source["url"].as_str(),
        Some("${POOLPROF_PROMETHEUS_URL}"),
        "{sources:?}"
    );
}

// --- Every query against a real Prometheus ------------------------------------------------

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A Prometheus holding the fleet's last two hours (ending now, so that the recording
/// rules and `rate()` see it) and the analyzer's results, scraped from a Pushgateway.
/// Returns it with the guards that must live as long.
fn filled_prometheus(dir: &Path) -> (Prometheus, Pushgateway) {
    let end = (now() / 15.0).floor() * 15.0;
    let scenario = repo().join("deploy/local/scenario.toml");
    let history = history::simulate(
        dir,
        "2h",
        "15s",
        end,
        &["--scenario", scenario.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&history).unwrap();
    let span = (end, 7200.0, 15.0);
    let chat_a = [
        Kernel {
            name: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
            launches_per_second: 100.0,
            seconds_per_launch: 2e-4,
        },
        Kernel {
            name: "native::vectorized_elementwise_kernel",
            launches_per_second: 300.0,
            seconds_per_launch: 1e-5,
        },
    ];
    append_kernels(
        &history,
        &[(&uuid_of(&text, "chat-a"), "chat-a", &chat_a)],
        span,
    );
    append_pod(
        &history,
        &uuid_of(&text, "big-train"),
        ("ml", "big-train-0", "trainer"),
        span,
    );
    add_scrape_labels(&history, JOB, INSTANCE);
    let data = dir.join("data");
    backfill_openmetrics(&history, &data);

    let gateway = Pushgateway::start();
    let mut config =
        PrometheusConfig::default().with_pushgateway_job("pushgateway", &gateway.address());
    config.rule_files = vec![
        repo().join("deploy/prometheus/rules/poolprof-recording.yml"),
        repo().join("deploy/prometheus/rules/poolprof-alerts.yml"),
    ];
    let prom = Prometheus::start_on_data_dir(&data, &config);

    let out = Command::new(workspace_bin("poolprof-analyzer"))
        .args([
            "run",
            "--once",
            "--prometheus",
            &prom.url(),
            "--push",
            &gateway.url(),
        ])
        .args([
            "--end",
            &end.to_string(),
            "--lookback",
            "2h",
            "--attempts",
            "2",
        ])
        .output()
        .expect("poolprof-analyzer runs");
    assert!(
        out.status.success(),
        "poolprof-analyzer run --once exited {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The results scraped, and the recording rules evaluated on the history.
    for promql in [
        "poolprof_colocation_score",
        "poolprof_analyzer_last_success_timestamp_seconds",
        "uuid:poolprof_gpu_busy_ratio:avg_over_time5m",
        "workload_kernel:poolprof_kernel_duration_seconds:ratio_rate5m",
        "uuid:poolprof_workloads:count",
    ] {
        until(promql, WAIT, || match prom.api().try_query(promql) {
            Ok(rows) if !rows.is_empty() => Ok(()),
            Ok(_) => Err("no series yet".to_string()),
            Err(e) => Err(e.to_string()),
        });
    }
    (prom, gateway)
}

/// The values Grafana offers for `var` once the variables before it are `chosen`:
/// "All" first where offered, then the label values, sorted.
fn options(api: &ApiClient, var: &Variable, chosen: &BTreeMap<String, String>) -> Vec<String> {
    let mut values: Vec<String> = var.all_value.iter().cloned().collect();
    match var.kind.as_str() {
        "custom" => values.extend(var.query.split(',').map(|v| v.trim().to_string())),
        "query" => {
            let (selector, label) = parse_label_values(&var.query).unwrap_or_else(|| {
                panic!("variable {}: not label_values: {}", var.name, var.query)
            });
            let found: BTreeSet<String> = api
                .series(&substitute(&selector, chosen))
                .into_iter()
                .filter_map(|labels| labels.get(&label).cloned())
                .collect();
            values.extend(found);
        }
        _ => {}
    }
    values
}

/// Every combination of the dashboard's variables, Grafana's default (the first of each)
/// first; a variable whose query finds nothing ends that branch.
fn combinations(api: &ApiClient, vars: &[Variable]) -> Vec<BTreeMap<String, String>> {
    fn expand(
        api: &ApiClient,
        vars: &[Variable],
        chosen: BTreeMap<String, String>,
        out: &mut Vec<BTreeMap<String, String>>,
    ) {
        if out.len() >= MAX_COMBINATIONS {
            return;
        }
        let Some((var, rest)) = vars.split_first() else {
            out.push(chosen);
            return;
        };
        if var.kind == "datasource" {
            return expand(api, rest, chosen, out);
        }
        for value in options(api, var, &chosen) {
            let mut next = chosen.clone();
            next.insert(var.name.clone(), value);
            expand(api, rest, next, out);
        }
    }
    let mut out = Vec::new();
    expand(api, vars, BTreeMap::new(), &mut out);
    out
}

/// Runs `target` as Grafana would (instant at now, or over the last 30 minutes) for
/// each distinct substitution; `Ok` on the first that returns a series.
fn check_target(
    api: &ApiClient,
    target: &Target,
    combos: &[BTreeMap<String, String>],
) -> Result<(), String> {
    let mut tried = BTreeSet::new();
    for combo in combos {
        let expr = substitute(&target.expr, combo);
        if !tried.insert(expr.clone()) {
            continue;
        }
        let series = if target.instant {
            api.try_query(&expr).map(|rows| rows.len())
        } else {
            let end = now();
            api.try_query_range(&expr, end - 1800.0, end, 15.0)
                .map(|rows| rows.len())
        };
        match series {
            Ok(0) => {}
            Ok(_) => return Ok(()),
            Err(e) => return Err(format!("{expr}\n    fails: {e}")),
        }
    }
    let first = tried.iter().next().cloned().unwrap_or_default();
    Err(format!(
        "{first}\n    returns no series for any of the {} substitutions of its variables",
        tried.len()
    ))
}

#[test]
fn every_panel_query_returns_series_from_what_the_product_publishes() {
    let dir = tempfile::tempdir().unwrap();
    let (prom, _gateway) = filled_prometheus(dir.path());
    let api = prom.api();
    let mut failures = Vec::new();
    let mut checked = 0;
    for board in dashboards::load_all() {
        let combos = combinations(api, &board.variables());
        assert!(
            !combos.is_empty(),
            "{}: no combination of its variables has values: {:?}",
            board.file,
            board.variables()
        );
        for target in board.targets() {
            checked += 1;
            if let Err(why) = check_target(api, &target, &combos) {
                failures.push(format!(
                    "{}: panel {:?} ({}), query {}: {why}",
                    board.file, target.panel, target.ref_id, target.expr
                ));
            }
        }
    }
    assert!(checked >= 40, "only {checked} queries found");
    assert!(
        failures.is_empty(),
        "{} of {checked} dashboard queries failed:\n{}\n--- prometheus log ---\n{}",
        failures.len(),
        failures.join("\n"),
        prom.log_tail()
    );
}
