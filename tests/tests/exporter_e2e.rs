//! End to end: a real Prometheus scrapes `poolprof-exporter` in sim mode every second,
//! and the test checks through Prometheus's query API what an operator would check:
//! the target is up, every device metric of DESIGN.md is there with its labels, a
//! failing GPU reports `poolprof_gpu_up 0` while the others stay up, and `promtool
//! check metrics` has nothing to say about the exposition.
//!
//! Needs `cargo build --workspace --bins` first (tests/run.sh does it).

use std::collections::BTreeSet;
use std::time::Duration;

use poolprof_e2e::api::{ApiClient, Sample};
use poolprof_e2e::exporter::Exporter;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::{promtool, wait};

/// Scrapes to see before asserting (the issue's "after three scrapes").
const SCRAPES: usize = 3;

/// How long a condition that depends on the simulated clock may take to show.
const SIM_WAIT: Duration = Duration::from_secs(60);

/// How long the coverage check retries: a GPU may fail between two queries.
const COVERAGE_WAIT: Duration = Duration::from_secs(15);

/// Which GPUs must carry a metric.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scope {
    /// Every GPU that is up, MIG-enabled ones included.
    Every,
    /// Every GPU that is up with MIG off: with MIG on, NVML reports utilization and
    /// GPM per instance (`poolprof_mig_*`), not per GPU.
    EveryWhole,
    /// At least one GPU (metrics that depend on the workload, e.g. processes).
    AtLeastOne,
}

/// One metric the exporter must publish: its name, the labels beside `gpu` and `uuid`
/// that every series carries, and which GPUs carry it.
struct Expected {
    name: &'static str,
    labels: &'static [&'static str],
    scope: Scope,
}

