//! The Prometheus HTTP API's JSON envelope (`status`, `errorType`, `error`, `data`),
//! as Prometheus and VictoriaMetrics both answer it.

use std::collections::BTreeMap;

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
    values: Vec<(f64, String)>,
    #[serde(default)]
    value: Option<(f64, String)>,
}

/// Parses a `query_range` answer; the result must be a matrix.
pub fn parse_matrix(body: &[u8]) -> Result<Matrix, ResponseError> {
    let (data, warnings) = parse_envelope(body)?;
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
            let points = raw
                .values
                .iter()
                .filter_map(|(t, v)| finite_sample(*t, v, &mut dropped).transpose())
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

/// Parses an instant `query` answer; the result must be a vector. Non-finite samples
/// are left out.
pub fn parse_vector(body: &[u8]) -> Result<Vec<(Labels, f64)>, ResponseError> {
    let (data, _) = parse_envelope(body)?;
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
        if let Some((_, v)) = finite_sample(t, &v, &mut dropped)? {
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

fn parse_envelope(body: &[u8]) -> Result<(Data, Vec<String>), ResponseError> {
    let env: Envelope =
        serde_json::from_slice(body).map_err(|e| match serde_json::from_slice::<Peek>(body) {
            Ok(p) if !matches!(p.data.result_type.as_str(), "matrix" | "vector") => {
                ResponseError::ResultType {
                    got: p.data.result_type,
                }
            }
            // Valid JSON up to where the bytes stop: the body was cut short, and saying
            // so points at the proxy or server that cut it, not at the API's format.
            _ if e.is_eof() => ResponseError::Malformed(format!(
                "the response body ended early (it was truncated after {} bytes): {e}",
                body.len()
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

/// A sample's value, `None` when it is NaN or infinite (counted in `dropped`).
fn finite_sample(
    t: f64,
    v: &str,
    dropped: &mut DroppedSamples,
) -> Result<Option<(f64, f64)>, ResponseError> {
    let value: f64 = v
        .parse()
        .map_err(|_| ResponseError::Malformed(format!("sample value {v:?} is not a number")))?;
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
