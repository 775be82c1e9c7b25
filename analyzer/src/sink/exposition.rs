//! A tiny builder for the Prometheus text exposition format.
//!
//! Hand-written rather than a client library's registry because one family may mix
//! label sets (GPU series carry `uuid` where workload series carry `workload`).

use std::collections::BTreeMap;
use std::fmt::Write;

/// The metric type written on the `# TYPE` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A value that goes up and down.
    Gauge,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
        }
    }
}

#[derive(Debug, Clone)]
struct Family {
    help: &'static str,
    kind: Kind,
    samples: BTreeMap<Vec<(String, String)>, f64>,
}

/// Metric families in name order, each with its samples in label order.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    families: BTreeMap<&'static str, Family>,
}

impl Exposition {
    /// An empty exposition.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Declares a family, so it has HELP and TYPE even with no samples yet.
    pub fn family(&mut self, name: &'static str, kind: Kind, help: &'static str) {
        self.families.entry(name).or_insert_with(|| Family {
            help,
            kind,
            samples: BTreeMap::new(),
        });
    }

    /// Sets one sample of a declared family; a later value for the same labels wins.
    ///
    /// # Panics
    /// When the family was not declared: a programming error, caught by the unit tests.
    pub fn set(&mut self, name: &'static str, labels: &[(&str, &str)], value: f64) {
        let family = self
            .families
            .get_mut(name)
            .unwrap_or_else(|| panic!("metric family {name} used before it was declared"));
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        labels.sort();
        family.samples.insert(labels, value);
    }

    /// The text format, families without samples left out (promtool flags empty HELP-only families).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        for (name, family) in &self.families {
            if family.samples.is_empty() {
                continue;
            }
            let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help));
            let _ = writeln!(out, "# TYPE {name} {}", family.kind.as_str());
            for (labels, value) in &family.samples {
                out.push_str(name);
                if !labels.is_empty() {
                    out.push('{');
                    for (i, (k, v)) in labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{k}=\"{}\"", escape_label(v));
                    }
                    out.push('}');
                }
                let _ = writeln!(out, " {}", format_value(*value));
            }
        }
        out
    }
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}