const fn every(name: &'static str, labels: &'static [&'static str]) -> Expected {
    Expected {
        name,
        labels,
        scope: Scope::Every,
    }
}

const fn whole(name: &'static str, labels: &'static [&'static str]) -> Expected {
    Expected {
        name,
        labels,
        scope: Scope::EveryWhole,
    }
}

const fn some(name: &'static str, labels: &'static [&'static str]) -> Expected {
    Expected {
        name,
        labels,
        scope: Scope::AtLeastOne,
    }
}

/// DESIGN.md's device, process and MIG metrics, as the collectors name them.
const DEVICE_METRICS: &[Expected] = &[
    every("poolprof_gpu_up", &[]),
    every(
        "poolprof_gpu_info",
        &["name", "pci_bus_id", "driver_version", "cuda_version"],
    ),
    whole("poolprof_gpu_utilization_ratio", &[]),
    whole("poolprof_gpu_memory_controller_utilization_ratio", &[]),
    every("poolprof_gpu_memory_used_bytes", &[]),
    every("poolprof_gpu_memory_free_bytes", &[]),
    every("poolprof_gpu_memory_total_bytes", &[]),
    every("poolprof_gpu_memory_reserved_bytes", &[]),
    every("poolprof_gpu_power_usage_watts", &[]),
    every("poolprof_gpu_power_limit_watts", &[]),
    every("poolprof_gpu_energy_joules_total", &[]),
    every("poolprof_gpu_temperature_celsius", &["sensor"]),
    every("poolprof_gpu_clock_hz", &["clock"]),
    every("poolprof_gpu_pcie_replays_total", &[]),
    every("poolprof_gpu_pcie_link_generation", &[]),
    every("poolprof_gpu_pcie_link_width", &[]),
    every("poolprof_gpu_clock_event_active", &["reason"]),
    every("poolprof_gpu_ecc_errors_total", &["kind"]),
    every("poolprof_gpu_remapped_rows_total", &["cause"]),
    every("poolprof_gpu_row_remap_pending", &[]),
    every("poolprof_gpu_row_remap_failed", &[]),
    every("poolprof_gpu_nvlink_active", &["link"]),
    every("poolprof_gpu_nvlink_bytes_total", &["link", "direction"]),
    whole("poolprof_gpu_encoder_utilization_ratio", &[]),
    whole("poolprof_gpu_decoder_utilization_ratio", &[]),
    whole("poolprof_gpu_sm_active_ratio", &[]),
    whole("poolprof_gpu_sm_occupancy_ratio", &[]),
    whole("poolprof_gpu_graphics_engine_active_ratio", &[]),
    whole("poolprof_gpu_tensor_any_active_ratio", &[]),
    whole("poolprof_gpu_tensor_active_ratio", &["kind"]),
    whole("poolprof_gpu_dram_active_ratio", &[]),
    whole("poolprof_gpu_pipe_active_ratio", &["pipe"]),
    whole("poolprof_gpu_pcie_bytes_per_second", &["direction"]),
    whole("poolprof_gpu_nvlink_bytes_per_second", &["direction"]),
    some("poolprof_process_gpu_memory_bytes", &["pid", "workload"]),
    some(
        "poolprof_process_sm_utilization_ratio",
        &["pid", "workload"],
    ),
    some(
        "poolprof_mig_memory_used_bytes",
        &["gpu_instance", "mig_profile", "mig_uuid"],
    ),
    some(
        "poolprof_mig_sm_active_ratio",
        &["gpu_instance", "mig_profile", "mig_uuid"],
    ),
];

/// A scenario with a steady training GPU and one that falls off the bus a few seconds
/// in and answers again later (times are seconds since the exporter started).
const FAIL_AND_RECOVER: &str = r#"
[[gpus]]
kind = "training"
seed = 7
period_seconds = 60
duty = 0.8
memory_used_gib = 20
processes = [{ pid = 5001, name = "python", workload = "e2e-train" }]

[[gpus]]
kind = "failing"
seed = 8
period_seconds = 60
duty = 0.5
memory_used_gib = 10
fail_at_seconds = 15
recover_at_seconds = 27
processes = [{ pid = 5002, name = "python", workload = "e2e-doomed" }]
"#;

#[test]
fn prometheus_sees_every_device_metric_of_six_simulated_gpus() {
    let exporter = Exporter::start(&["--simulate", "6", "--collect-interval", "1s"]);
    let prom = Prometheus::start(&PrometheusConfig::scraping("poolprof", &exporter.address()));
    prom.wait_for_scrapes("poolprof", SCRAPES);
    let api = prom.api();

    assert_eq!(
        values(api, "up{job=\"poolprof\"}"),
        vec![1.0],
        "Prometheus cannot scrape the exporter; targets: {:?}",
        prom.targets()
    );
    let build = api.query("poolprof_exporter_build_info{job=\"poolprof\"}");
    assert_eq!(build.len(), 1, "{build:?}");
    assert_eq!(build[0].label("backend"), "sim");
    assert!(!build[0].label("version").is_empty(), "{build:?}");
    assert_collectors_healthy(api, "poolprof");

    // poolprof_gpu_up, not _info: the built-in failing GPU may already be down.
    let gpus = api.query("poolprof_gpu_up{job=\"poolprof\"}");
    assert_eq!(gpus.len(), 6, "six simulated GPUs: {gpus:?}");
    let uuids: BTreeSet<&str> = gpus.iter().map(|g| g.label("uuid")).collect();
    assert_eq!(uuids.len(), 6, "GPU uuids are distinct: {uuids:?}");

    wait::until("every device metric on its GPUs", COVERAGE_WAIT, || {
        coverage(api, "poolprof")
    });

    let body = exporter.metrics_text();
    let lint = promtool::check_metrics(&body);
    assert!(lint.is_clean(), "promtool check metrics: {}", lint.output);
    // The exporter's own process, as every Prometheus client library reports it.
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
    ] {
        let v = values(api, &format!("{name}{{job=\"poolprof\"}}"));
        assert!(v.len() == 1 && v[0] >= 0.0, "{name}: {v:?}");
    }
    assert!(values(api, "process_resident_memory_bytes{job=\"poolprof\"}")[0] > 1e6);
}

#[test]
fn a_failing_gpu_goes_down_alone_and_comes_back_with_its_xid() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("fail-and-recover.toml");
    std::fs::write(&scenario, FAIL_AND_RECOVER).unwrap();
    let exporter = Exporter::start(&[
        "--scenario",
        scenario.to_str().expect("temp paths are UTF-8"),
        "--collect-interval",
        "1s",
    ]);
    let prom = Prometheus::start(&PrometheusConfig::scraping("sim", &exporter.address()));
    prom.wait_for_scrapes("sim", SCRAPES);
    let api = prom.api();

    let train = single_uuid(
        api,
        "poolprof_process_gpu_memory_bytes{workload=\"e2e-train\"}",
    );
    let doomed = single_uuid(api, "poolprof_gpu_up{gpu=\"1\"}");
    assert_ne!(train, doomed);

    // Down: up is 0 for the failing GPU only, and its other series are gone.
    wait::until(
        "the failing GPU's poolprof_gpu_up to be 0",
        SIM_WAIT,
        || match gpu_up(api, &doomed) {
            Some(0.0) => Ok(()),
            other => Err(format!("poolprof_gpu_up = {other:?}")),
        },
    );
    assert_eq!(
        values(api, "max_over_time(poolprof_gpu_up{gpu=\"1\"}[5m])"),
        vec![1.0],
        "the failing GPU was up before it failed"
    );
    assert_eq!(gpu_up(api, &train), Some(1.0), "the healthy GPU stays up");
    assert_eq!(
        values(api, "up{job=\"sim\"}"),
        vec![1.0],
        "the scrape survives"
    );
    // While down its readings are gone; what names it and what took it down stay.
    let leftovers = api.query(&format!(
        "{{uuid=\"{doomed}\", __name__!~\"poolprof_gpu_up|poolprof_gpu_info|poolprof_gpu_xid_errors_total\"}}"
    ));
    assert!(
        leftovers.is_empty(),
        "a GPU that is down keeps no readings: {leftovers:?}"
    );
    assert_eq!(
        values(api, &format!("poolprof_gpu_info{{uuid=\"{doomed}\"}}")),
        vec![1.0],
        "its identity stays while it is down"
    );
    assert!(
        !api.query(&format!(
            "poolprof_gpu_utilization_ratio{{uuid=\"{train}\"}}"
        ))
        .is_empty(),
        "the healthy GPU's metrics are still served"
    );
    let lint = promtool::check_metrics(&exporter.metrics_text());
    assert!(
        lint.is_clean(),
        "promtool check metrics (GPU down): {}",
        lint.output
    );

    // Back: up is 1 again, its series return, and the Xid 79 it raised is counted once.
    wait::until(
        "the failing GPU to answer again",
        SIM_WAIT,
        || match gpu_up(api, &doomed) {
            Some(1.0) => Ok(()),
            other => Err(format!("poolprof_gpu_up = {other:?}")),
        },
    );
    let xid = wait::until("the Xid 79 counter", SIM_WAIT, || {
        let rows = api.query(&format!(
            "poolprof_gpu_xid_errors_total{{uuid=\"{doomed}\"}} > 0"
        ));
        if rows.is_empty() {
            Err("no poolprof_gpu_xid_errors_total series".to_string())
        } else {
            Ok(rows)
        }
    });
    assert_eq!(xid.len(), 1, "{xid:?}");
    assert_eq!(xid[0].label("xid"), "79");
    assert_eq!(xid[0].label("gpu"), "1");
    assert_eq!(xid[0].value, 1.0);
    // born at 0, so the first event is an increase PromQL sees
    let rose = values(
        api,
        &format!("increase(poolprof_gpu_xid_errors_total{{uuid=\"{doomed}\",xid=\"79\"}}[10m])"),
    );
    assert!(
        rose.len() == 1 && rose[0] > 0.5,
        "increase() of the first Xid 79: {rose:?}"
    );
    assert!(
        !api.query(&format!(
            "poolprof_gpu_memory_used_bytes{{uuid=\"{doomed}\"}}"
        ))
        .is_empty(),
        "the recovered GPU's series are back"
    );
}

/// Checks every [`DEVICE_METRICS`] entry against the GPUs that are up now; the error
/// lists every problem found.
fn coverage(api: &ApiClient, job: &str) -> Result<(), String> {
    let up: BTreeSet<String> = api
        .query(&format!("poolprof_gpu_up{{job=\"{job}\"}} == 1"))
        .iter()
        .map(|row| row.label("uuid").to_string())
        .collect();
    let mig: BTreeSet<String> = api
        .query(&format!("poolprof_mig_memory_used_bytes{{job=\"{job}\"}}"))
        .iter()
        .map(|row| row.label("uuid").to_string())
        .collect();
    let mut problems = Vec::new();
    for expected in DEVICE_METRICS {
        let rows = api.query(&format!("{}{{job=\"{job}\"}}", expected.name));
        problems.extend(check_metric(expected, &rows, &up, &mig));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("\n  {}", problems.join("\n  ")))
    }
}

