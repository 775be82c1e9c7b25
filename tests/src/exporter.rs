//! The workspace's `poolprof-exporter`, started on a loopback port.

use std::path::Path;
use std::process::Command;

use crate::bins::workspace_bin;
use crate::server::{Server, ServerSpec};

/// Binary name of the exporter.
pub const EXPORTER_BIN: &str = "poolprof-exporter";

/// The UUID of simulated GPU 0: the exporter takes injection reports only for GPUs it
/// sees, so a fake library reports this one.
pub const SIM_GPU0_UUID: &str = "GPU-00000000-0000-4000-8000-000000000000";
/// [`SIM_GPU0_UUID`] as the 16 bytes the wire carries.
pub const SIM_GPU0_UUID_BYTES: [u8; 16] = [0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0];

/// A running exporter; stopped on drop.
pub struct Exporter {
    server: Server,
}

impl Exporter {
    /// Starts `poolprof-exporter ARGS --web.listen-address=127.0.0.1:PORT` and waits for
    /// `/-/ready`, which holds once a collection has succeeded.
    ///
    /// `args` choose the backend, e.g. `["--simulate", "6", "--collect-interval", "1s"]`.
    /// The exporter runs in its own temporary directory: pass file paths absolute.
    pub fn start(args: &[&str]) -> Exporter {
        let bin = workspace_bin(EXPORTER_BIN);
        let command = |port: u16, dir: &Path| {
            let mut command = Command::new(&bin);
            command
                .args(args)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .current_dir(dir);
            command
        };
        let server = Server::start(&ServerSpec {
            name: EXPORTER_BIN,
            ready_path: "/-/ready",
            command: &command,
        });
        Exporter { server }
    }

    /// `host:port`, as a Prometheus scrape target.
    pub fn address(&self) -> String {
        self.server.address()
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// The `/metrics` body (text format); panics unless 200.
    pub fn metrics_text(&self) -> String {
        self.server.get_text("/metrics")
    }

    /// The underlying server (log, temporary dir, process).
    pub fn server(&mut self) -> &mut Server {
        &mut self.server
    }

    /// The last lines of the exporter's log, for assertion messages.
    pub fn log_tail(&self) -> String {
        self.server.log_tail()
    }
}
