//! Series from a file: CSV (values, or `timestamp,value`) or a Prometheus
//! `query_range` JSON response.
//!
//! The format is told by the first non-blank character: `{` is JSON, anything else
//! CSV. NaN and ±Inf samples are dropped and counted; anything else that is not a
//! number is an error that names the line (CSV) or the JSON path.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::series::Series;
use crate::source::prometheus::response;

/// Largest file read, in bytes: far above a week of minutely samples per series.
pub const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// What a file held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FileSeries {
    /// The series, in file order.
    pub series: Vec<Series>,
    /// Samples dropped because their value was NaN or infinite.
    pub dropped_non_finite: usize,
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file exceeds [`MAX_FILE_BYTES`].
    #[error("{path} is {bytes} bytes, over the limit of {MAX_FILE_BYTES}; split it")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// A CSV line is malformed.
    #[error("{path} line {line}: {message}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The JSON is malformed or not a `query_range` response.
    #[error("{path}: {location}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// `line L column C` for syntax errors, else a JSON path such as `data.result[0].values[3][1]`.
        location: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The response reports a query error.
    #[error("{path}: the response reports an error ({error_type}): {message}")]
    QueryFailed {
        /// The file.
        path: PathBuf,
        /// Prometheus's `errorType`.
        error_type: String,
        /// Prometheus's `error`.
        message: String,
    },
}

/// A parse failure before the path is attached.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseError {
    /// CSV: 1-based line and message.
    Csv(u64, String),
    /// JSON: location and message.
    Json(String, String),
    /// A `status: error` response: error type and message.
    Query(String, String),
}

impl ParseError {
    fn at(self, path: &Path) -> FileError {
        let path = path.to_path_buf();
        match self {
            ParseError::Csv(line, message) => FileError::Csv {
                path,
                line,
                message,
            },
            ParseError::Json(location, message) => FileError::Json {
                path,
                location,
                message,
            },
            ParseError::Query(error_type, message) => FileError::QueryFailed {
                path,
                error_type,
                message,
            },
        }
    }
}

/// Reads `path`. Rows of a one-column CSV are `values_step` seconds apart from t = 0.
pub fn read_file(path: &Path, values_step: f64) -> Result<FileSeries, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::metadata(path).map_err(io)?.len();
    if bytes > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            bytes,
        });
    }
    if let Some(found) = streamed(path).map_err(io)? {
        return Ok(found);
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    parse(&text, values_step).map_err(|e| e.at(path))
}

/// A Prometheus answer the typed parse takes whole, parsed as the file is read, so its
/// text is never held (a 109 MB answer took 181 MiB with the text); `None` for every
/// other file (CSV, a bare `data` object, an error), which [`parse`] reads from the text.
fn streamed(path: &Path) -> io::Result<Option<FileSeries>> {
    let mut file = BufReader::new(File::open(path)?);
    let first = loop {
        let buf = file.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break buf[i],
            None => {
                let blank = buf.len();
                file.consume(blank);
            }
        }
    };
    if first != b'{' {
        return Ok(None);
    }
    Ok(response::read_matrix(file).ok().and_then(whole))
}

/// Parses file contents (CSV or JSON, by the first non-blank character).
pub fn parse(text: &str, values_step: f64) -> Result<FileSeries, ParseError> {
    if text.trim_start().starts_with('{') {
        parse_query_range(text)
    } else {
        parse_csv(text, values_step)
    }
}

/// A sample value: `Ok(None)` for NaN/Inf (to be dropped), `Err` when not a number.
fn sample_value(s: &str) -> Result<Option<f64>, ()> {
    let v: f64 = s.trim().parse().map_err(|_| ())?;
    Ok(v.is_finite().then_some(v))
}

