use super::openmetrics::{escape, format_timestamp, write_float};
use super::*;
use crate::registry::{MetricKind, MetricSet};
use std::io::Write;
use std::process::{Command, Stdio};

/// One parsed sample line: name, labels in order, value text, timestamp text.
#[derive(Debug, PartialEq)]
struct Line {
    name: String,
    labels: Vec<(String, String)>,
    value: String,
    timestamp: Option<String>,
}

/// A strict parser of the sample lines we write, undoing label escaping.
fn parse_sample(line: &str) -> Line {
    let (name, mut rest) = match line.find(['{', ' ']) {
        Some(i) => (line[..i].to_string(), &line[i..]),
        None => panic!("no value in {line:?}"),
    };
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let mut key = String::new();
        loop {
            let (i, c) = chars.next().expect("unterminated labels");
            match c {
                '}' => {
                    rest = &body[i + 1..];
                    break;
                }
                ',' => {}
                '=' => {
                    assert_eq!(chars.next().map(|(_, c)| c), Some('"'));
                    let mut value = String::new();
                    loop {
                        let (_, c) = chars.next().expect("unterminated value");
                        match c {
                            '"' => break,
                            '\\' => match chars.next().expect("dangling escape").1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            other => value.push(other),
                        }
                    }
                    labels.push((std::mem::take(&mut key), value));
                }
                other => key.push(other),
            }
        }
    }
    let mut fields = rest.split_whitespace();
    Line {
        name,
        labels,
        value: fields.next().expect("value").to_string(),
        timestamp: fields.next().map(str::to_string),
    }
}

fn samples(body: &str) -> Vec<Line> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .map(parse_sample)
        .collect()
}

fn example() -> MetricSet {
    let mut set = MetricSet::new();
    set.counter(
        "poolprof_gpu_energy_joules_total",
        "Energy used.",
        &[("gpu", "0"), ("uuid", "GPU-a")],
        1234.5,
    );
    set.info(
        "poolprof_gpu_info",
        "GPU identity.",
        &[("gpu", "0"), ("name", "NVIDIA \"H100\"\nback\\slash")],
    );
    set.gauge(
        "poolprof_gpu_power_usage_watts",
        "Power draw.",
        &[("gpu", "0")],
        f64::INFINITY,
    );
    set.gauge(
        "poolprof_gpu_power_usage_watts",
        "Power draw.",
        &[("gpu", "1")],
        f64::NEG_INFINITY,
    );
    set.gauge(
        "poolprof_gpu_power_usage_watts",
        "Power draw.",
        &[("gpu", "2")],
        f64::NAN,
    );
    set.gauge("poolprof_gpu_temperature_celsius", "Temp.", &[], 0.125);
    set
}

#[test]
fn openmetrics_names_counter_and_info_families_without_their_suffix() {
    let body = String::from_utf8(openmetrics(&example()).to_vec()).unwrap();
    assert!(
        body.contains("# TYPE poolprof_gpu_energy_joules counter\n"),
        "{body}"
    );
    assert!(body.contains("\npoolprof_gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-a\"} 1234.5\n"));
    assert!(body.contains("# TYPE poolprof_gpu info\n"), "{body}");
    assert!(body.contains("# TYPE poolprof_gpu_power_usage_watts gauge\n"));
    assert!(body.ends_with("# EOF\n"));
    assert_eq!(body.matches("# EOF").count(), 1);
}

#[test]
fn openmetrics_round_trips_labels_values_and_special_floats() {
    let body = String::from_utf8(openmetrics(&example()).to_vec()).unwrap();
    let lines = samples(body.trim_end_matches("# EOF\n"));
    let info = lines
        .iter()
        .find(|l| l.name == "poolprof_gpu_info")
        .unwrap();
    assert_eq!(info.labels[1].1, "NVIDIA \"H100\"\nback\\slash");
    assert_eq!(info.value, "1");
    let power: Vec<&str> = lines
        .iter()
        .filter(|l| l.name == "poolprof_gpu_power_usage_watts")
        .map(|l| l.value.as_str())
        .collect();
    assert_eq!(power, ["+Inf", "-Inf", "NaN"]);
    let temp = lines.iter().find(|l| l.name.ends_with("celsius")).unwrap();
    assert!(temp.labels.is_empty());
    assert_eq!(temp.value.parse::<f64>().unwrap(), 0.125);
}

