//! Where collected metrics live between a collection and the scrapes that serve it.
//!
//! Collectors write into a [`MetricSet`]; the collection loop swaps it, as a
//! [`Snapshot`], into the [`SnapshotStore`]; the first scrape asking for a format
//! encodes the snapshot in it (and gzips it) once, so a scrape never touches NVML.

pub mod encode;
pub mod gzip;
pub mod metric_set;
pub mod snapshot;

pub use metric_set::{MetricKind, MetricSet};
pub use snapshot::{Snapshot, SnapshotStore};