/// Parses CSV: one column of values or `timestamp,value`, an optional header row.
pub fn parse_csv(text: &str, values_step: f64) -> Result<FileSeries, ParseError> {
    // The CSV reader takes an unclosed quote as a field running to the end of the file:
    // everything after it would vanish into one field (or into a "header"), and the
    // file would read as holding no samples. Say where the quote is instead.
    if let Some(line) = unterminated_quote(text) {
        return Err(ParseError::Csv(
            line,
            "a `\"` opened here is never closed, so the rest of the file would be one field; \
             close or remove the quote"
                .to_string(),
        ));
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let mut out = FileSeries::default();
    let mut points = Vec::new();
    let mut columns: Option<usize> = None;
    let mut row = 0usize;
    for (index, record) in reader.records().enumerate() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            ParseError::Csv(line, format!("unreadable CSV: {e}"))
        })?;
        let line = record.position().map_or(index as u64 + 1, |p| p.line());
        if record.iter().all(str::is_empty) {
            continue;
        }
        let width = record.len();
        if width > 2 {
            return Err(ParseError::Csv(
                line,
                format!("{width} columns; expected one column of values or `timestamp,value`"),
            ));
        }
        if columns.is_none() && is_header(&record) {
            columns = Some(width);
            continue;
        }
        let expected = *columns.get_or_insert(width);
        if width != expected {
            return Err(ParseError::Csv(
                line,
                format!("{width} column(s) where earlier rows have {expected}"),
            ));
        }
        let (t, raw) = if width == 1 {
            (row as f64 * values_step, &record[0])
        } else {
            let t: f64 = record[0].parse().map_err(|_| {
                ParseError::Csv(
                    line,
                    format!("timestamp `{}` is not a number of unix seconds", &record[0]),
                )
            })?;
            if !t.is_finite() {
                return Err(ParseError::Csv(
                    line,
                    format!("timestamp `{}` is not finite", &record[0]),
                ));
            }
            (t, &record[1])
        };
        row += 1;
        match sample_value(raw) {
            Ok(Some(v)) => points.push((t, v)),
            Ok(None) => out.dropped_non_finite += 1,
            Err(()) => {
                return Err(ParseError::Csv(
                    line,
                    format!("value `{raw}` is not a number"),
                ));
            }
        }
    }
    if !points.is_empty() {
        out.series.push(in_time_order(BTreeMap::new(), points));
    }
    Ok(out)
}

/// The line of a quote that opens a field and is never closed, read as the CSV reader
/// reads: a quote is special only at the start of a field, `""` inside quotes is a
/// literal quote, and `#` at the start of a record begins a comment line.
fn unterminated_quote(text: &str) -> Option<u64> {
    let mut line = 1u64;
    let (mut in_quotes, mut opened) = (false, 0u64);
    let (mut field_start, mut record_start) = (true, true);
    let mut bytes = text.bytes().peekable();
    while let Some(b) = bytes.next() {
        if in_quotes {
            match b {
                b'"' if bytes.peek() == Some(&b'"') => {
                    bytes.next();
                }
                b'"' => in_quotes = false,
                b'\n' => line += 1,
                _ => {}
            }
            continue;
        }
        match b {
            b'#' if record_start => {
                for c in bytes.by_ref() {
                    if c == b'\n' {
                        line += 1;
                        break;
                    }
                }
            }
            b'"' if field_start => {
                in_quotes = true;
                opened = line;
                field_start = false;
                record_start = false;
            }
            b',' => {
                field_start = true;
                record_start = false;
            }
            b'\n' | b'\r' => {
                if b == b'\n' {
                    line += 1;
                }
                field_start = true;
                record_start = true;
            }
            _ => {
                field_start = false;
                record_start = false;
            }
        }
    }
    in_quotes.then_some(opened)
}

/// A first row with a field that is not a number (nor NaN/Inf) is a header.
fn is_header(record: &csv::StringRecord) -> bool {
    record.iter().any(|f| sample_value(f).is_err())
}

