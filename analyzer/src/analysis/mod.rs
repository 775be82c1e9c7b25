//! Analyses over one series at a time: periodicity and forecasting.

pub mod forecast;
pub mod grid;
pub mod periodicity;
