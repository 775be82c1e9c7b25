//! The exporter binary as an operator runs it: exit codes and messages for bad
//! flags, busy ports, missing drivers and bad config, and a clean SIGTERM.

mod support;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{exporter, Running};

/// Runs to completion, killing it if it runs past `limit`.
fn run(command: &mut Command, limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("poolprof-exporter still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn unknown_flag_exits_2() {
    let output = run(exporter().arg("--no-such-flag"), Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--no-such-flag"));
}

#[test]
fn version_flag_prints_the_version() {
    let output = run(exporter().arg("--version"), Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn bad_env_value_is_a_usage_error_naming_the_flag() {
    let output = run(
        exporter()
            .env("POOLPROF_COLLECT_INTERVAL", "5ms")
            .args(["--simulate", "1"]),
        Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--collect-interval"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn port_in_use_exits_1_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    // The address comes through the environment variable, which checks that too.
    let output = run(
        exporter().env("POOLPROF_WEB_LISTEN_ADDRESS", &addr).args([
            "--simulate",
            "1",
            "--no-kernels",
        ]),
        Duration::from_secs(20),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("listen on {addr}: address already in use")),
        "{message}"
    );
    assert!(message.contains("--web.listen-address"), "{message}");
}

#[test]
fn no_driver_without_simulate_exits_1_naming_simulate() {
    let mut child = exporter()
        .args(["--web.listen-address", "127.0.0.1:0", "--no-kernels"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            // NVML started: this machine has an NVIDIA driver, so there is nothing to check.
            child.kill().unwrap();
            eprintln!("skipped: an NVIDIA driver is present");
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert_eq!(message.lines().count(), 1, "exactly one line: {message}");
    assert!(message.starts_with("error: "), "{message}");
    assert!(message.contains("--simulate"), "{message}");
    assert!(
        message.contains("libnvidia-ml.so.1") || message.contains("NVIDIA"),
        "{message}"
    );
}

/// Writes `yaml` to `file` and starts the exporter with it as its web config.
fn start_with_web_config(file: &std::path::Path, yaml: &str) -> std::process::Output {
    std::fs::write(file, yaml).unwrap();
    run(
        exporter()
            .args([
                "--simulate",
                "1",
                "--web.listen-address",
                "127.0.0.1:0",
                "--web.config.file",
            ])
            .arg(file),
        Duration::from_secs(10),
    )
}

#[test]
fn bad_web_config_exits_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("web.yml");
    let output = start_with_web_config(
        &file,
        "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  ciphers: []\n",
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("ciphers"), "{message}");

    let output = start_with_web_config(
        &file,
        "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n",
    );
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("tls_server_config.cert_file"), "{message}");
    assert!(message.contains("missing.crt"), "{message}");
}

#[test]
fn sigterm_stops_cleanly_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("inject.sock");
    let mut running = Running::start(&["--kernels.socket-path", socket.to_str().unwrap()]);
    let addr = running.addr.clone();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = running
            .get("/-/ready")
            .is_some_and(|r| r.starts_with("HTTP/1.1 200"));
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "exporter never became ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let metrics = running.get("/metrics").unwrap();
    assert!(
        metrics.contains("poolprof_exporter_build_info"),
        "{metrics}"
    );
    assert!(
        metrics.contains("collector=\"kernels\""),
        "kernel collector wired: {metrics}"
    );
    assert!(socket.exists(), "kernel socket listening");

    // SAFETY: kill(2) on our own child's pid has no memory effects in this process.
    let sent = unsafe { libc::kill(running.child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0, "SIGTERM sent");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = running.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "no exit within 10 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "port released"
    );
    assert!(!socket.exists(), "kernel socket removed on shutdown");
}

#[test]
fn simulate_subcommand_writes_openmetrics_history() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.om");
    let output = run(
        exporter()
            .args([
                "simulate",
                "--history",
                "5m",
                "--step",
                "15s",
                "--simulate",
                "2",
                "--output",
            ])
            .arg(&file),
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let history = std::fs::read_to_string(&file).unwrap();
    assert!(history.ends_with("# EOF\n"));
    assert!(
        history.contains("poolprof_gpu_up{"),
        "GPU series in the history"
    );
}

#[test]
fn simulate_subcommand_refuses_serve_flags() {
    let output = run(
        exporter().args(["--web.max-requests", "3", "simulate", "--output", "x.om"]),
        Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn unusable_explicit_kernel_socket_path_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let output = run(
        exporter()
            .args([
                "--simulate",
                "1",
                "--web.listen-address",
                "127.0.0.1:0",
                "--kernels.socket-path",
            ])
            .arg(not_a_dir.join("inject.sock")),
        Duration::from_secs(20),
    );
    let message = stderr(&output);
    assert!(matches!(output.status.code(), Some(1 | 2)), "{message}");
    assert!(message.contains("--kernels.socket-path"), "{message}");
}
