//! poolprof-exporter: NVML, GPM and CUPTI kernel metrics for Prometheus.
//!
//! Data flows backend → collector → registry → server.

pub mod app;
pub mod backend;
pub mod cli;
pub mod collector;
pub mod kernels;
pub mod kubelet;
pub mod logging;
pub mod registry;
pub mod server;
pub mod simulate;
pub mod workload;
