//! Prometheus text format 0.0.4, written by the prometheus crate's `TextEncoder`.

use crate::registry::MetricSet;
use bytes::Bytes;
use prometheus::{Encoder, TextEncoder};

/// The Content-Type of [`text`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Encodes every family in name order. Info metrics are typed `gauge`, as 0.0.4 has
/// no `info` type; counters keep their `_total` name.
pub fn text(set: &MetricSet) -> Bytes {
    let encoder = TextEncoder::new();
    let mut out = Vec::with_capacity(set.sample_count() * 96);
    for (_, family) in set.families() {
        if family.get_metric().is_empty() {
            continue;
        }
        encoder
            .encode(std::slice::from_ref(family), &mut out)
            .expect("a named, non-empty family encodes into a Vec");
    }
    Bytes::from(out)
}
