//! Encodes a [`MetricSet`] once per collection into the two exposition formats the
//! server offers: Prometheus text 0.0.4 and OpenMetrics 1.0.0.

mod openmetrics;
mod text;

pub use openmetrics::{openmetrics, CONTENT_TYPE as OPENMETRICS_CONTENT_TYPE};
pub use text::{text, CONTENT_TYPE as TEXT_CONTENT_TYPE};

#[cfg(test)]
pub(crate) mod tests;
