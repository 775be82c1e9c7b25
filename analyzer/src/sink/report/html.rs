//! The report as one self-contained HTML page: inline CSS and SVG only, no script, and a
//! Content-Security-Policy that forbids the page every network fetch.

use std::fmt::Write;

use super::escape::escape;
use super::format;
use super::heat_map::{heat_map, MAX_MATRIX_WORKLOADS};
use super::kernel_bars::kernel_bars;
use super::model::{OwnerSignals, ReportData};
use super::signal_plot::signal_plot;
use crate::analysis::colocate::Mode;

/// The most workloads (and, apart, GPUs) whose signals are drawn; the JSON and CSV hold all.
pub const MAX_OWNERS_DRAWN: usize = 100;

/// Nothing may be fetched: styles and images are inline, and there is no script.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'";

const STYLE: &str = "
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:18px 0 6px}p.meta{color:#555;margin:0 0 8px}
nav a{margin-right:14px}table{border-collapse:collapse;margin:6px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:10px}figure{margin:0}
figcaption{font-weight:600;margin:4px 0}.note{color:#666;font-style:italic}
svg.plot{background:#fff}svg text{font:11px system-ui,sans-serif;fill:#333}
svg .heading{font-weight:600;font-size:12px}svg .tick{fill:#555}
svg .frame{fill:#fafafa;stroke:#ccc}svg .grid{stroke:#e6e6e6}
svg .series{fill:none;stroke:#1f77b4;stroke-width:1.4}svg .sample{fill:#1f77b4}
svg .band{fill:#ff7f0e;fill-opacity:.22;stroke:none}
svg .forecast{fill:none;stroke:#ff7f0e;stroke-width:1.4;stroke-dasharray:4 3}
svg .forecast-point{fill:#ff7f0e}svg .whisker{stroke:#ff7f0e;stroke-width:1.2}
svg .now{stroke:#999;stroke-dasharray:2 3}
svg .period line{stroke:#9467bd;stroke-opacity:.35}svg .period path{fill:#9467bd}
svg .cell{stroke:#fff}svg .cell.none{fill:#eee}svg .cell-text{font-size:10px}
svg .cell-text.strong{font-weight:700}svg .share{fill:#fff;font-size:10px}
";

/// The page of `data`.
pub fn page(data: &ReportData) -> String {
    let mut html = head("poolprof report");
    let run = &data.run;
    let _ = write!(
        html,
        r##"<h1>poolprof report</h1><p class="meta">Run finished {} in {}: {} series analyzed, {} failed, {} without a forecast, {} signals with no series{}{}.</p>
<nav><a href="#colocation">Co-location</a><a href="#kernels">Kernel time</a><a href="#workloads">Workloads</a><a href="#gpus">GPUs</a></nav>"##,
        format::utc(run.finished_at),
        format::duration(run.duration_seconds),
        run.series_analyzed,
        run.series_failed,
        run.forecasts_failed,
        run.signals_empty,
        if run.profiles_failed {
            "; workload profiles failed this run (see the log)"
        } else {
            ""
        },
        if run.workloads_not_paired > 0 {
            format!(
                "; {} workloads not paired (--max-paired-workloads)",
                run.workloads_not_paired
            )
        } else {
            String::new()
        },
    );
    colocation(&mut html, data);
    kernels(&mut html, data);
    workloads(&mut html, data);
    owners(&mut html, data, "gpus", "GPUs", "uuid");
    html.push_str("</body></html>\n");
    html
}

/// The page `serve` answers on `/report` before its first run has finished.
pub fn not_ready_page() -> String {
    let mut html = head("poolprof report: not ready");
    html.push_str(
        "<h1>poolprof report</h1><p>No analysis run has finished yet: the first starts when \
         <code>serve</code> starts and takes as long as the queries and analyses do. Reload \
         this page in a moment; <code>/health</code> on the API says when it is ready.</p></body></html>\n",
    );
    html
}

fn head(title: &str) -> String {
    format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{CSP}"><meta name="viewport" content="width=device-width,initial-scale=1"><title>{}</title><style>{STYLE}</style></head><body>
"#,
        escape(title)
    )
}

fn colocation(html: &mut String, data: &ReportData) {
    html.push_str(r#"<h2 id="colocation">Co-location</h2>"#);
    let m = &data.colocation;
    if m.workloads.len() < 2 {
        html.push_str(r#"<p class="note">Fewer than two workloads were profiled running alone: no pair to predict.</p>"#);
        return;
    }
    html.push_str("<p>Each cell: the pair's score under that mode (the mean share of its speed each side keeps, colour), and the mode recommended for the pair (text, bold in its own matrix; <em>avoid</em>: keep them apart). Hover a cell for the numbers.</p>");
    if m.workloads.len() > MAX_MATRIX_WORKLOADS {
        let _ = write!(
            html,
            r#"<p class="note">The first {MAX_MATRIX_WORKLOADS} of {} workloads by name are drawn; the JSON and CSV formats hold every pair.</p>"#,
            m.workloads.len()
        );
    }
    html.push_str(r#"<div class="plots">"#);
    for mode in Mode::ALL {
        if let Some(svg) = heat_map(m, mode) {
            let _ = write!(
                html,
                "<figure><figcaption>{}</figcaption>{svg}</figure>",
                mode_title(mode)
            );
        }
    }
    html.push_str("</div>");
}

fn mode_title(mode: Mode) -> &'static str {
    match mode {
        Mode::TimeSlicing => "Time-slicing (TS)",
        Mode::Mps => "MPS",
        Mode::Mig => "MIG",
    }
}

fn kernels(html: &mut String, data: &ReportData) {
    html.push_str(r#"<h2 id="kernels">Kernel time by class</h2>"#);
    match kernel_bars(&data.workloads) {
        Some(svg) => {
            html.push_str("<p>Share of each workload's kernel time by the class its kernel names suggest.</p>");
            html.push_str(&svg);
        }
        None => html.push_str(r#"<p class="note">No workload has kernel records (the injection library was not loaded in any profiled process).</p>"#),
    }
}

fn workloads(html: &mut String, data: &ReportData) {
    html.push_str(r#"<h2 id="workloads">Workloads</h2>"#);
    if !data.workloads.is_empty() {
        html.push_str("<table><tr><th>workload</th><th>bound by</th><th>type</th></tr>");
        for w in &data.workloads {
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&w.workload),
                escape(w.class),
                escape(w.kind)
            );
        }
        html.push_str("</table>");
    }
    html.push_str("<p>Each signal over the analyzed window (blue), the strongest period's peaks (purple marks, continued into the forecast), and the forecast at each horizon with its 95% band (orange).</p>");
    owners(html, data, "", "", "workload");
}

/// The signal charts of every owner of one identity.
fn owners(html: &mut String, data: &ReportData, id: &str, title: &str, identity: &str) {
    if !id.is_empty() {
        let _ = write!(html, r#"<h2 id="{id}">{title}</h2>"#);
    }
    let all: Vec<&OwnerSignals> = data
        .owners
        .iter()
        .filter(|o| o.identity == identity)
        .collect();
    if all.is_empty() {
        html.push_str(r#"<p class="note">No series of this kind were analyzed.</p>"#);
        return;
    }
    if all.len() > MAX_OWNERS_DRAWN {
        let _ = write!(
            html,
            r#"<p class="note">The first {MAX_OWNERS_DRAWN} of {} by name are drawn; the JSON and CSV formats hold all.</p>"#,
            all.len()
        );
    }
    for o in all.iter().take(MAX_OWNERS_DRAWN) {
        let _ = write!(html, r#"<h3>{}</h3><div class="plots">"#, escape(&o.owner));
        for s in &o.signals {
            match signal_plot(s) {
                Some(svg) => html.push_str(&svg),
                None => {
                    let _ = write!(
                        html,
                        r#"<p class="note">{}: no samples kept to draw.</p>"#,
                        escape(&s.signal)
                    );
                }
            }
        }
        html.push_str("</div>");
    }
}
