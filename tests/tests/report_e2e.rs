//! The report end to end: the co-location scenario (exporter/scenarios/colocation.toml)
//! with kernel records for two workloads, backfilled into a real Prometheus;
//! `poolprof-analyzer report` writes HTML, JSON and CSV from it; the HTML is opened in
//! headless Chromium (Debian's `chromium`), which must draw every plot and report no
//! console message; and `serve` answers `GET /report`.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use poolprof_e2e::bins::workspace_bin;
use poolprof_e2e::history;
use poolprof_e2e::history_extras::{self, uuid_of, Kernel};
use poolprof_e2e::ports::free_port;
use poolprof_e2e::process::ChildGuard;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::backfill_openmetrics;
use poolprof_e2e::server::http_client;
use poolprof_e2e::wait;

/// End of the simulated history (2026-01-01T00:00:00Z).
const END: f64 = 1_767_225_600.0;

/// The CSV header docs/analyzer.md documents.
const CSV_HEADER: &str =
    "record,identity,owner,signal,peer,mode,time,value,lower,upper,strength,label";

/// A Prometheus holding the scenario's two hours, with kernel records added.
fn source(dir: &Path) -> Prometheus {
    let data = dir.join("data");
    let scenario = format!(
        "{}/../exporter/scenarios/colocation.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let history = history::simulate(dir, "2h", "15s", END, &["--scenario", &scenario]);
    append_kernels(&history);
    backfill_openmetrics(&history, &data);
    Prometheus::start_on_data_dir(&data, &PrometheusConfig::default())
}

/// Kernel counters as the exporter publishes them for injected processes (the
/// injection library cannot run here): `chat-a` runs a GEMM and an elementwise kernel,
/// `etl` an elementwise kernel and one whose name says nothing, at steady rates.
fn append_kernels(history: &Path) {
    let text = std::fs::read_to_string(history).unwrap();
    let kernel = |name, launches_per_second, seconds_per_launch| Kernel {
        name,
        launches_per_second,
        seconds_per_launch,
    };
    let chat_a = [
        kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 100.0, 2e-4),
        kernel("native::vectorized_elementwise_kernel", 300.0, 1e-5),
    ];
    let etl = [
        kernel("native::vectorized_elementwise_kernel", 500.0, 4e-4),
        kernel("my_custom_kernel", 50.0, 1e-3),
    ];
    history_extras::append_kernels(
        history,
        &[
            (&uuid_of(&text, "chat-a"), "chat-a", &chat_a),
            (&uuid_of(&text, "etl"), "etl", &etl),
        ],
        (END, 7200.0, 15.0),
    );
}

fn report(source: &Prometheus, format: &str, output: &Path) -> Output {
    Command::new(workspace_bin("poolprof-analyzer"))
        .args(["report", "--prometheus", &source.url(), "--format", format])
        .arg("--output")
        .arg(output)
        .args([
            "--end",
            &END.to_string(),
            "--lookback",
            "2h",
            "--attempts",
            "2",
        ])
        .output()
        .expect("poolprof-analyzer runs")
}