/// Parses a Prometheus `query_range` response (or its `data` object): every series
/// of the matrix.
pub fn parse_query_range(text: &str) -> Result<FileSeries, ParseError> {
    // A JSON tree takes over 200 bytes a sample, the typed parse of Prometheus' answers
    // 16; the tree is built only for what the typed parse does not take whole (a bare
    // `data` object, a series without samples, an error to place by its JSON path).
    match typed(text) {
        Some(found) => Ok(found),
        None => tree(text),
    }
}

/// `text` as the analyzer reads Prometheus' answers, where every series has samples:
/// what [`tree`] would find, in less memory.
fn typed(text: &str) -> Option<FileSeries> {
    whole(response::parse_matrix(text.as_bytes()).ok()?)
}

/// `matrix` as a file's series, when every series has samples: the tree keeps a series
/// without samples (and names it), the typed parse drops it.
fn whole(matrix: response::Matrix) -> Option<FileSeries> {
    if matrix.series.is_empty() || matrix.series.iter().any(|s| s.points.is_empty()) {
        return None;
    }
    let series = matrix
        .series
        .into_iter()
        .map(|s| in_time_order(s.labels, s.points))
        .collect();
    let dropped = matrix.dropped.nan + matrix.dropped.inf;
    Some(FileSeries {
        series,
        dropped_non_finite: dropped as usize,
    })
}

/// [`parse_query_range`] through a JSON tree, which names the path of what is wrong.
fn tree(text: &str) -> Result<FileSeries, ParseError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        ParseError::Json(
            format!("line {} column {}", e.line(), e.column()),
            format!("not valid JSON: {e}"),
        )
    })?;
    if root.get("status").and_then(Value::as_str) == Some("error") {
        let field = |k: &str| {
            root.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        return Err(ParseError::Query(field("errorType"), field("error")));
    }
    let (data, prefix) = match root.get("data") {
        Some(d) => (d, "data."),
        None => (&root, ""),
    };
    let json_err = |path: String, msg: &str| ParseError::Json(path, msg.to_string());
    match data.get("resultType").and_then(Value::as_str) {
        Some("matrix") => {}
        Some(other) => {
            return Err(json_err(
                format!("{prefix}resultType"),
                &format!("is `{other}`; export a range query (`/api/v1/query_range`), which returns a matrix"),
            ))
        }
        None => {
            return Err(json_err(
                format!("{prefix}resultType"),
                "missing; expected a Prometheus query_range response",
            ))
        }
    }
    let result = data
        .get("result")
        .and_then(Value::as_array)
        .ok_or_else(|| json_err(format!("{prefix}result"), "missing or not an array"))?;
    let mut out = FileSeries::default();
    for (i, item) in result.iter().enumerate() {
        let here = format!("{prefix}result[{i}]");
        let series = parse_matrix_item(item, &here, &mut out.dropped_non_finite)?;
        out.series.push(series);
    }
    Ok(out)
}

fn parse_matrix_item(item: &Value, here: &str, dropped: &mut usize) -> Result<Series, ParseError> {
    let err = |path: String, msg: &str| ParseError::Json(path, msg.to_string());
    let mut labels = BTreeMap::new();
    if let Some(metric) = item.get("metric") {
        let metric = metric
            .as_object()
            .ok_or_else(|| err(format!("{here}.metric"), "is not an object"))?;
        for (k, v) in metric {
            let v = v
                .as_str()
                .ok_or_else(|| err(format!("{here}.metric.{k}"), "label value is not a string"))?;
            labels.insert(k.clone(), v.to_string());
        }
    }
    let values = item
        .get("values")
        .and_then(Value::as_array)
        .ok_or_else(|| err(format!("{here}.values"), "missing or not an array"))?;
    let mut points = Vec::with_capacity(values.len());
    for (j, pair) in values.iter().enumerate() {
        let at = format!("{here}.values[{j}]");
        let pair = pair
            .as_array()
            .filter(|p| p.len() == 2)
            .ok_or_else(|| err(at.clone(), "expected [timestamp, \"value\"]"))?;
        let t = pair[0]
            .as_f64()
            .filter(|t| t.is_finite())
            .ok_or_else(|| err(format!("{at}[0]"), "timestamp is not a number"))?;
        let raw = pair[1]
            .as_str()
            .ok_or_else(|| err(format!("{at}[1]"), "value is not a string such as \"0.5\""))?;
        match sample_value(raw) {
            Ok(Some(v)) => points.push((t, v)),
            Ok(None) => *dropped += 1,
            Err(()) => {
                return Err(err(
                    format!("{at}[1]"),
                    &format!("value `{raw}` is not a number"),
                ))
            }
        }
    }
    Ok(in_time_order(labels, points))
}

