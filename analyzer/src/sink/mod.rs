//! Where results go: the Pushgateway (cron) or the analyzer's own `/metrics` (serve).

pub mod api;
pub mod exposition;
pub mod http;
pub mod metrics;
pub mod pushgateway;
pub mod report;
pub mod results;
pub mod workloads;