/// What is wrong with one metric's rows: absent, on too few GPUs, missing labels, or a
/// value outside its unit's range.
fn check_metric(
    expected: &Expected,
    rows: &[Sample],
    up: &BTreeSet<String>,
    mig: &BTreeSet<String>,
) -> Vec<String> {
    let name = expected.name;
    if rows.is_empty() {
        return vec![format!("{name}: absent")];
    }
    let mut problems = Vec::new();
    for row in rows {
        for label in ["gpu", "uuid"].iter().chain(expected.labels) {
            if row.label(label).is_empty() {
                problems.push(format!(
                    "{name}: a series without label {label}: {:?}",
                    row.labels
                ));
            }
        }
        if !row.label("uuid").starts_with("GPU-") {
            problems.push(format!("{name}: uuid is not a GPU uuid: {:?}", row.labels));
        }
        if let Some(why) = out_of_range(name, row.value) {
            problems.push(format!("{name}{:?} = {}: {why}", row.labels, row.value));
        }
    }
    let carried: BTreeSet<&str> = rows.iter().map(|row| row.label("uuid")).collect();
    let required: Vec<&String> = match expected.scope {
        Scope::Every => up.iter().collect(),
        Scope::EveryWhole => up.difference(mig).collect(),
        Scope::AtLeastOne => Vec::new(),
    };
    let missing: Vec<&&String> = required
        .iter()
        .filter(|uuid| !carried.contains(uuid.as_str()))
        .collect();
    if !missing.is_empty() {
        problems.push(format!("{name}: absent on GPUs that are up: {missing:?}"));
    }
    problems
}

