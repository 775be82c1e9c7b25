//! poolprof-analyzer: periodicity and forecasts for GPU workloads, from Prometheus.
//!
//! Data flows source → analysis → sink.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod config;
pub mod error;
pub mod exit_code;
pub mod kernels_cmd;
pub mod offline;
pub mod pipeline;
pub mod retry;
pub mod series;
pub mod shard;
pub mod sink;
pub mod source;
pub mod workloads_cmd;
