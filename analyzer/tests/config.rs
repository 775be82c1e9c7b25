//! The TOML config: defaults, overrides and errors that name the file and field.

use std::io::Write;
use std::time::Duration;

use poolprof_analyzer::config::{Config, Identity};
use poolprof_analyzer::error::{Error, ExitCode};

fn write(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn defaults_query_the_exporter_metrics_per_gpu_and_per_workload() {
    let c = Config::default();
    assert_eq!(c.analysis.lookback, Duration::from_secs(6 * 3600));
    assert_eq!(c.analysis.horizons, vec![Duration::from_secs(3600)]);
    let gpu: Vec<_> = c
        .signals
        .iter()
        .filter(|s| s.identity == Identity::Uuid)
        .collect();
    let workload: Vec<_> = c
        .signals
        .iter()
        .filter(|s| s.identity == Identity::Workload)
        .collect();
    for (name, metric) in [
        ("sm_active", "poolprof_gpu_sm_active_ratio"),
        ("tensor_active", "poolprof_gpu_tensor_any_active_ratio"),
        ("dram_active", "poolprof_gpu_dram_active_ratio"),
        ("utilization", "poolprof_gpu_utilization_ratio"),
        ("memory_used", "poolprof_gpu_memory_used_bytes"),
        ("power", "poolprof_gpu_power_usage_watts"),
    ] {
        let s = gpu
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no GPU signal {name}"));
        assert!(
            s.query.contains(metric) && s.query.contains("by (uuid)"),
            "{}",
            s.query
        );
    }
    let mem = gpu.iter().find(|s| s.name == "memory_used").unwrap();
    assert!(mem
        .capacity
        .as_deref()
        .unwrap()
        .contains("poolprof_gpu_memory_total_bytes"));
    assert!(!workload.is_empty());
    assert!(workload.iter().all(|s| s.query.contains("by (workload)")));
    assert!(c.validate().is_ok());
}

#[test]
fn a_file_sets_the_window_and_replaces_the_signals() {
    let f = write(
        r#"
[source]
url = "http://prom:9090"
timeout = "10s"
attempts = 2

[analysis]
lookback = "2d"
step = "1m"
horizons = ["15m", "6h"]
concurrency = 3

[[signals]]
name = "sm"
identity = "workload"
query = "sum by (workload) (x)"
"#,
    );
    let c = Config::load(f.path()).unwrap();
    assert_eq!(c.source.url.as_deref(), Some("http://prom:9090"));
    assert_eq!(c.source.timeout, Duration::from_secs(10));
    assert_eq!(c.analysis.lookback, Duration::from_secs(2 * 86_400));
    assert_eq!(c.step(), Duration::from_secs(60));
    assert_eq!(c.analysis.horizons.len(), 2);
    assert_eq!(c.signals.len(), 1);
    assert_eq!(c.signals[0].identity, Identity::Workload);
}

#[test]
fn an_empty_file_means_the_defaults() {
    let f = write("");
    assert_eq!(Config::load(f.path()).unwrap(), Config::default());
}

fn load_err(text: &str) -> String {
    let f = write(text);
    let err = Config::load(f.path()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&f.path().display().to_string()),
        "must name the file: {msg}"
    );
    assert_eq!(Error::from(err).exit_code(), ExitCode::Usage);
    msg
}

#[test]
fn errors_name_the_field() {
    let cases = [
        ("[analysis]\nlookback = \"six hours\"\n", "analysis.lookback"),
        ("[analysis]\nlookback = \"10s\"\n", "analysis.lookback"),
        ("[analysis]\nhorizons = []\n", "analysis.horizons"),
        ("[analysis]\nstep = \"15s\"\nhorizons = [\"1s\"]\n", "analysis.horizons[0]"),
        ("[analysis]\nconcurrency = 0\n", "analysis.concurrency"),
        ("[source]\nattempts = 0\n", "source.attempts"),
        ("[source]\ntimout = \"1s\"\n", "source.timout"),
        ("[source]\nusername = \"ops\"\n", "source.username"),
        (
            "[[signals]]\nname = \"a\"\nidentity = \"uuid\"\nquery = \"x\"\n[[signals]]\nname = \"Bad Name\"\nidentity = \"uuid\"\nquery = \"y\"\n",
            "signals[1].name",
        ),
        ("[[signals]]\nname = \"a\"\nidentity = \"node\"\nquery = \"x\"\n", "signals[0].identity"),
        ("[[signals]]\nname = \"a\"\nidentity = \"uuid\"\nquery = \" \"\n", "signals[0].query"),
        (
            "[[signals]]\nname = \"a\"\nidentity = \"uuid\"\nquery = \"x\"\n[[signals]]\nname = \"a\"\nidentity = \"uuid\"\nquery = \"y\"\n",
            "signals[1].name",
        ),
        ("signals = []\n", "signals"),
        ("[analysis\n", "file"),
        ("[analysis]\nlookback = 6\n", "analysis.lookback"),
    ];
    for (text, field) in cases {
        let msg = load_err(text);
        assert!(
            msg.contains(&format!(": {field}: ")),
            "{text:?} should name {field}: {msg}"
        );
        if field == "file" {
            assert!(
                msg.contains("line 1"),
                "a syntax error names its line: {msg}"
            );
        }
    }
}

#[test]
fn a_missing_file_is_named() {
    let err = Config::load(std::path::Path::new("/nonexistent/analyzer.toml")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/analyzer.toml"));
}

#[test]
fn the_documented_example_config_is_valid() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/analyzer.md"))
        .unwrap();
    let start = doc
        .find("```toml\n")
        .expect("docs/analyzer.md has a TOML example")
        + 8;
    let len = doc[start..].find("```").unwrap();
    let c = Config::parse(&doc[start..start + len]).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(c.signals.len(), 2);
    assert!(c.signals[1].capacity.is_some());
}
