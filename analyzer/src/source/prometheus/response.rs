//! The Prometheus HTTP API's JSON envelope (`status`, `errorType`, `error`, `data`),
//! as Prometheus and VictoriaMetrics both answer it.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufReader, Read};

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// Labels of one series, as the API returns them.
pub type Labels = BTreeMap<String, String>;

/// One series of a `matrix` result, finite samples only.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixSeries {
    /// The series' labels.
    pub labels: Labels,
    /// (unix seconds, value), in the order the API sent them.
    pub points: Vec<(f64, f64)>,
}

/// A parsed `matrix` result and what was dropped from it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Matrix {
    /// The series, finite samples only.
    pub series: Vec<MatrixSeries>,
    /// Samples dropped because they were not finite.
    pub dropped: DroppedSamples,
    /// Warnings the source attached (partial data and the like).
    pub warnings: Vec<String>,
}

/// Samples the source returned that the analyses cannot use, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DroppedSamples {
    /// `NaN` values.
    pub nan: u64,
    /// `+Inf` and `-Inf` values.
    pub inf: u64,
}

impl DroppedSamples {
    /// Adds another count to this one.
    pub fn add(&mut self, other: DroppedSamples) {
        self.nan += other.nan;
        self.inf += other.inf;
    }
}

/// How a response body failed to be a usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    /// The source answered `"status": "error"`.
    #[error("{error_type}: {message}")]
    Api {
        /// The API's `errorType` (`bad_data`, `execution`, `timeout`, ...).
        error_type: String,
        /// The API's `error` text, verbatim.
        message: String,
    },
    /// The result is of another type than the call needs (e.g. a scalar expression).
    #[error("the query returned a {got} result; it must return an instant vector (one series per identity)")]
    ResultType {
        /// The `resultType` received.
        got: String,
    },
    /// The body is not the API's JSON.
    #[error("malformed API response: {0}")]
    Malformed(String),
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(rename = "errorType", default)]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    #[serde(default)]
    result: Vec<RawSeries>,
}

#[derive(Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: Labels,
    #[serde(default)]
    values: Vec<(f64, SampleValue)>,
    #[serde(default)]
    value: Option<(f64, SampleValue)>,
}

/// A sample's value, parsed from the API's string as it is read: a `String` per sample
/// kept until the end of the parse took 64 bytes a sample, four times the sample
/// itself (a 221 MiB answer of ten million samples needed 617 MiB more;
/// `poolprof-analyzer-bench parse`).
#[derive(Debug, Clone, Copy)]
struct SampleValue(f64);

impl<'de> Deserialize<'de> for SampleValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Number;
        impl Visitor<'_> for Number {
            type Value = SampleValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sample value: a number in a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SampleValue, E> {
                v.parse()
                    .map(SampleValue)
                    .map_err(|_| E::custom(format!("sample value {v:?} is not a number")))
            }
        }
        d.deserialize_str(Number)
    }
}

/// Parses a `query_range` answer; the result must be a matrix.
pub fn parse_matrix(body: &[u8]) -> Result<Matrix, ResponseError> {
    let parsed = serde_json::from_slice(body);
    matrix(envelope(parsed, body, body.len())?)
}

/// Parses a `query_range` answer as it is read, so that the body is never held whole:
/// only the samples parsed so far (16 bytes each) and a buffer.
pub fn read_matrix(reader: impl Read) -> Result<Matrix, ResponseError> {
    let mut head = Head::new(reader);
    let parsed = serde_json::from_reader(BufReader::with_capacity(64 << 10, &mut head));
    // A small answer that failed (an error, a scalar result) is read to its end, to be
    // read again whole and say what it is.
    let whole = match parsed {
        Err(_) if head.rest_fits() => &head.bytes[..],
        _ => &[],
    };
    matrix(envelope(parsed, whole, head.read)?)
}

