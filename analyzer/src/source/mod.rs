//! Where series come from: Prometheus-compatible servers and files.

pub mod file;
pub mod prometheus;