#[test]
fn the_report_in_html_json_and_csv_draws_every_plot_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let source = source(dir.path());
    let outputs = ["html", "json", "csv"].map(|format| {
        let path = dir.path().join(format!("report.{format}"));
        let out = report(&source, format, &path);
        assert!(
            out.status.success(),
            "report --format {format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(&path).unwrap()
    });
    let [html, json, csv] = outputs;
    let data: serde_json::Value = serde_json::from_str(&json).unwrap();

    // JSON: the workloads' signals, periods and forecasts, kernel time, every pair
    let owners = data["owners"].as_array().unwrap();
    let owner = |name: &str| owners.iter().find(|o| o["owner"] == name);
    for name in ["chat-a", "chat-b", "etl", "big-train"] {
        assert!(owner(name).is_some(), "{name} has signals in the report");
    }
    let signals: Vec<&serde_json::Value> = owners
        .iter()
        .flat_map(|o| o["signals"].as_array().unwrap())
        .collect();
    for s in &signals {
        let n = s["points"].as_array().unwrap().len();
        assert!((100..=500).contains(&n), "{n} points for {}", s["signal"]);
    }
    assert!(
        signals
            .iter()
            .any(|s| !s["periods"].as_array().unwrap().is_empty()),
        "the scenario has periodic workloads"
    );
    assert!(signals
        .iter()
        .all(|s| !s["forecasts"].as_array().unwrap().is_empty()));
    let workloads = data["workloads"].as_array().unwrap();
    let chat_a = workloads
        .iter()
        .find(|w| w["workload"] == "chat-a")
        .unwrap();
    let by_class = chat_a["kernel_time_by_class"].as_object().unwrap();
    assert!(
        by_class["compute_bound"].as_f64().unwrap() > 0.8,
        "{by_class:?}"
    );
    let matrix = &data["colocation"];
    let n = matrix["workloads"].as_array().unwrap().len();
    assert!(n >= 4, "{matrix}");
    assert_eq!(matrix["pairs"].as_array().unwrap().len(), n * (n - 1) / 2);
    let chats = matrix["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["workload_a"] == "chat-a" && p["workload_b"] == "chat-b")
        .unwrap();
    assert_eq!(chats["recommendation"], "good", "{chats}");

    // CSV: the same data, one long table
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(CSV_HEADER));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(
        rows.iter().all(|r| r.len() == 12),
        "plain names need no quoting"
    );
    let count = |record: &str| rows.iter().filter(|r| r[0] == record).count();
    let points: usize = signals
        .iter()
        .map(|s| s["points"].as_array().unwrap().len())
        .sum();
    assert_eq!(count("sample"), points);
    assert_eq!(count("colocation"), 3 * n * (n - 1) / 2);
    assert!(rows.iter().any(|r| r[0] == "recommendation"
        && r[2] == "chat-a"
        && r[4] == "chat-b"
        && r[11] == "good"));
    assert!(rows
        .iter()
        .any(|r| r[0] == "kernel_time" && r[2] == "etl" && r[11] == "memory_bound"));

    // HTML: one chart per signal, the kernel bars, a matrix per mode
    assert_eq!(
        html.matches(r#"<svg class="plot signal""#).count(),
        signals.len()
    );
    assert_eq!(html.matches(r#"<svg class="plot kernels""#).count(), 1);
    assert_eq!(html.matches(r#"<svg class="plot matrix""#).count(), 3);
    let check = chromium_check(dir.path(), &html);
    assert_eq!(
        check.drawn.len(),
        signals.len() + 4,
        "every plot reached the DOM: {check:?}"
    );
    assert!(
        check.drawn.iter().all(|&elements| elements > 0),
        "an SVG drew nothing: {check:?}"
    );
    assert!(check.errors.is_empty(), "errors in the page: {check:?}");
    assert!(
        check.console.is_empty(),
        "Chromium's console (a fetch the page's policy blocked, an error): {check:?}"
    );
}

/// What Chromium made of the page.
#[derive(Debug)]
struct ChromiumCheck {
    /// Per `<svg>`, how many of its shapes and texts have a non-empty box.
    drawn: Vec<u64>,
    /// Errors the page raised while loading.
    errors: Vec<String>,
    /// Console lines Chromium logged.
    console: Vec<String>,
}

/// Opens a copy of `html` in headless Chromium with a check script added: it counts
/// each SVG's drawn elements (a layout box wider or taller than zero) and records any
/// error event into the DOM, which `--dump-dom` returns. The report forbids scripts in
/// its Content-Security-Policy; the copy allows inline ones for the check and keeps
/// every other rule, so a fetch of anything still shows as a console message.
fn chromium_check(dir: &Path, html: &str) -> ChromiumCheck {
    const CATCH: &str = "<script>window.__errors=[];\
        addEventListener('error',e=>__errors.push('error: '+e.message));\
        addEventListener('securitypolicyviolation',e=>__errors.push('blocked: '+e.blockedURI));</script>";
    const COUNT: &str = "<script>(()=>{const drawn=[...document.querySelectorAll('svg')].map(s=>\
        [...s.querySelectorAll('path,rect,circle,line,polyline,polygon,text')].filter(e=>{\
        const b=e.getBBox();return b.width>0||b.height>0}).length);\
        const out=document.createElement('pre');out.id='report-check';\
        out.textContent=JSON.stringify({drawn,errors:__errors});document.body.appendChild(out)})()</script>";
    assert!(
        html.contains("script-src 'none'"),
        "the report forbids scripts"
    );
    let page = html
        .replacen("script-src 'none'", "script-src 'unsafe-inline'", 1)
        .replacen("</head>", &format!("{CATCH}</head>"), 1)
        .replacen("</body>", &format!("{COUNT}</body>"), 1);
    let path = dir.join("report-check.html");
    std::fs::write(&path, page).unwrap();
    let out = chromium(dir, &["--dump-dom", &format!("file://{}", path.display())]);
    let dom = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let start = dom.find(r#"<pre id="report-check">"#).unwrap_or_else(|| {
        panic!(
            "the check did not run; Chromium said:\n{stderr}\nDOM tail:\n{}",
            tail(&dom)
        )
    });
    let json = &dom[start + r#"<pre id="report-check">"#.len()..];
    let json = json[..json.find("</pre>").unwrap()].replace("&quot;", "\"");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    ChromiumCheck {
        drawn: v["drawn"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect(),
        errors: v["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.to_string())
            .collect(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
    }
}

fn tail(text: &str) -> &str {
    &text[text.len().saturating_sub(2000)..]
}

/// Runs headless Chromium with `args`, isolated (its own profile, no network of its
/// own), logging console messages to stderr; killed after two minutes.
fn chromium(dir: &Path, args: &[&str]) -> Output {
    let profile = dir.join("chromium-profile");
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-quic",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start chromium ({e}): install Debian's chromium (tests/run.sh does)")
        });
    // Read both pipes on threads so a full pipe cannot stall Chromium.
    let read = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium ran over two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn serve_answers_get_report_with_the_latest_run() {
    let dir = tempfile::tempdir().unwrap();
    let source = source(dir.path());
    let api = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new(workspace_bin("poolprof-analyzer"));
    cmd.args(["serve", "--prometheus", &source.url(), "--api", &api])
        .args(["--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--registry")
        .arg(dir.path().join("registry.json"))
        .args(["--lookback", "2h", "--interval", "1h"])
        .args(["--end", &END.to_string()]);
    let child = ChildGuard::spawn(
        "poolprof-analyzer serve",
        cmd,
        &dir.path().join("serve.log"),
    );
    let client = http_client();
    let page = wait::until(
        "the report of the first run",
        Duration::from_secs(60),
        || {
            let r = client
                .get(format!("http://{api}/report"))
                .send()
                .map_err(|e| format!("{e}; log:\n{}", child.log_tail()))?;
            let (status, kind) = (r.status().as_u16(), r.headers()["content-type"].clone());
            let body = r.text().map_err(|e| e.to_string())?;
            assert_eq!(kind, "text/html; charset=utf-8");
            match status {
                200 => Ok(body),
                503 if body.contains("No analysis run has finished yet") => Err("not ready".into()),
                other => panic!("GET /report answered {other}: {body}"),
            }
        },
    );
    assert_eq!(page.matches(r#"<svg class="plot matrix""#).count(), 3);
    assert!(page.contains(">chat-a<"), "chat-a in the matrix");
    let post = client.post(format!("http://{api}/report")).send().unwrap();
    assert_eq!(post.status().as_u16(), 405);
}

#[test]
fn a_missing_output_folder_or_an_unknown_format_is_a_usage_error_before_any_query() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: reaching the source would exit 3, not 2.
    let run = |extra: &[&str]| {
        Command::new(workspace_bin("poolprof-analyzer"))
            .args([
                "report",
                "--prometheus",
                "http://127.0.0.1:1",
                "--attempts",
                "1",
            ])
            .args(extra)
            .output()
            .expect("poolprof-analyzer runs")
    };
    let missing = dir.path().join("no-such-folder").join("report.html");
    let out = run(&["--output", missing.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no-such-folder") && stderr.contains("does not exist"),
        "{stderr}"
    );
    let out = run(&["--output", "-", "--format", "pdf"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("use html, json or csv"), "{stderr}");
}
