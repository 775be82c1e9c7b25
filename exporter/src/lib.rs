//! poolprof-exporter: NVML, GPM and CUPTI kernel metrics for Prometheus.
//!
//! Data flows backend → collector → registry → server.

pub mod backend;
pub mod collector;
pub mod registry;
pub mod server;
pub mod workload;
