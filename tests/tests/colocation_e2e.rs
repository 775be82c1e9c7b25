//! Co-location end to end: a simulated fleet with known answers (exporter/scenarios/
//! colocation.toml) backfilled into a real Prometheus, `poolprof-analyzer run --once`
//! pushing to a real Pushgateway, a real Prometheus scraping that, and the classes and
//! recommendations checked through PromQL as an operator would.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use poolprof_e2e::analyzer_cli::analyzer;
use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::history;
use poolprof_e2e::ports::free_port;
use poolprof_e2e::process::ChildGuard;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::pushgateway::Pushgateway;
use poolprof_e2e::server::http_client;
use poolprof_e2e::wait;

/// End of the simulated history (2026-01-01T00:00:00Z).
const END: f64 = 1_767_225_600.0;

fn scenario() -> String {
    format!(
        "{}/../exporter/scenarios/colocation.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// A Prometheus holding the scenario's two hours.
fn source(dir: &Path) -> Prometheus {
    source_with(dir, |_| {})
}

/// A Prometheus holding the scenario's two hours and what `add` appends to them.
fn source_with(dir: &Path, add: impl FnOnce(&Path)) -> Prometheus {
    let data = dir.join("data");
    let scenario = scenario();
    let history = history::simulate(dir, "2h", "15s", END, &["--scenario", &scenario]);
    add(&history);
    backfill_openmetrics(&history, &data);
    Prometheus::start_on_data_dir(&data, &PrometheusConfig::default())
}

/// What the exporter publishes for an injected process of `chat-a` (the injection
/// library cannot run here; tests/tests/kernels_e2e.rs drives the real exporter with
/// its protocol): two kernels with their launch shapes over the two hours, in the
/// exporter's OpenMetrics families, appended to the simulated history.
fn append_chat_a_kernels(history: &Path) {
    let text = std::fs::read_to_string(history).unwrap();
    let body = text
        .trim_end()
        .strip_suffix("# EOF")
        .expect("OpenMetrics ends with # EOF");
    let mut out = String::from(body.trim_end());
    let uuid = {
        let line = text
            .lines()
            .find(|l| {
                l.starts_with("poolprof_process_sm_utilization_ratio") && l.contains("chat-a")
            })
            .expect("chat-a in the history");
        let at = line.find("uuid=\"").unwrap() + 6;
        line[at..at + line[at..].find('"').unwrap()].to_string()
    };
    // (kernel, launches per second, seconds per launch, blocks, threads, registers, shared)
    let kernels = [
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n",
            100.0,
            2e-4,
            66,
            384,
            168,
            200 * 1024,
        ),
        (
            "native::vectorized_elementwise_kernel",
            300.0,
            1e-5,
            4096,
            128,
            32,
            0,
        ),
    ];
    let steps: Vec<f64> = (0..=480)
        .map(|i| END - 7200.0 + 15.0 * f64::from(i))
        .collect();
    let labels = |k: &str| format!(r#"uuid="{uuid}",workload="chat-a",kernel="{k}""#);
    for (family, kind) in [
        ("poolprof_kernel_launches", "counter"),
        ("poolprof_kernel_duration_seconds", "counter"),
        ("poolprof_kernel_grid_blocks", "gauge"),
        ("poolprof_kernel_block_threads", "gauge"),
        ("poolprof_kernel_registers_per_thread", "gauge"),
        ("poolprof_kernel_shared_memory_per_block_bytes", "gauge"),
    ] {
        out.push_str(&format!("\n# TYPE {family} {kind}"));
        for (k, rate, secs, blocks, threads, regs, shared) in kernels {
            for (i, t) in steps.iter().enumerate() {
                let n = rate * 15.0 * i as f64;
                let (name, v) = match family {
                    "poolprof_kernel_launches" => (format!("{family}_total"), n),
                    "poolprof_kernel_duration_seconds" => (format!("{family}_total"), n * secs),
                    "poolprof_kernel_grid_blocks" => (family.to_string(), f64::from(blocks)),
                    "poolprof_kernel_block_threads" => (family.to_string(), f64::from(threads)),
                    "poolprof_kernel_registers_per_thread" => (family.to_string(), f64::from(regs)),
                    _ => (family.to_string(), f64::from(shared)),
                };
                out.push_str(&format!("\n{name}{{{}}} {v} {t}", labels(k)));
            }
        }
    }
    out.push_str("\n# EOF\n");
    std::fs::write(history, out).unwrap();
}

#[test]
fn a_known_good_and_a_known_bad_pair_reach_promql() {
    let dir = tempfile::tempdir().unwrap();
    let source = source(dir.path());
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
    // each workload against the other GPUs' current load: etl cannot join big-train's
    // GPU (60 GiB used), chat-a can join chat-b's
    let gpu = |index: u32| -> String {
        let rows = source
            .api()
            .query_at(&format!("poolprof_gpu_info{{gpu=\"{index}\"}}"), END);
        rows[0].label("uuid").to_string()
    };
    let (train_gpu, chat_b_gpu) = (gpu(0), gpu(3));
    assert_eq!(
        one(&format!(
            r#"poolprof_placement_recommendation{{workload="etl",uuid="{train_gpu}",mode="none",recommendation="avoid"}}"#
        )),
        1.0
    );
    assert_eq!(
        one(&format!(
            r#"poolprof_placement_recommendation{{workload="chat-a",uuid="{chat_b_gpu}",recommendation="good"}}"#
        )),
        1.0
    );
    assert!(
        one(&format!(
            r#"poolprof_placement_resident_progress_ratio{{workload="chat-a",uuid="{chat_b_gpu}",mode="time_slicing"}}"#
        )) > 0.9
    );
    // no workload is placed on its own GPU
    assert_eq!(one(r#"count(poolprof_placement_score{mode="mps"})"#), 12.0);
    // each pair once, both directions of progress
    assert_eq!(one(r#"count(poolprof_colocation_score{mode="mps"})"#), 6.0);
    assert_eq!(
        one(r#"count(poolprof_colocation_predicted_progress_ratio{mode="mps"})"#),
        12.0
    );
    assert_eq!(one("poolprof_analyzer_workloads_profiled"), 4.0);
}

#[test]
fn profiles_then_colocate_offline_and_bad_inputs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let source = source(dir.path());
    let out = analyzer(&[
        "profiles",
        "--prometheus",
        &source.url(),
        "--lookback",
        "2h",
        "--end",
        &END.to_string(),
    ]);
    assert!(
        out.status.success(),
        "profiles: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let profiles = dir.path().join("profiles.json");
    std::fs::write(&profiles, &out.stdout).unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["profiles"].as_array().unwrap().len(), 4);

    let path = profiles.to_str().unwrap();
    let out = analyzer(&["colocate", "--input", path]);
    assert!(
        out.status.success(),
        "colocate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pairs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pairs = pairs["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 6);
    let pair = |a: &str, b: &str| {
        pairs
            .iter()
            .find(|p| p["workload_a"] == a && p["workload_b"] == b)
            .unwrap()
            .clone()
    };
    assert_eq!(pair("chat-a", "chat-b")["recommendation"], "good");
    let bad = pair("big-train", "etl");
    assert_eq!(
        (
            bad["recommendation"].as_str(),
            bad["recommended_mode"].as_str()
        ),
        (Some("avoid"), None)
    );
    assert!(
        bad["reason"]
            .as_str()
            .unwrap()
            .contains("memory does not fit"),
        "{bad}"
    );
    let one = analyzer(&["colocate", "--input", path, "--workload", "etl"]);
    let one: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(one["pairs"].as_array().unwrap().len(), 3);

    // bad input: exit 2, naming the file and what to do
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let profile = listed["profiles"][0].to_string();
    let cases = [
        (
            vec![
                "colocate".to_string(),
                "--input".into(),
                dir.path().join("missing.json").display().to_string(),
            ],
            "cannot read it",
        ),
        (
            vec![
                "colocate".into(),
                "--input".into(),
                write("bad.json", "{ not json"),
            ],
            "not JSON",
        ),
        (
            vec![
                "colocate".into(),
                "--input".into(),
                write("twice.json", &format!("[{profile},{profile}]")),
            ],
            "appears twice",
        ),
        (
            vec![
                "colocate".into(),
                "--input".into(),
                write("shape.json", r#"{"profiles": 3}"#),
            ],
            "poolprof-analyzer profiles",
        ),
        (
            vec![
                "colocate".into(),
                "--input".into(),
                path.into(),
                "--workload".into(),
                "ghost".into(),
            ],
            "ghost",
        ),
        (
            vec![
                "colocate".into(),
                "--input".into(),
                path.into(),
                "--constants".into(),
                write(
                    "c.json",
                    r#"{"ts_launch_wait":-1,"ts_sharing":1,"mps_fill_threshold":0.4,"mps_sharing":0.3}"#,
                ),
            ],
            "finite and >= 0",
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = analyzer(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn kernel_tables_for_schedulers_from_prometheus_and_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let source = source_with(dir.path(), append_chat_a_kernels);
    let window = ["--lookback", "2h", "--end", &END.to_string()];
    let url = source.url();
    let prometheus = ["--prometheus", url.as_str()];
    let kernels = |extra: &[&str]| {
        let mut args = vec!["kernels"];
        args.extend_from_slice(extra);
        analyzer(&args)
    };

    // Orion's CSV: the gemm holds one 200 KB block per SM, 66 blocks = 66 SMs; the
    // elementwise grid (4096 blocks, 16 per SM) would take 256 SMs: all 132
    let out = kernels(
        &[
            &["--workload", "chat-a", "--format", "orion"][..],
            &prometheus,
            &window,
        ]
        .concat(),
    );
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines,
        [
            "Name,Profile,Memory_footprint,SM_usage,Duration",
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n,1,0,66,200000",
            "native::vectorized_elementwise_kernel,0,0,132,10000",
        ],
        "{csv}"
    );

    // JSON, from a profiles file: the same table with shapes and classes
    let out = analyzer(&[&["profiles"][..], &prometheus, &window].concat());
    assert!(out.status.success());
    let profiles: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chat_a = profiles["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["workload"] == "chat-a")
        .unwrap();
    let fill = chat_a["signals"]["sm_fill"]["value"].as_f64().unwrap();
    // time-weighted: gemm 0.02 s/s at 0.5, elementwise 0.003 s/s at 1.0
    assert!((fill - (0.02 * 0.5 + 0.003) / 0.023).abs() < 0.01, "{fill}");
    let file = dir.path().join("profiles.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let path = file.to_str().unwrap();
    let out = kernels(&["--workload", "chat-a", "--input", path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(table["sms"], 132);
    assert_eq!(table["kernels"][0]["grid_blocks"], 66);
    assert_eq!(table["kernels"][0]["class"], "compute_bound");
    assert_eq!(table["kernels"][1]["blocks_per_sm"], 16);

    // what cannot be answered exits 2 and says why
    for (args, says) in [
        (
            vec!["--workload", "etl", "--input", path],
            "no kernel records",
        ),
        (vec!["--workload", "ghost", "--input", path], "no profile"),
        (
            vec!["--workload", "chat-a", "--format", "csv", "--input", path],
            "orion",
        ),
        (
            vec![
                "--workload",
                "chat-a",
                "--input",
                path,
                "--prometheus",
                "http://127.0.0.1:1",
            ],
            "cannot be used with",
        ),
    ] {
        let out = kernels(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn serve_answers_schedulers_on_the_rest_api() {
    let dir = tempfile::tempdir().unwrap();
    let source = source(dir.path());
    let (listen, api) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let registry = dir.path().join("registry.json");
    let mut cmd = Command::new(workspace_bin("poolprof-analyzer"));
    cmd.args([
        "serve",
        "--prometheus",
        &source.url(),
        "--listen",
        &listen,
        "--api",
        &api,
    ])
    .args([
        "--registry",
        registry.to_str().unwrap(),
        "--lookback",
        "2h",
        "--interval",
        "1h",
    ])
    .args(["--end", &END.to_string()]);
    let child = ChildGuard::spawn(
        "poolprof-analyzer serve",
        cmd,
        &dir.path().join("serve.log"),
    );
    let client = http_client();
    let get = |path: &str| -> Result<serde_json::Value, String> {
        let r = client
            .get(format!("http://{api}{path}"))
            .send()
            .map_err(|e| format!("{e}; log:\n{}", child.log_tail()))?;
        r.json().map_err(|e| e.to_string())
    };
    wait::until("the first run", Duration::from_secs(60), || {
        let h = get("/health")?;
        if h["status"] == "ok" {
            Ok(h)
        } else {
            Err(format!("{h}"))
        }
    });
    let c = get("/colocation?a=chat-a&b=chat-b").unwrap();
    assert_eq!(
        (c["ok"].as_bool(), c["recommendation"].as_str()),
        (Some(true), Some("good")),
        "{c}"
    );
    let metrics = client
        .get(format!("http://{listen}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(metrics.contains("poolprof_colocation_score{"), "{metrics}");
    let r = client
        .post(format!("http://{api}/register"))
        .header("content-type", "application/json")
        .body(r#"{"workload_id":"notebook","kernel_type":"compute","arithmetic_intensity":120}"#)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        registry.exists(),
        "the registration is on disk before the answer"
    );
    let c = get("/colocation?a=notebook&b=etl").unwrap();
    assert_eq!(c["workload_a"]["type"], "compute", "{c}");
}