#[test]
fn openmetrics_writes_timestamps_in_seconds() {
    let mut set = MetricSet::new();
    let labels = [("gpu", "0")];
    set.push(
        "a_total",
        "A.",
        MetricKind::Counter,
        &labels,
        1.0,
        Some(1_700_000_000_123),
    );
    set.push(
        "b",
        "B.",
        MetricKind::Gauge,
        &labels,
        2.0,
        Some(1_700_000_000_000),
    );
    let body = String::from_utf8(openmetrics(&set).to_vec()).unwrap();
    let lines = samples(body.trim_end_matches("# EOF\n"));
    assert_eq!(lines[0].timestamp.as_deref(), Some("1700000000.123"));
    assert_eq!(lines[1].timestamp.as_deref(), Some("1700000000"));
    assert_eq!(format_timestamp(-1500), "-1.500");
}

#[test]
fn escaping_and_float_helpers_cover_every_special_case() {
    assert_eq!(escape("plain"), "plain");
    assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    let float = |v: f64| {
        let mut out = String::new();
        write_float(&mut out, v);
        out
    };
    assert_eq!(float(1e-7).parse::<f64>().unwrap(), 1e-7);
    assert_eq!(float(3.0), "3");
    assert_eq!(float(f64::NAN), "NaN");
    assert_eq!(float(f64::INFINITY), "+Inf");
    assert_eq!(float(f64::NEG_INFINITY), "-Inf");
}

#[test]
fn text_round_trips_and_keeps_counter_names() {
    let body = String::from_utf8(text(&example()).to_vec()).unwrap();
    assert!(body.contains("# TYPE poolprof_gpu_energy_joules_total counter\n"));
    assert!(body.contains("# TYPE poolprof_gpu_info gauge\n"));
    assert!(!body.contains("# EOF"));
    let lines = samples(&body);
    assert_eq!(lines.len(), 6);
    let info = lines
        .iter()
        .find(|l| l.name == "poolprof_gpu_info")
        .unwrap();
    assert_eq!(info.labels[1].1, "NVIDIA \"H100\"\nback\\slash");
}

#[test]
fn empty_set_encodes_to_empty_text_and_bare_eof() {
    assert!(text(&MetricSet::new()).is_empty());
    assert_eq!(&openmetrics(&MetricSet::new())[..], b"# EOF\n");
}

/// Runs `promtool check metrics` on `body` and returns what it printed.
pub(crate) fn promtool_check(body: &[u8]) -> String {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed (apt-get install prometheus)");
    child.stdin.take().unwrap().write_all(body).unwrap();
    let output = child.wait_with_output().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool failed: {printed}");
    printed
}

#[test]
fn promtool_accepts_the_text_output_silently() {
    assert_eq!(promtool_check(&text(&example())), "");
}

#[test]
fn promtool_backfills_the_openmetrics_output() {
    let mut set = MetricSet::new();
    for (i, ts) in [1_700_000_000_000i64, 1_700_000_015_500]
        .into_iter()
        .enumerate()
    {
        let labels = [("gpu", "0"), ("name", "a \"quoted\" name")];
        let v = i as f64;
        set.push(
            "x_joules_total",
            "X.",
            MetricKind::Counter,
            &labels,
            v,
            Some(ts),
        );
        set.push("x_watts", "W.", MetricKind::Gauge, &labels, v, Some(ts));
        set.push("x_info", "I.", MetricKind::Info, &labels, 1.0, Some(ts));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.om");
    std::fs::write(&input, openmetrics(&set)).unwrap();
    let output = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(dir.path().join("data"))
        .output()
        .expect("promtool is installed");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

proptest::proptest! {
    #[test]
    fn any_label_value_and_float_round_trips_through_openmetrics(
        value in "\\PC*|[\\\\\"\n]{0,8}",
        number in proptest::num::f64::ANY,
    ) {
        let mut set = MetricSet::new();
        set.gauge("poolprof_test_ratio", "Test.", &[("workload", &value)], number);
        let body = String::from_utf8(openmetrics(&set).to_vec()).unwrap();
        let lines = samples(body.trim_end_matches("# EOF\n"));
        proptest::prop_assert_eq!(lines.len(), 1);
        proptest::prop_assert_eq!(&lines[0].labels[0].1, &value);
        let parsed = match lines[0].value.as_str() {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            other => other.parse::<f64>().unwrap(),
        };
        // what the set holds (fractional values tidied to 15 digits) comes back exactly
        let held = crate::registry::metric_set::tidy(number);
        proptest::prop_assert!(parsed == held || (parsed.is_nan() && number.is_nan()));
        proptest::prop_assert!(parsed == number || ((parsed - number) / number).abs() < 1e-14 || number.is_nan());
    }
}
