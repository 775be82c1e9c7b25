//! poolprof-analyzer end to end: simulated history backfilled into a real Prometheus
//! (and imported into a real VictoriaMetrics), `run --once` pushing to a real
//! Pushgateway, and a real Prometheus scraping that with `honor_labels: true`. The
//! results are checked through PromQL, as an operator would.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::pushgateway::Pushgateway;
use poolprof_e2e::victoria::VictoriaMetrics;
use poolprof_e2e::{api::ApiClient, history, wait};

/// End of the simulated history (2026-01-01T00:00:00Z): fixed, so runs are reproducible.
const END: f64 = 1_767_225_600.0;
/// The training workload's period in the sim's built-in scenario (docs/scenario.md).
const TRAINING_PERIOD_S: f64 = 300.0;
const TRAINING_WORKLOAD: &str = "llm-pretrain";

/// Six hours at 15 s of the first three built-in GPUs: training, inference, idle.
fn simulate_history(dir: &Path) -> PathBuf {
    history::simulate(dir, "6h", "15s", END, &["--simulate", "3"])
}

/// The uuid of GPU `index`, from `poolprof_gpu_info` at the end of the history.
fn uuid_of(api: &ApiClient, index: u32) -> String {
    let rows = api.query_at(&format!("poolprof_gpu_info{{gpu=\"{index}\"}}"), END);
    assert_eq!(rows.len(), 1, "poolprof_gpu_info for GPU {index}: {rows:?}");
    rows[0].label("uuid").to_string()
}

