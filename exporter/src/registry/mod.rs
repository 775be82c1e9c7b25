//! Where collected metrics live between a collection and the scrapes that serve it.
//!
//! Collectors write into a [`MetricSet`]; the collection loop encodes it once into a
//! [`Snapshot`] and swaps it into the [`SnapshotStore`]; the HTTP server only reads
//! encoded bytes, so a scrape never touches NVML.

pub mod encode;
pub mod metric_set;
pub mod snapshot;

pub use metric_set::{MetricKind, MetricSet};
pub use snapshot::{Snapshot, SnapshotStore};