fn matrix((data, warnings): (Data, Vec<String>)) -> Result<Matrix, ResponseError> {
    if data.result_type != "matrix" {
        return Err(ResponseError::ResultType {
            got: data.result_type,
        });
    }
    let mut dropped = DroppedSamples::default();
    let series = data
        .result
        .into_iter()
        .map(|raw| {
            // (f64, SampleValue) and (f64, f64) have one layout, so this collect
            // reuses the parsed samples' memory
            let points = raw
                .values
                .into_iter()
                .filter_map(|(t, v)| finite_sample(t, v, &mut dropped).transpose())
                .collect::<Result<Vec<_>, _>>()?;
            Ok(MatrixSeries {
                labels: raw.metric,
                points,
            })
        })
        .collect::<Result<Vec<_>, ResponseError>>()?;
    Ok(Matrix {
        series,
        dropped,
        warnings,
    })
}

/// Bytes of a streamed answer kept to explain a failed parse: an API error or a scalar
/// result is far smaller.
const HEAD_BYTES: usize = 64 << 10;

/// A reader that counts what passes and keeps its first [`HEAD_BYTES`].
struct Head<R> {
    inner: R,
    bytes: Vec<u8>,
    read: usize,
}

impl<R: Read> Head<R> {
    fn new(inner: R) -> Head<R> {
        Head {
            inner,
            bytes: Vec::new(),
            read: 0,
        }
    }
}

impl<R: Read> Head<R> {
    /// Reads on to the end; whether everything read fits in [`HEAD_BYTES`].
    fn rest_fits(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        while self.read <= HEAD_BYTES {
            match self.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }
}

impl<R: Read> Read for Head<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let keep = n.min(HEAD_BYTES.saturating_sub(self.bytes.len()));
        self.bytes.extend_from_slice(&buf[..keep]);
        self.read += n;
        Ok(n)
    }
}

/// Parses an instant `query` answer; the result must be a vector. Non-finite samples
/// are left out.
pub fn parse_vector(body: &[u8]) -> Result<Vec<(Labels, f64)>, ResponseError> {
    let (data, _) = envelope(serde_json::from_slice(body), body, body.len())?;
    if data.result_type != "vector" {
        return Err(ResponseError::ResultType {
            got: data.result_type,
        });
    }
    let mut dropped = DroppedSamples::default();
    let mut out = Vec::with_capacity(data.result.len());
    for raw in data.result {
        let Some((t, v)) = raw.value else {
            return Err(ResponseError::Malformed(
                "a vector sample has no \"value\"".into(),
            ));
        };
        if let Some((_, v)) = finite_sample(t, v, &mut dropped)? {
            out.push((raw.metric, v));
        }
    }
    Ok(out)
}

/// Just the `resultType`, read when the full parse fails: a scalar or string result
/// does not fit the series shape, and deserves a clearer message than a JSON error.
#[derive(Deserialize)]
struct Peek {
    data: PeekData,
}

#[derive(Deserialize)]
struct PeekData {
    #[serde(rename = "resultType")]
    result_type: String,
}

/// The envelope's data and warnings, or what the answer is instead. `whole` is the body
/// when it is at hand (empty when it was streamed past), `len` its length in bytes.
fn envelope(
    parsed: serde_json::Result<Envelope>,
    whole: &[u8],
    len: usize,
) -> Result<(Data, Vec<String>), ResponseError> {
    let env = parsed.map_err(|e| match serde_json::from_slice::<Peek>(whole) {
        Ok(p) if !matches!(p.data.result_type.as_str(), "matrix" | "vector") => {
            ResponseError::ResultType {
                got: p.data.result_type,
            }
        }
        // Valid JSON up to where the bytes stop: the body was cut short, and saying
        // so points at the proxy or server that cut it, not at the API's format.
        _ if e.is_eof() => ResponseError::Malformed(format!(
            "the response body ended early (it was truncated after {len} bytes): {e}"
        )),
        _ => ResponseError::Malformed(e.to_string()),
    })?;
    match env.status.as_str() {
        "success" => env.data.map(|d| (d, env.warnings)).ok_or_else(|| {
            ResponseError::Malformed("\"status\":\"success\" without \"data\"".into())
        }),
        "error" => Err(ResponseError::Api {
            error_type: env.error_type.unwrap_or_else(|| "unknown".into()),
            message: env.error.unwrap_or_default(),
        }),
        other => Err(ResponseError::Malformed(format!(
            "unknown \"status\" {other:?}"
        ))),
    }
}

