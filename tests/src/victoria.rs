//! A real single-node VictoriaMetrics.

use std::path::Path;
use std::process::Command;

use crate::api::ApiClient;
use crate::server::{get_text, http_client, Server, ServerSpec};

/// The Debian package's binary, found on `PATH`.
pub const VICTORIA_BIN: &str = "victoria-metrics";

/// A running VictoriaMetrics; stopped and its data removed on drop.
pub struct VictoriaMetrics {
    server: Server,
    api: ApiClient,
}

impl VictoriaMetrics {
    /// Starts VictoriaMetrics with a fresh data dir; data is queryable as soon as it is
    /// imported (no latency offset, no response cache).
    pub fn start() -> VictoriaMetrics {
        let command = |port: u16, dir: &Path| {
            let mut command = Command::new(VICTORIA_BIN);
            command
                .arg(format!("-storageDataPath={}", dir.join("data").display()))
                .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
                .arg("-search.latencyOffset=0s")
                .arg("-search.disableCache")
                .arg("-retentionPeriod=100y")
                .current_dir(dir);
            command
        };
        let server = Server::start(&ServerSpec {
            name: "victoria-metrics",
            ready_path: "/health",
            command: &command,
        });
        let api = ApiClient::new(&server.url());
        VictoriaMetrics { server, api }
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`; the Prometheus query API lives under it.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The Prometheus-compatible query API.
    pub fn api(&self) -> &ApiClient {
        &self.api
    }

    /// The underlying server (log, temporary dir, process).
    pub fn server(&mut self) -> &mut Server {
        &mut self.server
    }

    /// Imports Prometheus text format (timestamps in milliseconds, optional) and flushes,
    /// so that the next query sees it; panics unless accepted.
    pub fn import_prometheus(&self, text: &str) {
        let url = format!("{}/api/v1/import/prometheus", self.url());
        let resp = http_client()
            .post(&url)
            .body(text.to_string())
            .send()
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let status = resp.status();
        assert!(
            status.is_success(),
            "POST {url} answered {status}: {}",
            resp.text().unwrap_or_default()
        );
        get_text(&format!("{}/internal/force_flush", self.url()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imported_samples_are_queryable() {
        let vm = VictoriaMetrics::start();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        // Samples lie in the past: an instant query at "now" may be rounded down to seconds.
        vm.import_prometheus(&format!(
            "poolprof_test_ratio{{uuid=\"GPU-a\"}} 0.25 {}\npoolprof_test_ratio{{uuid=\"GPU-a\"}} 0.75 {}\n",
            now_ms - 30_000,
            now_ms - 2_000
        ));
        let rows = crate::wait::until(
            "imported sample",
            std::time::Duration::from_secs(20),
            || {
                let rows = vm.api().query("poolprof_test_ratio");
                if rows.is_empty() {
                    Err("no rows".into())
                } else {
                    Ok(rows)
                }
            },
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].label("uuid"), "GPU-a");
        assert_eq!(rows[0].value, 0.75);
        let now = now_ms as f64 / 1000.0;
        let range = vm
            .api()
            .query_range("poolprof_test_ratio", now - 60.0, now, 15.0);
        assert_eq!(range.len(), 1);
        assert!(range[0].points.iter().any(|&(_, v)| v == 0.25), "{range:?}");
    }
}
