//! The history writer checked the way its users check it: the real promtool backfills
//! it, and the file shows the scenario's behaviour.

use super::*;
use crate::backend::sim::ManualClock;
use crate::registry::encode;
use clap::Parser;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// 2026-11-22T00:00:00Z.
const END: f64 = 1_795_305_600.0;
const PROMTOOL: &str = "promtool";

/// One sample line of the exposition.
#[derive(Debug)]
struct Sample {
    family: String,
    series: String,
    value: f64,
    ts: f64,
}

/// The `simulate` subcommand on its own.
#[derive(clap::Parser)]
#[command(name = "simulate")]
struct Cli {
    #[command(flatten)]
    args: SimulateArgs,
}

fn parse<const N: usize>(argv: [&str; N]) -> Result<SimulateArgs, clap::Error> {
    Cli::try_parse_from(argv).map(|cli| cli.args)
}

fn history(hours: u64, n: u32) -> String {
    let mut out = Vec::new();
    write_history(
        Scenario::builtin(n).expect("valid"),
        collector::default_collectors(),
        Duration::from_secs(hours * 3600),
        Duration::from_secs(15),
        END,
        &mut out,
    )
    .expect("history written");
    String::from_utf8(out).expect("utf-8")
}

fn samples(text: &str) -> Vec<Sample> {
    let mut family = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            family = rest.split(' ').next().expect("name").to_string();
        } else if !line.starts_with('#') {
            let mut parts = line.rsplitn(3, ' ');
            let ts = parts.next().expect("ts").parse().expect("ts is a number");
            let value = parts
                .next()
                .expect("value")
                .parse()
                .expect("value is a number");
            let series = parts.next().expect("series").to_string();
            out.push(Sample {
                family: family.clone(),
                series,
                value,
                ts,
            });
        }
    }
    out
}

fn promtool(args: &[&str], stdin: Option<&[u8]>) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(PROMTOOL)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian package prometheus)");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or_default())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("promtool ran")
}

#[test]
fn promtool_backfills_an_hour_of_six_gpus() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("history.om");
    let args = parse([
        "simulate",
        "--history",
        "1h",
        "--output",
        file.to_str().expect("utf-8 path"),
        "--end",
        &END.to_string(),
    ])
    .expect("flags parse");
    let stats = run(&args).expect("history written");
    assert_eq!(stats.steps, 241);
    assert!(stats.series > 300, "{stats:?}");
    assert!(!dir.path().join("history.om.partial").exists());
    let blocks = dir.path().join("blocks");
    let output = promtool(
        &[
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            file.to_str().expect("utf-8"),
            blocks.to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(
        output.status.success(),
        "promtool failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let metas = std::fs::read_dir(&blocks)
        .expect("blocks dir")
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("meta.json").is_file())
        .count();
    assert!(metas >= 1, "no block in {}", blocks.display());
}

#[test]
fn promtool_check_metrics_is_silent_on_one_instant() {
    let clock = ManualClock::new();
    clock.set(60.0);
    let backend = SimBackend::new(Scenario::builtin(6).unwrap(), SimClock::Manual(clock));
    let mut collection = Collection::new(Arc::new(backend), collector::default_collectors());
    let text = encode::text(&collection.collect_once());
    assert!(text.len() > 10_000);
    let output = promtool(&["check", "metrics"], Some(&text));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && said.is_empty(),
        "promtool said: {said}"
    );
}

#[test]
fn families_and_series_are_contiguous_and_in_time_order() {
    let text = history(1, 6);
    assert!(text.ends_with("\n# EOF\n"));
    let all = samples(&text);
    let mut families_done = BTreeSet::new();
    let mut series_done = BTreeSet::new();
    let (mut family, mut series, mut last_ts) = (String::new(), String::new(), f64::MIN);
    for s in &all {
        if s.family != family {
            assert!(families_done.insert(s.family.clone()), "{} split", s.family);
            family = s.family.clone();
        }
        if s.series != series {
            assert!(series_done.insert(s.series.clone()), "{} split", s.series);
            series = s.series.clone();
        } else {
            assert!(s.ts > last_ts, "{} out of order at {}", s.series, s.ts);
        }
        last_ts = s.ts;
        assert!((END - 3600.0..=END).contains(&s.ts), "{}", s.ts);
    }
    assert_eq!(text.matches("# TYPE poolprof_gpu_up gauge").count(), 1);
    assert!(!text.contains("collector_duration_seconds"));
    assert!(!text.contains("collector_cpu_seconds"));
}

/// Values of one series by timestamp.
fn series(all: &[Sample], starts_with: &str) -> BTreeMap<i64, f64> {
    all.iter()
        .filter(|s| s.series.starts_with(starts_with))
        .map(|s| (s.ts as i64, s.value))
        .collect()
}

