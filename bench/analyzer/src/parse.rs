//! Time and peak memory of parsing one `query_range` answer, as the analyzer reads
//! Prometheus: the typed parse it uses, and a generic JSON tree as the peer.

use std::fmt::Write;
use std::time::Instant;

use poolprof_analyzer::source::prometheus::response;

use crate::speed::peak_rss_mib;

/// A `query_range` answer of `series` series of `points` samples a minute apart, with
/// values of a few significant digits, as Prometheus writes them.
fn body(series: usize, points: usize) -> String {
    let mut out = String::from(r#"{"status":"success","data":{"resultType":"matrix","result":["#);
    for s in 0..series {
        if s > 0 {
            out.push(',');
        }
        write!(
            out,
            r#"{{"metric":{{"__name__":"gpu_util","gpu":"{s}"}},"values":["#
        )
        .unwrap();
        for p in 0..points {
            let v = 50.0 + 40.0 * ((s * 31 + p) as f64 * 0.01).sin();
            let sep = if p > 0 { "," } else { "" };
            write!(out, r#"{sep}[{},"{v:.4}"]"#, 1_700_000_000 + 60 * p).unwrap();
        }
        out.push_str("]}");
    }
    out.push_str("]}}");
    out
}

/// Parses one body of `series` × `points` with `engine` (`ours` or `tree`) and prints one
/// result line: the body's size, the parse's wall time, and the peak RSS above the body.
pub fn run(engine: &str, series: usize, points: usize) {
    let body = body(series, points);
    let before = peak_rss_mib();
    let start = Instant::now();
    let samples = match engine {
        "ours" => {
            let m = response::parse_matrix(body.as_bytes()).expect("a matrix");
            m.series.iter().map(|s| s.points.len()).sum::<usize>()
        }
        "tree" => {
            let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
            v["data"]["result"].as_array().map_or(0, |r| {
                r.iter()
                    .map(|s| s["values"].as_array().map_or(0, Vec::len))
                    .sum()
            })
        }
        other => panic!("engine {other:?}: ours or tree"),
    };
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(samples, series * points);
    let (peak, mib) = (peak_rss_mib(), (1 << 20) as f64);
    println!(
        "engine={engine} series={series} points={points} body_mib={:.0} wall_s={wall:.2} peak_rss_mib={peak:.0} above_body_mib={:.0} bytes_per_sample_above_body={:.0}",
        body.len() as f64 / mib,
        peak - before,
        (peak - before) * mib / samples as f64
    );
}