/// Runs `poolprof-analyzer run --once` against `source`, pushing to `push`.
fn run_once(source: &str, push: &str, extra: &[&str]) {
    let out = Command::new(workspace_bin("poolprof-analyzer"))
        .args(["run", "--once", "--prometheus", source, "--push", push])
        .args(["--end", &END.to_string(), "--attempts", "2"])
        .args(extra)
        .output()
        .expect("poolprof-analyzer runs");
    assert!(
        out.status.success(),
        "poolprof-analyzer run --once {extra:?} exited {}:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Checks the pushed results as Prometheus scraped them from the Pushgateway.
fn assert_results(scraper: &Prometheus, training_uuid: &str, idle_uuid: &str) {
    let api = scraper.api();
    let group = r#"job="poolprof-analyzer",instance="0-of-1""#;
    let period_query = format!(
        r#"poolprof_workload_period_seconds{{{group},workload="{TRAINING_WORKLOAD}",signal="sm_active",rank="1"}}"#
    );
    let rows = wait::until("pushed results scraped", Duration::from_secs(60), || {
        let rows = api.try_query(&period_query).map_err(|e| e.to_string())?;
        if rows.is_empty() {
            Err(format!("no rows for {period_query}"))
        } else {
            Ok(rows)
        }
    });
    let found = rows[0].value;
    let error = (found - TRAINING_PERIOD_S).abs() / TRAINING_PERIOD_S;
    assert!(
        error < 0.02,
        "training period {found} s is not within 2% of {TRAINING_PERIOD_S} s"
    );

    // The same GPU, by uuid.
    let by_uuid = api.query(&format!(
        r#"poolprof_workload_period_seconds{{{group},uuid="{training_uuid}",signal="sm_active",rank="1"}}"#
    ));
    assert_eq!(by_uuid.len(), 1, "{by_uuid:?}");
    assert!((by_uuid[0].value - TRAINING_PERIOD_S).abs() / TRAINING_PERIOD_S < 0.02);

    // The idle GPU was analyzed (it has forecasts) yet has no period on any signal.
    let idle_forecast = api.query(&format!(
        r#"poolprof_forecast{{{group},uuid="{idle_uuid}",signal="sm_active",horizon="1h",bound="point"}}"#
    ));
    assert_eq!(
        idle_forecast.len(),
        1,
        "the idle GPU must be analyzed: {idle_forecast:?}"
    );
    let idle_periods = api.query(&format!(
        r#"poolprof_workload_period_seconds{{uuid="{idle_uuid}"}}"#
    ));
    assert!(
        idle_periods.is_empty(),
        "the idle GPU has no period, got {idle_periods:?}"
    );

    let analyzed = api.query(&format!("poolprof_analyzer_series_analyzed{{{group}}}"));
    assert!(analyzed[0].value >= 6.0, "{analyzed:?}");
    let dropped = api.query(&format!(
        r#"poolprof_analyzer_samples_dropped{{{group},reason="nan"}}"#
    ));
    assert_eq!(dropped[0].value, 0.0);
}

#[test]
fn prometheus_backfill_to_pushgateway_finds_the_training_period() {
    let dir = tempfile::tempdir().unwrap();
    let history = simulate_history(dir.path());
    let data = dir.path().join("data");
    backfill_openmetrics(&history, &data);
    let source = Prometheus::start_on_data_dir(&data, &PrometheusConfig::default());
    let gateway = Pushgateway::start();
    let scraper = Prometheus::start(
        &PrometheusConfig::default().with_pushgateway_job("pushgateway", &gateway.address()),
    );

    run_once(&source.url(), &gateway.url(), &[]);

    let training = uuid_of(source.api(), 0);
    let idle = uuid_of(source.api(), 2);
    assert_results(&scraper, &training, &idle);

    // Two cron jobs sharing the fleet: each GPU lands in exactly one shard's group.
    run_once(&source.url(), &gateway.url(), &["--shard", "0/2"]);
    run_once(&source.url(), &gateway.url(), &["--shard", "1/2"]);
    let per_gpu = r#"count by (uuid) (poolprof_forecast{job="poolprof-analyzer",instance=~".-of-2",uuid!="",signal="sm_active",horizon="1h",bound="point"})"#;
    let rows = wait::until("both shards scraped", Duration::from_secs(60), || {
        let rows = scraper
            .api()
            .try_query(per_gpu)
            .map_err(|e| e.to_string())?;
        let groups = scraper
            .api()
            .try_query(r#"count(push_time_seconds{job="poolprof-analyzer",instance=~".-of-2"})"#)
            .map_err(|e| e.to_string())?;
        match groups.first() {
            Some(g) if g.value == 2.0 && rows.len() == 3 => Ok(rows),
            _ => Err(format!("groups {groups:?}, per GPU {rows:?}")),
        }
    });
    assert!(
        rows.iter().all(|r| r.value == 1.0),
        "a GPU analyzed by both shards: {rows:?}"
    );
}

#[test]
fn victoriametrics_import_to_pushgateway_finds_the_training_period() {
    let dir = tempfile::tempdir().unwrap();
    let history = std::fs::read_to_string(simulate_history(dir.path())).unwrap();
    let vm = VictoriaMetrics::start();
    // VictoriaMetrics imports the Prometheus text format with millisecond timestamps;
    // only the families the default signals read are sent, in bounded batches.
    let mut batch = String::new();
    for line in history.lines() {
        if line.starts_with('#')
            || !(line.starts_with("poolprof_gpu_") || line.starts_with("poolprof_process_"))
        {
            continue;
        }
        let (sample, ts) = line.rsplit_once(' ').expect("samples carry timestamps");
        let ms = (ts.parse::<f64>().expect("numeric timestamp") * 1000.0).round() as i64;
        batch.push_str(&format!("{sample} {ms}\n"));
        if batch.len() > 8 << 20 {
            vm.import_prometheus(&batch);
            batch.clear();
        }
    }
    vm.import_prometheus(&batch);
    let gateway = Pushgateway::start();
    let scraper = Prometheus::start(
        &PrometheusConfig::default().with_pushgateway_job("pushgateway", &gateway.address()),
    );

    run_once(&vm.url(), &gateway.url(), &[]);

    let training = uuid_of(vm.api(), 0);
    let idle = uuid_of(vm.api(), 2);
    assert_results(&scraper, &training, &idle);
}

#[test]
fn the_example_prometheus_config_is_valid_and_honors_pushed_labels() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../deploy/prometheus/prometheus.yml"
    );
    let out = Command::new(poolprof_e2e::promtool::PROMTOOL_BIN)
        .args(["check", "config", path])
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(path).unwrap();
    let job = text
        .split("- job_name: pushgateway")
        .nth(1)
        .expect("a pushgateway job");
    let job = job.split("- job_name:").next().unwrap();
    assert!(job.contains("honor_labels: true"), "{job}");
}
