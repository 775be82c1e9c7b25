//! The report's data as one long-format CSV table: one row per sample, period,
//! forecast, class, kernel-time share, mode score and recommendation, each row's kind
//! in its `record` column (docs/analyzer.md lists what each column holds per kind).

use super::model::ReportData;
use crate::analysis::colocate::Mode;

/// The header, in order.
pub const COLUMNS: [&str; 12] = [
    "record", "identity", "owner", "signal", "peer", "mode", "time", "value", "lower", "upper",
    "strength", "label",
];

/// One row; empty cells are `None`.
#[derive(Default)]
struct Row<'a> {
    record: &'a str,
    identity: &'a str,
    owner: &'a str,
    signal: &'a str,
    peer: &'a str,
    mode: &'a str,
    time: Option<f64>,
    value: Option<f64>,
    lower: Option<f64>,
    upper: Option<f64>,
    strength: Option<f64>,
    label: String,
}

impl Row<'_> {
    fn fields(&self) -> [String; 12] {
        let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        [
            self.record.to_string(),
            self.identity.to_string(),
            self.owner.to_string(),
            self.signal.to_string(),
            self.peer.to_string(),
            self.mode.to_string(),
            num(self.time),
            num(self.value),
            num(self.lower),
            num(self.upper),
            num(self.strength),
            self.label.clone(),
        ]
    }
}

/// `data` as CSV text with a header row.
pub fn csv_table(data: &ReportData) -> Result<String, csv::Error> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(COLUMNS)?;
    for row in rows(data) {
        out.write_record(row.fields())?;
    }
    let bytes = out.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn rows(data: &ReportData) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    for o in &data.owners {
        for s in &o.signals {
            let base = || Row {
                identity: o.identity,
                owner: &o.owner,
                signal: &s.signal,
                ..Row::default()
            };
            rows.extend(s.points.iter().map(|(t, v)| Row {
                record: "sample",
                time: Some(*t),
                value: Some(*v),
                ..base()
            }));
            rows.extend(s.periods.iter().map(|p| Row {
                record: "period",
                time: p.last_peak_seconds,
                value: Some(p.period_seconds),
                strength: Some(p.strength),
                ..base()
            }));
            let last = s.points.last().map(|p| p.0);
            rows.extend(s.forecasts.iter().map(|f| Row {
                record: "forecast",
                time: last.map(|t| t + f.horizon.as_secs_f64()),
                value: Some(f.point),
                lower: Some(f.lower),
                upper: Some(f.upper),
                label: f.horizon.as_secs_f64().to_string(),
                ..base()
            }));
        }
    }
    for w in &data.workloads {
        let base = || Row {
            identity: "workload",
            owner: &w.workload,
            ..Row::default()
        };
        rows.push(Row {
            record: "class",
            label: w.class.to_string(),
            ..base()
        });
        rows.push(Row {
            record: "type",
            label: w.kind.to_string(),
            ..base()
        });
        rows.extend(w.kernel_time_by_class.iter().map(|(class, share)| Row {
            record: "kernel_time",
            value: Some(*share),
            label: class.clone(),
            ..base()
        }));
    }
    for p in &data.colocation.pairs {
        let base = || Row {
            identity: "workload",
            owner: &p.workload_a,
            peer: &p.workload_b,
            ..Row::default()
        };
        rows.extend(p.modes.iter().map(|m| Row {
            record: "colocation",
            mode: m.mode.label(),
            value: Some(m.score),
            label: if m.feasible { "feasible" } else { "infeasible" }.to_string(),
            ..base()
        }));
        rows.push(Row {
            record: "recommendation",
            mode: p.recommended_mode.map_or("", Mode::label),
            label: p.recommendation.label().to_string(),
            ..base()
        });
    }
    rows
}
