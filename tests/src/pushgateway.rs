//! A real Prometheus Pushgateway.

use std::path::Path;
use std::process::Command;

use crate::exposition::{self, ExpositionSample};
use crate::server::{http_client, Server, ServerSpec};

/// The Debian package's binary, found on `PATH`.
pub const PUSHGATEWAY_BIN: &str = "prometheus-pushgateway";

/// A running Pushgateway; stopped on drop.
pub struct Pushgateway {
    server: Server,
}

impl Pushgateway {
    /// Starts a Pushgateway on a free loopback port (metrics kept in memory only).
    pub fn start() -> Pushgateway {
        let command = |port: u16, dir: &Path| {
            let mut command = Command::new(PUSHGATEWAY_BIN);
            command
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                // Debian's build defaults to /var/lib/prometheus/pushgateway.data, which
                // every test's Pushgateway would load and write: keep groups in memory.
                .arg("--persistence.file=")
                .current_dir(dir);
            command
        };
        let server = Server::start(&ServerSpec {
            name: "pushgateway",
            ready_path: "/-/ready",
            command: &command,
        });
        Pushgateway { server }
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`, as a push target.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// `host:port`, as a Prometheus scrape target.
    pub fn address(&self) -> String {
        self.server.address()
    }

    /// The underlying server (log, temporary dir, process).
    pub fn server(&mut self) -> &mut Server {
        &mut self.server
    }

    /// The Pushgateway's `/metrics` body: every pushed group plus its own metrics.
    pub fn metrics_text(&self) -> String {
        self.server.get_text("/metrics")
    }

    /// Pushed samples of metric `name` (with the `job` and grouping labels added).
    pub fn samples(&self, name: &str) -> Vec<ExpositionSample> {
        exposition::parse(&self.metrics_text())
            .unwrap_or_else(|e| panic!("{}/metrics: {e}", self.url()))
            .into_iter()
            .filter(|sample| sample.name == name)
            .collect()
    }

    /// Replaces group `job` with `text` (PUT `/metrics/job/<job>`); panics unless accepted.
    pub fn push(&self, job: &str, text: &str) {
        let url = format!("{}/metrics/job/{job}", self.url());
        let resp = http_client()
            .put(&url)
            .body(text.to_string())
            .send()
            .unwrap_or_else(|e| panic!("PUT {url}: {e}"));
        let status = resp.status();
        assert!(
            status.is_success(),
            "PUT {url} answered {status}: {}",
            resp.text().unwrap_or_default()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_then_read_back() {
        let gateway = Pushgateway::start();
        gateway.push(
            "e2e",
            "# TYPE poolprof_test_value gauge\npoolprof_test_value{a=\"b\"} 2.5\n",
        );
        let samples = gateway.samples("poolprof_test_value");
        assert_eq!(samples.len(), 1, "{samples:?}");
        assert_eq!(samples[0].value, 2.5);
        assert_eq!(samples[0].label("job"), "e2e");
        assert_eq!(samples[0].label("a"), "b");
    }
}