#[test]
fn failing_gpu_is_down_its_readings_absent_its_identity_and_xids_kept() {
    let all = samples(&history(1, 6));
    let start = END as i64 - 3600;
    let failing = "GPU-00000000-0000-4000-8000-000000000004";
    let up = series(
        &all,
        &format!("poolprof_gpu_up{{gpu=\"4\",uuid=\"{failing}\"}}"),
    );
    assert_eq!(up.len(), 241);
    for (ts, value) in &up {
        let t = ts - start;
        let expected = if (10..310).contains(&t) { 0.0 } else { 1.0 };
        assert_eq!(*value, expected, "gpu_up at scenario second {t}");
    }
    let power = series(&all, "poolprof_gpu_power_usage_watts{gpu=\"4\"");
    assert!(power.keys().all(|ts| !(10..310).contains(&(ts - start))));
    assert!(power.contains_key(&start) && power.contains_key(&(start + 315)));
    // Xid 79 is there at 0 before, counted while the GPU is down, and stays counted once
    let xid = series(
        &all,
        &format!("poolprof_gpu_xid_errors_total{{gpu=\"4\",uuid=\"{failing}\",xid=\"79\"}}"),
    );
    assert_eq!(xid.get(&start), Some(&0.0), "born at 0: {xid:?}");
    assert_eq!(
        xid.get(&(start + 150)),
        Some(&1.0),
        "kept while down: {xid:?}"
    );
    assert_eq!(
        xid.get(&(start + 3600)),
        Some(&1.0),
        "counted once: {xid:?}"
    );
    let info = series(
        &all,
        &format!("poolprof_gpu_info{{gpu=\"4\",uuid=\"{failing}\""),
    );
    assert!(
        info.contains_key(&(start + 150)),
        "the identity stays while down"
    );
}

#[test]
fn training_period_shows_in_the_history() {
    let all = samples(&history(1, 1));
    let sm = series(&all, "poolprof_gpu_sm_active_ratio{gpu=\"0\"");
    assert_eq!(sm.len(), 241);
    let start = END as i64 - 3600;
    for t in (0..3300).step_by(15) {
        assert_eq!(sm[&(start + t)], sm[&(start + t + 300)], "t = {t}");
    }
    assert!(sm[&(start + 120)] > 0.85 && sm[&(start + 270)] < 0.1);
    let energy = series(&all, "poolprof_gpu_energy_joules_total{gpu=\"0\"");
    let values: Vec<f64> = energy.values().copied().collect();
    assert!(values.windows(2).all(|w| w[1] > w[0]), "energy grows");
}

#[test]
fn the_same_arguments_write_the_same_bytes() {
    assert_eq!(history(1, 3), history(1, 3));
}

fn usage_error(history: &str, step: &str, end: f64) -> String {
    let err = write_history(
        Scenario::builtin(1).unwrap(),
        Vec::new(),
        humantime::parse_duration(history).unwrap(),
        humantime::parse_duration(step).unwrap(),
        end,
        &mut Vec::new(),
    )
    .expect_err("refused");
    assert_eq!(err.exit_code(), 2);
    err.to_string()
}

#[test]
fn out_of_range_flags_are_refused_naming_the_flag() {
    assert!(usage_error("6h", "0s", END).starts_with("--step: must be at least 1s"));
    assert!(usage_error("1m", "2m", END).starts_with("--step: "));
    assert!(usage_error("32d", "1m", END).starts_with("--history: "));
    assert!(usage_error("1h", "1500us", END).starts_with("--step: "));
    assert!(usage_error("1h", "15s", f64::NAN).starts_with("--end: "));
    assert!(usage_error("1h", "15s", 1.0e12).starts_with("--end: "));
}

#[test]
fn too_many_samples_are_refused_before_memory_runs_out() {
    let err = write_history(
        Scenario::builtin(64).unwrap(),
        collector::default_collectors(),
        MAX_HISTORY,
        MIN_STEP,
        END,
        &mut Vec::new(),
    )
    .expect_err("refused");
    assert!(err.to_string().contains("exceed the limit"), "{err}");
}

#[test]
fn flags_have_the_documented_defaults_and_bad_input_is_refused() {
    let args = parse(["simulate", "--output", "h.om"]).expect("parse");
    assert_eq!(args.history, Duration::from_secs(6 * 3600));
    assert_eq!(args.step, Duration::from_secs(15));
    assert_eq!((args.simulate, args.scenario, args.end), (6, None, None));
    assert!(parse(["simulate"]).is_err(), "--output is required");
    let err = parse(["simulate", "--output", "h", "--step", "fast"])
        .expect_err("bad duration")
        .to_string();
    assert!(err.contains("--step") && err.contains("15s"), "{err}");
    let both = [
        "simulate",
        "--output",
        "h",
        "--simulate",
        "2",
        "--scenario",
        "s.toml",
    ];
    assert!(parse(both).is_err());
}

#[test]
fn a_bad_scenario_or_output_fails_with_the_path_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("bad.toml");
    std::fs::write(
        &scenario,
        "[[gpus]]\nkind = \"training\"\nperiod_seconds = -1\n",
    )
    .unwrap();
    let output = dir.path().join("out.om");
    let mut args = parse([
        "simulate",
        "--history",
        "1m",
        "--output",
        output.to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--end",
        &END.to_string(),
    ])
    .unwrap();
    let err = run(&args).expect_err("bad scenario");
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.to_string()
            .contains("bad.toml: gpus[0].period_seconds: must be > 0"),
        "{err}"
    );
    assert!(!output.exists());

    args.scenario = None;
    args.output = dir.path().join("no/such/dir/out.om");
    let err = run(&args).expect_err("unwritable");
    assert_eq!(err.exit_code(), 1);
    assert!(
        err.to_string().contains("no/such/dir/out.om: cannot write"),
        "{err}"
    );
}
