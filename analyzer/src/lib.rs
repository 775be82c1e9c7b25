//! poolprof-analyzer: periodicity, forecasts and co-location scores for GPU workloads.
//!
//! Data flows source → analysis → sink.

pub mod analysis;
pub mod series;
