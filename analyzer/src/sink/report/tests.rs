//! The three formats of one report, an empty report, hostile names and `GET /report`.

use std::time::Duration;

use http_body_util::BodyExt;

use super::*;
use crate::analysis::classify::{self, Thresholds};
use crate::analysis::colocate::{self, Constants};
use crate::analysis::periodicity::Period;
use crate::analysis::profile::{Coverage, ProfileSignal as S, Window, WorkloadProfile};
use crate::config::Identity;
use crate::pipeline::{Analysis, HorizonForecast, SeriesReport, WorkloadReport};

const HOSTILE: &str = "<script>alert('x')</script>";

fn workload(name: &str, duty: f64, memory: f64) -> WorkloadReport {
    let w = Window {
        start: 0.0,
        end: 600.0,
    };
    let mut profile = WorkloadProfile::new(name, Coverage::NvmlOnly)
        .with(S::Busy, duty, w)
        .with(S::SmActive, duty * 0.9, w)
        .with(S::DramActive, 0.2, w)
        .with(S::MemoryBytes, memory, w);
    profile.gpu_name = Some("NVIDIA H100 80GB HBM3".into());
    profile
        .kernel_time_by_class
        .insert("compute_bound".into(), 0.7);
    profile.kernel_time_by_class.insert("unknown".into(), 0.3);
    WorkloadReport {
        class: classify::classify(&profile, Thresholds::Roofline),
        kind: classify::workload_type(&profile),
        profile,
    }
}

fn series(owner: &str, identity: Identity) -> SeriesReport {
    SeriesReport {
        identity,
        owner: owner.into(),
        signal: "sm_active".into(),
        analysis: Analysis {
            periods: vec![Period {
                period_seconds: 300.0,
                strength: 0.8,
                confidence: 0.99,
                last_peak_seconds: Some(3000.0),
            }],
            forecasts: vec![HorizonForecast {
                horizon: Duration::from_secs(600),
                point: 0.5,
                lower: 0.3,
                upper: 0.7,
            }],
            ..Analysis::default()
        },
        recent: (0..200).map(|i| (15.0 * f64::from(i), 0.5)).collect(),
    }
}

fn report() -> RunReport {
    let workloads = vec![
        workload(HOSTILE, 0.3, 10e9),
        workload("chat-a", 0.2, 8e9),
        workload("etl", 0.9, 50e9),
    ];
    let mut pairs = Vec::new();
    for (i, a) in workloads.iter().enumerate() {
        for b in &workloads[i + 1..] {
            let (a, b) = if a.profile.workload < b.profile.workload {
                (a, b)
            } else {
                (b, a)
            };
            pairs.push(colocate::predict(
                &a.profile,
                &b.profile,
                &Constants::default(),
            ));
        }
    }
    RunReport {
        series: vec![
            series("chat-a", Identity::Workload),
            series(HOSTILE, Identity::Workload),
            series("GPU-1", Identity::Uuid),
        ],
        workloads,
        pairs,
        ..RunReport::default()
    }
}

#[test]
fn the_page_draws_every_plot_and_escapes_every_label() {
    let page = render(&report(), Format::Html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains(HOSTILE), "a raw label reached the page");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    // one signal chart per series, a kernel chart, one matrix per mode
    assert_eq!(page.matches(r#"<svg class="plot signal""#).count(), 3);
    assert_eq!(page.matches(r#"<svg class="plot kernels""#).count(), 1);
    assert_eq!(page.matches(r#"<svg class="plot matrix""#).count(), 3);
    assert_eq!(page.matches("<svg").count(), page.matches("</svg>").count());
    // self-contained: no fetch of anything, not even allowed
    assert!(page.contains("default-src 'none'"));
    for reference in [
        "src=\"http",
        "href=\"http",
        "url(",
        "@import",
        "<script",
        "<link",
    ] {
        assert!(!page.contains(reference), "{reference} in the page");
    }
}

#[test]
fn an_empty_report_renders_in_every_format_and_says_what_is_missing() {
    let empty = RunReport::default();
    let page = render(&empty, Format::Html).unwrap();
    assert!(!page.contains("<svg"), "nothing to draw: no empty charts");
    assert!(page.contains("no pair to predict"), "{page}");
    assert!(page.contains("No workload has kernel records"), "{page}");
    let json: serde_json::Value =
        serde_json::from_str(&render(&empty, Format::Json).unwrap()).unwrap();
    assert_eq!(json["owners"], serde_json::json!([]));
    assert_eq!(json["colocation"]["pairs"], serde_json::json!([]));
    let csv = render(&empty, Format::Csv).unwrap();
    assert_eq!(csv.lines().count(), 1, "the header alone: {csv}");
    assert_eq!(csv.trim_end(), csv_table::COLUMNS.join(","));
}

#[test]
fn json_and_csv_carry_the_same_data_as_the_page() {
    let r = report();
    let json: serde_json::Value = serde_json::from_str(&render(&r, Format::Json).unwrap()).unwrap();
    assert_eq!(
        json["owners"][0]["owner"], HOSTILE,
        "workloads first, by name"
    );
    assert_eq!(json["owners"][2]["identity"], "uuid");
    assert_eq!(
        json["owners"][1]["signals"][0]["points"]
            .as_array()
            .unwrap()
            .len(),
        200
    );
    assert_eq!(json["colocation"]["workloads"].as_array().unwrap().len(), 3);
    assert_eq!(json["colocation"]["pairs"].as_array().unwrap().len(), 3);

    let csv = render(&r, Format::Csv).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let count = |record: &str| rows.iter().filter(|row| &row[0] == record).count();
    assert_eq!(count("sample"), 3 * 200);
    assert_eq!(count("period"), 3);
    assert_eq!(count("forecast"), 3);
    assert_eq!((count("class"), count("type")), (3, 3));
    assert_eq!(count("kernel_time"), 3 * 2);
    assert_eq!(count("colocation"), 3 * colocate::Mode::ALL.len());
    assert_eq!(count("recommendation"), 3);
    let forecast = rows.iter().find(|row| &row[0] == "forecast").unwrap();
    // the forecast's time is the last sample's plus the horizon
    assert_eq!(
        (&forecast[6], &forecast[7], &forecast[11]),
        ("3585", "0.5", "600")
    );
    assert!(
        rows.iter().any(|row| &row[2] == HOSTILE),
        "CSV quotes, never drops, names"
    );
}

async fn body(r: Response<Full<Bytes>>) -> String {
    String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

#[tokio::test]
async fn get_report_is_503_with_a_page_until_the_first_run_then_the_page() {
    let store = ReportStore::default();
    let before = http_reply(&store);
    assert_eq!(before.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(body(before)
        .await
        .contains("No analysis run has finished yet"));
    store.publish(report());
    let after = http_reply(&store);
    assert_eq!(after.status(), StatusCode::OK);
    assert_eq!(after.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(
        body(after)
            .await
            .matches(r#"<svg class="plot matrix""#)
            .count(),
        3
    );
}
