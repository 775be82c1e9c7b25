//! End-to-end test harness for poolprof.
//!
//! Starts real Prometheus, Pushgateway, VictoriaMetrics and the workspace's own binaries
//! on loopback ports it picks, each with its own temporary directory, and stops them
//! (kill + wait) when their guard drops. Runs `promtool` for linting and backfills.
//!
//! Setup failures panic with a message that names the server, its URL and the tail of
//! its log: in a test, a server that cannot start is a failed test, not a value to
//! handle. Query helpers come in two forms: `query` panics with the URL and the body,
//! `try_query` returns an [`api::ApiError`] for polling loops.
//!
//! ```no_run
//! use poolprof_e2e::{exporter::Exporter, prometheus::{Prometheus, PrometheusConfig}};
//! let exporter = Exporter::start(&["--simulate", "2"]);
//! let prom = Prometheus::start(&PrometheusConfig::scraping("poolprof", &exporter.address()));
//! prom.wait_for_scrapes("poolprof", 3);
//! let up = prom.api().query("up");
//! assert_eq!(up[0].value, 1.0);
//! ```

pub mod analyzer_cli;
pub mod api;
pub mod bins;
pub mod dashboards;
pub mod exporter;
pub mod exposition;
pub mod history;
pub mod history_extras;
pub mod ports;
pub mod process;
pub mod prometheus;
pub mod promtool;
pub mod pushgateway;
pub mod server;
pub mod victoria;
pub mod wait;