/// A series of a file, its samples sorted by time: a file may hold them in any order.
fn in_time_order(labels: BTreeMap<String, String>, mut points: Vec<(f64, f64)>) -> Series {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    Series { labels, points }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_header_and_timestamps_drops_non_finite() {
        let fs = parse("time,value\n10,1.5\n20,NaN\n30,+Inf\n40,2\n", 1.0).unwrap();
        assert_eq!(fs.series.len(), 1);
        assert_eq!(fs.series[0].points, vec![(10.0, 1.5), (40.0, 2.0)]);
        assert_eq!(fs.dropped_non_finite, 2);
    }

    #[test]
    fn one_column_rows_are_spaced_by_the_step() {
        let fs = parse("3\n4\nnan\n6\n", 60.0).unwrap();
        assert_eq!(
            fs.series[0].points,
            vec![(0.0, 3.0), (60.0, 4.0), (180.0, 6.0)]
        );
    }

    #[test]
    fn bad_csv_names_the_line() {
        match parse("1,2\n2,3\n3,abc\n", 1.0) {
            Err(ParseError::Csv(3, msg)) => assert!(msg.contains("abc"), "{msg}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse("1\n2,3\n", 1.0), Err(ParseError::Csv(2, _))));
        assert!(matches!(parse("1,2,3\n", 1.0), Err(ParseError::Csv(1, _))));
        assert!(matches!(
            parse("t,v\nx,3\n", 1.0),
            Err(ParseError::Csv(2, _))
        ));
    }

    #[test]
    fn an_unterminated_quote_names_its_line() {
        for (text, line) in [
            ("value\n1\n2\n\"3\n4\n5\n", 4),
            ("\"value\n1\n2\n3\n", 1),
            ("t,v\n1,2\n2,\"3\n3,4\n", 3),
            ("# a \"comment\n1\n\"2\n", 3),
        ] {
            match parse(text, 1.0) {
                Err(ParseError::Csv(l, msg)) => {
                    assert_eq!(l, line, "{text:?}");
                    assert!(msg.contains("never closed"), "{msg}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
        // Closed quotes, quotes inside a field and quotes in comments are fine.
        let ok = parse("# say \"hi\n\"t\",\"v\"\n1,\"2\"\n2,3\n", 1.0).unwrap();
        assert_eq!(ok.series[0].points, vec![(1.0, 2.0), (2.0, 3.0)]);
        assert!(unterminated_quote("a\"b\n1\n").is_none());
        assert!(unterminated_quote("\"a\"\"b\"\n1\n").is_none());
    }

    #[test]
    fn query_range_takes_every_series_with_labels() {
        let json = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"uuid":"GPU-a"},"values":[[1,"0.5"],[2,"NaN"],[3,"0.7"]]},
            {"metric":{"uuid":"GPU-b"},"values":[[1,"1"]]}]}}"#;
        let fs = parse(json, 1.0).unwrap();
        assert_eq!(fs.series.len(), 2);
        assert_eq!(fs.series[0].labels["uuid"], "GPU-a");
        assert_eq!(fs.series[0].points, vec![(1.0, 0.5), (3.0, 0.7)]);
        assert_eq!(fs.dropped_non_finite, 1);
    }

    #[test]
    fn the_typed_parse_finds_what_the_tree_finds() {
        let answers = [
            // out of time order, NaN and +Inf, an escaped value, two series
            r#"{"status":"success","data":{"resultType":"matrix","result":[
              {"metric":{"uuid":"GPU-1"},"values":[[30,"3"],[10,"1.5"],[20,"NaN"],[40,"\u0034"]]},
              {"metric":{"uuid":"GPU-2","job":"x"},"values":[[10,"+Inf"],[20,"-2e-3"]]}]}}"#,
            // a series whose values are all NaN: the tree keeps it, empty
            r#"{"status":"success","data":{"resultType":"matrix","result":[
              {"metric":{},"values":[[10,"NaN"]]},{"metric":{},"values":[[10,"1"]]}]}}"#,
            // a value with spaces, which the tree trims
            r#"{"status":"success","data":{"resultType":"matrix","result":[
              {"metric":{},"values":[[10," 7 "]]}]}}"#,
        ];
        for text in answers {
            let found = parse_query_range(text).unwrap();
            assert_eq!(found, tree(text).unwrap(), "{text}");
        }
        let first = parse_query_range(answers[0]).unwrap();
        assert!(
            typed(answers[0]).is_some(),
            "taken whole by the typed parse"
        );
        assert_eq!(
            first.series[0].points,
            vec![(10.0, 1.5), (30.0, 3.0), (40.0, 4.0)]
        );
        assert_eq!(first.dropped_non_finite, 2);
        assert_eq!(
            parse_query_range(answers[1]).unwrap().series[0].points,
            vec![]
        );
    }

    #[test]
    fn a_file_read_as_it_is_parsed_gives_what_its_text_gives() {
        let dir = tempfile::tempdir().unwrap();
        let answer = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"uuid":"GPU-1"},"values":[[30,"3"],[10,"1.5"],[20,"NaN"]]}]}}"#;
        let files = [
            (answer.to_string(), true),
            (format!(" \n\t{answer}"), true),
            // not taken whole by the typed parse: read from the text, as before
            (
                r#"{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"]]}]}"#.into(),
                false,
            ),
            (
                r#"{"status":"error","errorType":"bad_data","error":"no"}"#.into(),
                false,
            ),
            ("t,v\n1,2\n2,3\n".into(), false),
            ("{\n\"status\": \"success\",\n\"data\": [".into(), false),
            (String::new(), false),
        ];
        for (i, (text, streams)) in files.iter().enumerate() {
            let path = dir.path().join(format!("{i}.json"));
            std::fs::write(&path, text).unwrap();
            assert_eq!(streamed(&path).unwrap().is_some(), *streams, "{text:?}");
            let read = read_file(&path, 1.0).map_err(|e| e.to_string());
            let parsed = parse(text, 1.0).map_err(|e| e.at(&path).to_string());
            assert_eq!(read, parsed, "{text:?}");
        }
    }

    #[test]
    fn bad_json_names_the_place() {
        match parse("{\n\"status\": \"success\",\n\"data\": [", 1.0) {
            Err(ParseError::Json(loc, _)) => assert!(loc.starts_with("line 3"), "{loc}"),
            other => panic!("{other:?}"),
        }
        let bad_value =
            r#"{"data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}"#;
        match parse(bad_value, 1.0) {
            Err(ParseError::Json(loc, _)) => assert_eq!(loc, "data.result[0].values[0][1]"),
            other => panic!("{other:?}"),
        }
        let enveloped = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"2"],[2,"x"]]}]}}"#;
        match parse(enveloped, 1.0) {
            Err(ParseError::Json(loc, _)) => assert_eq!(loc, "data.result[0].values[1][1]"),
            other => panic!("{other:?}"),
        }
        let vector = r#"{"data":{"resultType":"vector","result":[]}}"#;
        assert!(
            matches!(parse(vector, 1.0), Err(ParseError::Json(loc, _)) if loc == "data.resultType")
        );
        let failed = r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        assert_eq!(
            parse(failed, 1.0),
            Err(ParseError::Query("bad_data".into(), "parse error".into()))
        );
    }
}
