//! Co-location end to end: a simulated fleet with known answers (exporter/scenarios/
//! colocation.toml) backfilled into a real Prometheus, `poolprof-analyzer run --once`
//! pushing to a real Pushgateway, a real Prometheus scraping that, and the classes and
//! recommendations checked through PromQL as an operator would.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::pushgateway::Pushgateway;
use poolprof_e2e::wait;

/// End of the simulated history (2026-01-01T00:00:00Z).
const END: f64 = 1_767_225_600.0;

fn scenario() -> String {
    format!(
        "{}/../exporter/scenarios/colocation.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn simulate(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("history.om");
    let status = Command::new(workspace_bin("poolprof-exporter"))
        .args([
            "simulate",
            "--history",
            "2h",
            "--step",
            "15s",
            "--scenario",
            &scenario(),
        ])
        .arg("--end")
        .arg(END.to_string())
        .arg("--output")
        .arg(&out)
        .status()
        .expect("poolprof-exporter runs");
    assert!(
        status.success(),
        "poolprof-exporter simulate failed: {status}"
    );
    out
}

#[test]
fn a_known_good_and_a_known_bad_pair_reach_promql() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    backfill_openmetrics(&simulate(dir.path()), &data);
    let source = Prometheus::start_on_data_dir(&data, &PrometheusConfig::default());
    let gateway = Pushgateway::start();
    let scraper = Prometheus::start(
        &PrometheusConfig::default().with_pushgateway_job("pushgateway", &gateway.address()),
    );

    let out = Command::new(workspace_bin("poolprof-analyzer"))
        .args([
            "run",
            "--once",
            "--prometheus",
            &source.url(),
            "--push",
            &gateway.url(),
        ])
        .args([
            "--end",
            &END.to_string(),
            "--lookback",
            "2h",
            "--attempts",
            "2",
        ])
        .output()
        .expect("poolprof-analyzer runs");
    assert!(
        out.status.success(),
        "run --once: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let api = scraper.api();
    let one = |promql: &str| -> f64 {
        let rows = wait::until(promql, Duration::from_secs(60), || {
            let rows = api.try_query(promql).map_err(|e| e.to_string())?;
            if rows.len() == 1 {
                Ok(rows)
            } else {
                Err(format!("{} rows for {promql}", rows.len()))
            }
        });
        rows[0].value
    };
    // classes and types from GPM against the H100 roofline
    assert_eq!(
        one(r#"poolprof_workload_class{workload="etl",class="memory_bound"}"#),
        1.0
    );
    assert_eq!(
        one(r#"poolprof_workload_class{workload="big-train",class="compute_bound"}"#),
        1.0
    );
    assert_eq!(
        one(r#"poolprof_workload_type{workload="big-train",type="training"}"#),
        1.0
    );
    assert!(one(r#"poolprof_workload_arithmetic_intensity{workload="etl"}"#) < 20.0);
    // the good pair: two light inference services, good under the simplest mode
    assert_eq!(
        one(
            r#"poolprof_colocation_recommendation{workload_a="chat-a",workload_b="chat-b",recommendation="good"}"#
        ),
        1.0
    );
    assert!(
        one(
            r#"poolprof_colocation_score{workload_a="chat-a",workload_b="chat-b",mode="time_slicing"}"#
        ) > 0.9
    );
    // the bad pair: 60 + 48 GiB cannot share 80 GB in any mode
    assert_eq!(
        one(
            r#"poolprof_colocation_recommendation{workload_a="big-train",workload_b="etl",mode="none",recommendation="avoid"}"#
        ),
        1.0
    );
    assert_eq!(
        one(
            r#"poolprof_colocation_score{workload_a="big-train",workload_b="etl",mode="time_slicing"}"#
        ),
        0.0
    );
    // each pair once, both directions of progress
    assert_eq!(one(r#"count(poolprof_colocation_score{mode="mps"})"#), 6.0);
    assert_eq!(
        one(r#"count(poolprof_colocation_predicted_progress_ratio{mode="mps"})"#),
        12.0
    );
    assert_eq!(one("poolprof_analyzer_workloads_profiled"), 4.0);
}
