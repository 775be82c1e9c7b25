//! Analyses: periodicity and forecasting per series; profiles, classification and
//! co-location per workload and pair.

pub mod classify;
pub mod colocate;
pub mod correlation;
pub mod extent;
pub mod findings;
#[cfg(test)]
pub mod fixtures;
pub mod forecast;
pub mod grid;
pub mod kernel_table;
pub mod occupancy;
pub mod periodicity;
pub mod profile;
pub mod roofline;
pub mod runs;
