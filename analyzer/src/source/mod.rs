//! Where series come from.

pub mod prometheus;