/// A sample, `None` when its value is NaN or infinite (counted in `dropped`).
fn finite_sample(
    t: f64,
    SampleValue(value): SampleValue,
    dropped: &mut DroppedSamples,
) -> Result<Option<(f64, f64)>, ResponseError> {
    if value.is_nan() {
        dropped.nan += 1;
        Ok(None)
    } else if value.is_infinite() {
        dropped.inf += 1;
        Ok(None)
    } else if !t.is_finite() {
        Err(ResponseError::Malformed(format!(
            "sample timestamp {t} is not finite"
        )))
    } else {
        Ok(Some((t, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(values: &str) -> String {
        format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"gpu":"0"}},"values":{values}}}]}}}}"#
        )
    }

    #[test]
    fn samples_are_parsed_and_the_non_finite_counted_not_kept() {
        let body =
            matrix(r#"[[10,"1.5"],[20,"NaN"],[30,"+Inf"],[40,"-Inf"],[50,"\u0032"],[60,"-3e2"]]"#);
        let m = parse_matrix(body.as_bytes()).unwrap();
        assert_eq!(
            m.series[0].points,
            vec![(10.0, 1.5), (50.0, 2.0), (60.0, -300.0)]
        );
        assert_eq!(m.dropped, DroppedSamples { nan: 1, inf: 2 });
    }

    #[test]
    fn a_value_that_is_not_a_number_names_itself() {
        for (values, says) in [
            (
                r#"[[10,"1.5"],[20,"busy"]]"#,
                "sample value \"busy\" is not a number",
            ),
            (r#"[[10,1.5]]"#, "a number in a string"),
        ] {
            let err = parse_matrix(matrix(values).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("malformed API response"), "{err}");
            assert!(
                err.contains("\"busy\" is not a number") || err.contains("a number in a string"),
                "{err}"
            );
            assert!(err.contains(says), "{err}");
        }
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#;
        let err = parse_vector(vector.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("sample value \"x\" is not a number"), "{err}");
    }

    /// A reader that hands out a few bytes at a time, as a network does.
    struct Dribble<'a>(&'a [u8], usize);

    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_streamed_answer_reads_as_the_whole_one() {
        let long: Vec<String> = (0..20_000).map(|i| format!("[{i},\"{i}.5\"]")).collect();
        for body in [
            matrix(r#"[[10,"1.5"],[20,"NaN"],[30,"+Inf"],[50,"\u0032"]]"#),
            matrix(&format!("[{}]", long.join(","))),
            r#"{"status":"success","warnings":["partial"],"data":{"result":[],"resultType":"matrix"}}"#.into(),
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}"#.into(),
            r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#.into(),
            r#"{"status":"success","data":{"resultType":"matrix","res"#.into(),
            matrix(r#"[[10,"busy"]]"#),
            format!("{} trailing", matrix("[]")),
        ] {
            let whole = parse_matrix(body.as_bytes());
            let streamed = read_matrix(Dribble(body.as_bytes(), 0));
            assert_eq!(streamed, whole, "{body:.200}");
        }
        assert_eq!(
            read_matrix(Dribble(
                matrix(&format!("[{}]", long.join(","))).as_bytes(),
                0
            ))
            .unwrap()
            .series[0]
                .points
                .len(),
            20_000
        );
    }

    #[test]
    fn a_long_streamed_answer_that_ends_early_says_so_with_its_length() {
        let long: Vec<String> = (0..20_000).map(|i| format!("[{i},\"{i}.5\"]")).collect();
        let body = matrix(&format!("[{}]", long.join(",")));
        let cut = &body.as_bytes()[..200_000];
        let err = read_matrix(Dribble(cut, 0)).unwrap_err().to_string();
        assert!(
            err.contains("ended early (it was truncated after 200000 bytes)"),
            "{err}"
        );
    }
}
