//! OpenMetrics 1.0.0 text, written here because the prometheus crate has no encoder
//! for it. Differences from 0.0.4 that matter to us: a counter family is named
//! without `_total` while its samples keep it, info metrics have their own type,
//! timestamps are in seconds, and the exposition ends with `# EOF`.

use crate::registry::{MetricKind, MetricSet};
use bytes::Bytes;
use prometheus::proto::{Metric, MetricFamily};
use std::fmt::Write;

/// The Content-Type of [`openmetrics`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Encodes every family in name order, ending with `# EOF\n`.
pub fn openmetrics(set: &MetricSet) -> Bytes {
    let mut out = String::with_capacity(set.sample_count() * 96 + 8);
    for (kind, family) in set.families() {
        if !family.get_metric().is_empty() {
            write_family(&mut out, kind, family);
        }
    }
    out.push_str("# EOF\n");
    Bytes::from(out)
}

fn write_family(out: &mut String, kind: MetricKind, family: &MetricFamily) {
    let sample_name = family.name();
    let (family_name, type_name) = match kind {
        MetricKind::Counter => (strip(sample_name, "_total"), "counter"),
        MetricKind::Info => (strip(sample_name, "_info"), "info"),
        MetricKind::Gauge => (sample_name, "gauge"),
    };
    let _ = writeln!(out, "# TYPE {family_name} {type_name}");
    if !family.help().is_empty() {
        let _ = writeln!(out, "# HELP {family_name} {}", escape(family.help()));
    }
    for metric in family.get_metric() {
        write_sample(out, kind, sample_name, metric);
    }
}

fn strip<'a>(name: &'a str, suffix: &str) -> &'a str {
    name.strip_suffix(suffix).unwrap_or(name)
}

fn write_sample(out: &mut String, kind: MetricKind, name: &str, metric: &Metric) {
    out.push_str(name);
    let labels = metric.get_label();
    if !labels.is_empty() {
        out.push('{');
        for (i, pair) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(pair.name());
            out.push_str("=\"");
            out.push_str(&escape(pair.value()));
            out.push('"');
        }
        out.push('}');
    }
    let value = match kind {
        MetricKind::Counter => metric.get_counter().get_value(),
        MetricKind::Gauge | MetricKind::Info => metric.get_gauge().get_value(),
    };
    out.push(' ');
    write_float(out, value);
    let timestamp_ms = metric.timestamp_ms();
    if timestamp_ms != 0 {
        out.push(' ');
        out.push_str(&format_timestamp(timestamp_ms));
    }
    out.push('\n');
}

/// Escapes `\`, `"` and newlines, as OpenMetrics requires in label values and help.
pub(super) fn escape(value: &str) -> std::borrow::Cow<'_, str> {
    // A byte scan: this runs for every label value of every scrape, and a set of
    // chars as the pattern showed as an eighth of the encoder's time.
    if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        return value.into();
    }
    let mut escaped = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            _ => escaped.push(c),
        }
    }
    escaped.into()
}

/// Appends `value` as OpenMetrics spells it: the special values `+Inf`, `-Inf` and
/// `NaN`, the rest as Rust's shortest round-trip form. In place, without a string of
/// its own: this runs for every sample of every scrape.
pub(super) fn write_float(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{value}");
    }
}

/// Milliseconds since the epoch as seconds, exact to the millisecond.
pub(super) fn format_timestamp(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let abs = ms.unsigned_abs();
    let (seconds, millis) = (abs / 1000, abs % 1000);
    if millis == 0 {
        format!("{sign}{seconds}")
    } else {
        format!("{sign}{seconds}.{millis:03}")
    }
}