/// DESIGN.md's units: ratios in 0–1, counts, bytes, watts and hertz never negative.
fn out_of_range(name: &str, value: f64) -> Option<&'static str> {
    if !value.is_finite() {
        return Some("not finite");
    }
    if name.ends_with("_ratio") && !(0.0..=1.0).contains(&value) {
        return Some("a ratio outside 0–1");
    }
    let non_negative = ["_bytes", "_total", "_watts", "_hz", "_second", "_seconds"];
    if non_negative.iter().any(|s| name.ends_with(s)) && value < 0.0 {
        return Some("negative");
    }
    None
}

/// Every collector reports success 1 and a duration.
fn assert_collectors_healthy(api: &ApiClient, job: &str) {
    let success = api.query(&format!(
        "poolprof_exporter_collector_success{{job=\"{job}\"}}"
    ));
    assert!(
        !success.is_empty(),
        "no poolprof_exporter_collector_success"
    );
    let failed: Vec<&str> = success
        .iter()
        .filter(|row| row.value != 1.0)
        .map(|row| row.label("collector"))
        .collect();
    assert!(failed.is_empty(), "collectors failing: {failed:?}");
    let durations = api.query(&format!(
        "poolprof_exporter_collector_duration_seconds{{job=\"{job}\"}}"
    ));
    let named = |rows: &[Sample]| -> BTreeSet<String> {
        rows.iter()
            .map(|r| r.label("collector").to_string())
            .collect()
    };
    assert_eq!(
        named(&success),
        named(&durations),
        "a duration per collector"
    );
    assert!(
        durations.iter().all(|d| d.value >= 0.0 && d.value < 1.0),
        "collection takes well under the 1 s interval: {durations:?}"
    );
}

fn values(api: &ApiClient, promql: &str) -> Vec<f64> {
    api.query(promql).iter().map(|row| row.value).collect()
}

fn gpu_up(api: &ApiClient, uuid: &str) -> Option<f64> {
    let rows = api.query(&format!("poolprof_gpu_up{{uuid=\"{uuid}\"}}"));
    rows.first().map(|row| row.value)
}

fn single_uuid(api: &ApiClient, promql: &str) -> String {
    let rows = api.query(promql);
    assert_eq!(rows.len(), 1, "{promql}: {rows:?}");
    rows[0].label("uuid").to_string()
}

/// The checks above must be able to fail: a metric that is absent, missing on a GPU,
/// without a label or out of range is reported.
#[test]
fn coverage_check_reports_what_is_missing() {
    let row = |uuid: &str, value: f64| Sample {
        labels: [("gpu", "0"), ("uuid", uuid), ("clock", "sm")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
    };
    let up: BTreeSet<String> = ["GPU-a", "GPU-b"].map(String::from).into();
    let mig: BTreeSet<String> = ["GPU-b"].map(String::from).into();
    let clock = every("poolprof_gpu_clock_hz", &["clock"]);
    let ratio = whole("poolprof_gpu_sm_active_ratio", &["kind"]);

    assert!(check_metric(&clock, &[row("GPU-a", 1e9), row("GPU-b", 1e9)], &up, &mig).is_empty());
    assert_eq!(
        check_metric(&clock, &[], &up, &mig),
        vec!["poolprof_gpu_clock_hz: absent"]
    );
    let one_missing = check_metric(&clock, &[row("GPU-a", 1e9)], &up, &mig);
    assert!(
        one_missing[0].contains("absent on GPUs that are up: [\"GPU-b\"]"),
        "{one_missing:?}"
    );
    // MIG GPUs need not carry whole-GPU metrics, but labels and ranges still count.
    let problems = check_metric(&ratio, &[row("GPU-a", 1.5)], &up, &mig);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("without label kind"), "{problems:?}");
    assert!(problems[1].contains("outside 0–1"), "{problems:?}");
    assert!(!check_metric(&clock, &[row("not-a-uuid", 1e9)], &up, &mig).is_empty());
}
