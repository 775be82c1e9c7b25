//! The report for people: `poolprof-analyzer report --output FILE --format html|json|csv`
//! and `serve`'s `GET /report`. One model ([`model::ReportData`], built from a run's
//! report) rendered three ways: a self-contained HTML page of inline SVG plots, the
//! model as JSON, and one long-format CSV table.

pub mod csv_table;
pub mod escape;
pub mod format;
pub mod heat_map;
pub mod html;
pub mod kernel_bars;
pub mod model;
pub mod scale;
pub mod signal_plot;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Response, StatusCode};

use crate::pipeline::store::ReportStore;
use crate::pipeline::RunReport;
use model::ReportData;

/// How the report is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One self-contained HTML page.
    Html,
    /// The report's data as JSON.
    Json,
    /// The report's data as one long-format CSV table.
    Csv,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(Format::Html),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            other => Err(format!(
                "unknown report format {other:?}; use html, json or csv"
            )),
        }
    }
}

/// `report` in `format`.
pub fn render(report: &RunReport, format: Format) -> Result<String, String> {
    let data = ReportData::from_run(report);
    match format {
        Format::Html => Ok(html::page(&data)),
        Format::Json => serde_json::to_string_pretty(&data)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(|e| format!("cannot write the report as JSON: {e}")),
        Format::Csv => {
            csv_table::csv_table(&data).map_err(|e| format!("cannot write the report as CSV: {e}"))
        }
    }
}

/// `GET /report`: the latest run's page, or 503 with a page saying why before the first run.
pub fn http_reply(store: &ReportStore) -> Response<Full<Bytes>> {
    let snapshot = store.get();
    let (status, body) = if snapshot.ready {
        (
            StatusCode::OK,
            html::page(&ReportData::from_run(&snapshot.report)),
        )
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, html::not_ready_page())
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests;
