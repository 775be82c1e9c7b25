//! deploy/local/: `up.sh --detach` starts the whole pipeline on free loopback ports from
//! the prebuilt binaries (simulated GPUs), and returns once the analyzer's results are
//! in its Prometheus: the test finds them there, with the recording rules evaluated and
//! the REST API answering. `down.sh` then stops every process up.sh started, and none
//! is left running. A port in use stops up.sh before it starts anything.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use poolprof_e2e::api::ApiClient;
use poolprof_e2e::bins::{bin_dir, workspace_bin};
use poolprof_e2e::ports::free_port;
use poolprof_e2e::process::output_text;
use poolprof_e2e::server::get_text;
use poolprof_e2e::wait::until;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../deploy/local/{name}"))
}

/// The environment of one local stack: its run directory and ports.
struct Stack {
    dir: tempfile::TempDir,
    ports: [(&'static str, u16); 5],
}

impl Stack {
    fn new() -> Stack {
        // The binaries must exist before the script runs: it is told not to build.
        workspace_bin("poolprof-exporter");
        workspace_bin("poolprof-analyzer");
        Stack {
            dir: tempfile::tempdir().unwrap(),
            ports: [
                ("EXPORTER_PORT", free_port()),
                ("PROMETHEUS_PORT", free_port()),
                ("PUSHGATEWAY_PORT", free_port()),
                ("ANALYZER_PORT", free_port()),
                ("API_PORT", free_port()),
            ],
        }
    }

    fn port(&self, name: &str) -> u16 {
        self.ports.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn run_dir(&self) -> PathBuf {
        self.dir.path().join("run")
    }

    fn run(&self, name: &str, args: &[&str]) -> Output {
        let mut command = Command::new("bash");
        command
            .arg(script(name))
            .args(args)
            .env("POOLPROF_LOCAL_DIR", self.run_dir())
            .env("POOLPROF_BIN_DIR", bin_dir())
            .env("FORCE_SIMULATION", "1")
            .env("POOLPROF_READY_TIMEOUT", "150")
            .env_remove("SCENARIO");
        for (var, port) in self.ports {
            command.env(var, port.to_string());
        }
        command
            .output()
            .unwrap_or_else(|e| panic!("cannot run bash {name}: {e}"))
    }

    /// `(name, pid, start time)` of each process in up.sh's state file.
    fn started(&self) -> Vec<(String, u32, String)> {
        let path = self.run_dir().join("pids");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("up.sh wrote no state file {}: {e}", path.display()));
        text.lines()
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(fields.len(), 3, "state line {line:?}");
                (
                    fields[0].to_string(),
                    fields[1].parse().unwrap(),
                    fields[2].to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // Whatever happened, stop what up.sh started.
        self.run("down.sh", &["--quiet"]);
    }
}

/// Whether `pid` is still the process started at `start` and has not exited (a zombie
/// not yet reaped by its parent has exited).
fn still_running(pid: u32, start: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let after_name = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split(' ').collect();
    fields.first() != Some(&"Z") && fields.get(19) == Some(&start)
}

#[test]
fn up_brings_analyzer_results_into_prometheus_and_down_leaves_nothing_running() {
    let stack = Stack::new();
    let up = stack.run("up.sh", &["--detach"]);
    let text = output_text(&up);
    assert!(
        up.status.success(),
        "up.sh --detach failed ({}):\n{text}",
        up.status
    );
    assert!(
        text.contains("SIMULATED"),
        "up.sh does not say the GPUs are simulated:\n{text}"
    );
    let prom_url = format!("http://127.0.0.1:{}", stack.port("PROMETHEUS_PORT"));
    assert!(
        text.contains(&prom_url),
        "up.sh does not print Prometheus' URL:\n{text}"
    );
    let started = stack.started();
    let names: Vec<&str> = started.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["exporter", "pushgateway", "prometheus", "analyzer"]);
    for (name, pid, start) in &started {
        assert!(
            still_running(*pid, start),
            "{name} (pid {pid}) is not running after up.sh"
        );
    }

    // up.sh returned only once the analyzer's results were in Prometheus: they are there
    // now, with its known answers on the simulated fleet, without waiting.
    let api = ApiClient::new(&prom_url);
    let good = api.query(
        r#"poolprof_colocation_recommendation{workload_a="chat-a",workload_b="chat-b",recommendation="good"} == 1"#,
    );
    assert_eq!(good.len(), 1, "{good:?}");
    assert_eq!(good[0].label("job"), "poolprof-analyzer");
    let avoid = api.query(
        r#"poolprof_colocation_recommendation{workload_a="big-train",workload_b="etl",mode="none",recommendation="avoid"}"#,
    );
    assert_eq!(avoid.len(), 1, "{avoid:?}");
    assert_eq!(avoid[0].value, 1.0);
    let classes = api.query("poolprof_workload_class == 1");
    assert!(classes.len() >= 4, "{classes:?}");
    // Prometheus loaded deploy/prometheus's rules, and reads the live exporter.
    let up_gpus = api.query(":poolprof_gpu_up:count");
    assert_eq!(up_gpus.len(), 1, "{up_gpus:?}");
    assert_eq!(up_gpus[0].value, 7.0, "the scenario's 7 GPUs");
    // up.sh waits for the analyzer's results only; the live exporter's first scrape may
    // come a scrape interval (5 s) later.
    until(
        "Prometheus scraping the live exporter",
        Duration::from_secs(30),
        || match api.try_query(r#"up{job="poolprof-exporter"} == 1"#) {
            Ok(rows) if rows.len() == 1 => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    // The analyzer's REST API answers.
    let health = get_text(&format!(
        "http://127.0.0.1:{}/health",
        stack.port("API_PORT")
    ));
    assert!(!health.is_empty());

    let down = stack.run("down.sh", &[]);
    assert!(
        down.status.success(),
        "down.sh failed:\n{}",
        output_text(&down)
    );
    let left: Vec<String> = started
        .iter()
        .filter(|(_, pid, start)| still_running(*pid, start))
        .map(|(name, pid, _)| format!("{name} (pid {pid})"))
        .collect();
    assert!(left.is_empty(), "down.sh left running: {left:?}");
    assert!(
        !stack.run_dir().join("pids").exists(),
        "down.sh kept the state file"
    );
}

#[test]
fn a_port_in_use_stops_up_before_it_starts_anything() {
    let stack = Stack::new();
    let taken = TcpListener::bind(("127.0.0.1", stack.port("PROMETHEUS_PORT"))).unwrap();
    let up = stack.run("up.sh", &["--detach"]);
    let text = output_text(&up);
    assert_eq!(up.status.code(), Some(1), "{text}");
    let port = taken.local_addr().unwrap().port();
    assert!(
        text.contains(&format!("port {port}")) && text.contains("PROMETHEUS_PORT="),
        "the message names neither the port nor how to pick another:\n{text}"
    );
    assert!(!stack.run_dir().join("pids").exists(), "{text}");
}
