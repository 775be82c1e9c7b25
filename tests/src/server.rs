//! An HTTP server process on a loopback port, with its own temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::ports::free_port;
use crate::process::ChildGuard;

/// How long a server may take to answer its readiness URL. Generous: CI has two cores.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How many fresh ports [`Server::start`] tries when another process took the port.
const PORT_ATTEMPTS: usize = 5;

/// Timeout of one readiness request: short, so a silent listener cannot stall the poll.
const READY_POLL_TIMEOUT: Duration = Duration::from_secs(1);

/// Timeout of one HTTP request made by the harness.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// What [`Server::start`] needs to know to run one kind of server.
pub struct ServerSpec<'a> {
    /// Human name for messages, e.g. "prometheus".
    pub name: &'a str,
    /// Path that answers 200 once the server is ready, e.g. "/-/ready".
    pub ready_path: &'a str,
    /// Builds the command for a port and the server's own temporary directory.
    pub command: &'a dyn Fn(u16, &Path) -> Command,
}

/// A running server; killed (and its temporary directory removed) on drop.
pub struct Server {
    // Field order matters: the process stops before its directory is removed.
    child: ChildGuard,
    port: u16,
    dir: TempDir,
}

impl Server {
    /// Starts the server on a free 127.0.0.1 port and waits until `ready_path` answers 200.
    ///
    /// Retries with a new port when the server reports the address in use; panics with
    /// the log tail when it exits or is not ready within [`READY_TIMEOUT`].
    pub fn start(spec: &ServerSpec) -> Server {
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix(&format!("poolprof-e2e-{}-", spec.name))
                .tempdir()
                .unwrap_or_else(|e| panic!("cannot create a temporary dir for {}: {e}", spec.name));
            let port = free_port();
            let command = (spec.command)(port, dir.path());
            let child = ChildGuard::spawn(spec.name, command, &dir.path().join("server.log"));
            let mut server = Server { child, port, dir };
            match server.wait_ready(spec.ready_path, READY_TIMEOUT) {
                Ok(()) => return server,
                Err(NotReady::PortTaken) => last_log = server.child.log_tail(),
                Err(NotReady::Failed(why)) => panic!(
                    "{} did not become ready at {}{}: {why}\n--- {} log (last lines) ---\n{}",
                    spec.name,
                    server.url(),
                    spec.ready_path,
                    spec.name,
                    server.child.log_tail()
                ),
            }
        }
        panic!(
            "{} found its port taken {PORT_ATTEMPTS} times in a row\n--- last log ---\n{last_log}",
            spec.name
        )
    }

    fn wait_ready(&mut self, ready_path: &str, timeout: Duration) -> Result<(), NotReady> {
        let url = format!("{}{ready_path}", self.url());
        let client = client_with_timeout(READY_POLL_TIMEOUT);
        let mut last = String::from("no answer yet");
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_exit_status() {
                let log = self.child.log().to_lowercase();
                if log.contains("address already in use") || log.contains("address in use") {
                    return Err(NotReady::PortTaken);
                }
                return Err(NotReady::Failed(format!("it exited with {status}")));
            }
            match client.get(&url).send() {
                Ok(resp) if resp.status().is_success() => return Ok(()),
                Ok(resp) => last = format!("HTTP {}", resp.status()),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(crate::wait::POLL_INTERVAL);
        }
        Err(NotReady::Failed(format!(
            "not ready after {}s (last answer: {last})",
            timeout.as_secs()
        )))
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port` on loopback, as a Prometheus scrape target.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Base URL without a trailing slash, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address())
    }

    /// The server's own temporary directory (data, config, log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process guard, for its log, pid or a clean SIGTERM.
    pub fn child(&mut self) -> &mut ChildGuard {
        &mut self.child
    }

    /// The last lines of the server's log, for assertion messages.
    pub fn log_tail(&self) -> String {
        self.child.log_tail()
    }

    /// Path of the server's log file.
    pub fn log_path(&self) -> PathBuf {
        self.child.log_path().to_path_buf()
    }

    /// GETs `path` and returns the body; panics on a transport error or a non-2xx status.
    pub fn get_text(&self, path: &str) -> String {
        get_text(&format!("{}{path}", self.url()))
    }
}

enum NotReady {
    PortTaken,
    Failed(String),
}

/// The blocking HTTP client the harness uses, with [`HTTP_TIMEOUT`].
pub fn http_client() -> reqwest::blocking::Client {
    client_with_timeout(HTTP_TIMEOUT)
}

fn client_with_timeout(timeout: Duration) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(timeout)
        .build()
        .expect("a default reqwest client builds")
}

/// GETs `url` and returns the body; panics with the URL, status and body otherwise.
pub fn get_text(url: &str) -> String {
    let resp = http_client()
        .get(url)
        .send()
        .unwrap_or_else(|e| panic!("GET {url} failed: {e}"));
    let status = resp.status();
    let body = resp
        .text()
        .unwrap_or_else(|e| panic!("GET {url}: cannot read the body: {e}"));
    assert!(status.is_success(), "GET {url} answered {status}: {body}");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pushgateway(port: u16, dir: &Path) -> Command {
        let mut command = Command::new("prometheus-pushgateway");
        command
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--persistence.file=") // not Debian's shared default file
            .current_dir(dir);
        command
    }

    #[test]
    fn starts_serves_and_stops() {
        let server = Server::start(&ServerSpec {
            name: "pushgateway",
            ready_path: "/-/ready",
            command: &pushgateway,
        });
        assert!(server
            .get_text("/metrics")
            .contains("pushgateway_build_info"));
        assert!(server.log_path().starts_with(server.dir()));
        let dir = server.dir().to_path_buf();
        let url = server.url();
        drop(server);
        assert!(
            !dir.exists(),
            "temporary dir {} survived drop",
            dir.display()
        );
        assert!(
            http_client().get(&url).send().is_err(),
            "{url} still answers"
        );
    }

    #[test]
    fn retries_when_the_port_is_taken() {
        // The first attempt's port is held by us, so the server must move on.
        let held = std::cell::RefCell::new(Vec::new());
        let command = |port: u16, dir: &Path| {
            if held.borrow().is_empty() {
                let taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
                held.borrow_mut().push(taken);
            }
            pushgateway(port, dir)
        };
        let server = Server::start(&ServerSpec {
            name: "pushgateway",
            ready_path: "/-/ready",
            command: &command,
        });
        let first = held.borrow()[0].local_addr().unwrap().port();
        assert_ne!(server.port(), first);
    }

    #[test]
    #[should_panic(expected = "it exited with")]
    fn a_server_that_exits_fails_with_its_log() {
        let exits = |_port: u16, _dir: &Path| {
            let mut command = Command::new("sh");
            command.args(["-c", "echo broken config; exit 3"]);
            command
        };
        Server::start(&ServerSpec {
            name: "exits",
            ready_path: "/",
            command: &exits,
        });
    }
}
