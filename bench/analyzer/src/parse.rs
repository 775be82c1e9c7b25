//! Time and peak memory of parsing one `query_range` answer, as the analyzer reads
//! Prometheus: the typed parse from a whole body (files), the same parse streamed
//! through a reader (answers from a source, never held whole), and a generic JSON tree
//! as the peer.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::time::Instant;

use poolprof_analyzer::source::prometheus::response;

use crate::speed::peak_rss_mib;

/// Writes a `query_range` answer of `series` series of `points` samples a minute apart,
/// with values of a few significant digits, as Prometheus writes them.
fn write_body(out: &mut impl Write, series: usize, points: usize) -> io::Result<()> {
    out.write_all(br#"{"status":"success","data":{"resultType":"matrix","result":["#)?;
    for s in 0..series {
        if s > 0 {
            out.write_all(b",")?;
        }
        write!(
            out,
            r#"{{"metric":{{"__name__":"gpu_util","gpu":"{s}"}},"values":["#
        )?;
        for p in 0..points {
            let v = 50.0 + 40.0 * ((s * 31 + p) as f64 * 0.01).sin();
            let sep = if p > 0 { "," } else { "" };
            write!(out, r#"{sep}[{},"{v:.4}"]"#, 1_700_000_000 + 60 * p)?;
        }
        out.write_all(b"]}")?;
    }
    out.write_all(b"]}}")
}

/// Parses one answer of `series` × `points` with `engine` and prints one result line:
/// the answer's size, the parse's wall time, and the peak RSS above what the process
/// held before the parse (the body included for `ours` and `tree`, which take it whole;
/// `streamed` reads it from a file, as the client reads the network, so its figure is
/// all the parse takes).
pub fn run(engine: &str, series: usize, points: usize) {
    let (body, file) = match engine {
        "ours" | "tree" => {
            let mut body = Vec::new();
            write_body(&mut body, series, points).expect("in memory");
            (body, None)
        }
        "streamed" => {
            let path =
                std::env::temp_dir().join(format!("parse-bench-{}.json", std::process::id()));
            let mut out = BufWriter::new(File::create(&path).expect("a temporary file"));
            write_body(&mut out, series, points).expect("the temporary file is written");
            out.flush().expect("the temporary file is written");
            let file = File::open(&path).expect("the temporary file");
            // Unlinked now, it lives while open: nothing is left behind.
            let _ = std::fs::remove_file(&path);
            (Vec::new(), Some(file))
        }
        other => panic!("engine {other:?}: ours, streamed or tree"),
    };
    let before = peak_rss_mib();
    let start = Instant::now();
    let (samples, bytes) = match (engine, file) {
        ("ours", _) => {
            let m = response::parse_matrix(&body).expect("a matrix");
            (m.series.iter().map(|s| s.points.len()).sum(), body.len())
        }
        ("streamed", Some(file)) => {
            let bytes = file.metadata().expect("the file's size").len() as usize;
            let m = response::read_matrix(file).expect("a matrix");
            (m.series.iter().map(|s| s.points.len()).sum(), bytes)
        }
        _ => {
            let v: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
            let samples = v["data"]["result"].as_array().map_or(0, |r| {
                r.iter()
                    .map(|s| s["values"].as_array().map_or(0, Vec::len))
                    .sum()
            });
            (samples, body.len())
        }
    };
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(samples, series * points);
    let (peak, mib) = (peak_rss_mib(), (1 << 20) as f64);
    println!(
        "engine={engine} series={series} points={points} body_mib={:.0} held_whole={} wall_s={wall:.2} peak_rss_mib={peak:.0} parse_mib={:.0} bytes_per_sample={:.0}",
        bytes as f64 / mib,
        engine != "streamed",
        peak - before,
        (peak - before) * mib / samples as f64
    );
}
