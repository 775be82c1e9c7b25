//! Starting the exporter binary in the integration tests, as an operator would.

// Each test crate uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_poolprof-exporter");

/// The binary with a clean `POOLPROF_*` environment and no stdin.
pub fn exporter() -> Command {
    let mut command = Command::new(BIN);
    for (key, _) in std::env::vars() {
        if key.starts_with("POOLPROF_") {
            command.env_remove(key);
        }
    }
    command.stdin(Stdio::null());
    command
}

/// An exporter simulating two GPUs on a free loopback port, collecting every 200 ms,
/// with its address and every line it logged; killed when dropped.
pub struct Running {
    /// The process (tests may signal it).
    pub child: Child,
    /// `127.0.0.1:PORT`, read from its start-up log line.
    pub addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Running {
    /// Starts it with `extra` flags after the common ones.
    pub fn start(extra: &[&str]) -> Self {
        let mut child = exporter()
            .args([
                "--simulate",
                "2",
                "--web.listen-address",
                "127.0.0.1:0",
                "--collect-interval",
                "200ms",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("msg=listening address=").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_string());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no address logged: {:?}", log.lock().unwrap()));
        Self { child, addr, log }
    }

    /// The whole response to `GET path` (HTTP/1.1, connection closed).
    pub fn get(&self, path: &str) -> Option<String> {
        let mut stream = std::net::TcpStream::connect(&self.addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        Some(response)
    }

    /// The body of `GET /metrics` (text format); `None` before the first collection.
    pub fn metrics(&self) -> Option<String> {
        let response = self.get("/metrics")?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        head.contains(" 200 ").then(|| body.to_string())
    }

    /// Scrapes until `done` holds for the exposition, for at most 15 s.
    pub fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let metrics = self.metrics().unwrap_or_default();
            if done(&metrics) {
                return metrics;
            }
            assert!(
                Instant::now() < deadline,
                "{what} never happened; last exposition:\n{metrics}\nlog:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// How many logged lines contain `needle`.
    pub fn log_lines_with(&self, needle: &str) -> usize {
        self.log_lines_where(|l| l.contains(needle))
    }

    /// How many logged lines satisfy `keep`.
    pub fn log_lines_where(&self, keep: impl Fn(&str) -> bool) -> usize {
        self.log.lock().unwrap().iter().filter(|l| keep(l)).count()
    }

    /// Everything logged so far.
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
