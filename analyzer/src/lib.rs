//! poolprof-analyzer: periodicity, forecasts and co-location scores for GPU workloads.
//!
//! Data flows source → analysis → sink.

pub mod analysis;
pub mod offline;
pub mod series;
pub mod source;
