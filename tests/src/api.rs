//! Client for the Prometheus HTTP query API, which VictoriaMetrics serves too.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::server::http_client;

/// A label set, sorted by label name (`__name__` included when the API returns it).
pub type Labels = BTreeMap<String, String>;

/// One row of an instant query: a series' labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Labels of the series.
    pub labels: Labels,
    /// Value at the query time.
    pub value: f64,
}

impl Sample {
    /// The value of `name`, or "" when the series has no such label.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map(String::as_str).unwrap_or("")
    }
}

/// One series of a range query.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSeries {
    /// Labels of the series.
    pub labels: Labels,
    /// `(unix seconds, value)` points in time order.
    pub points: Vec<(f64, f64)>,
}

/// Why a query API call failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request did not complete.
    #[error("GET {url}: {source}")]
    Transport {
        /// The requested URL.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The server answered something other than a successful API response.
    #[error("GET {url} answered HTTP {status}: {body}")]
    Rejected {
        /// The requested URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The response body, for the error message.
        body: String,
    },
    /// The body was not the API's JSON shape.
    #[error("GET {url}: unexpected response ({why}): {body}")]
    Malformed {
        /// The requested URL.
        url: String,
        /// What was wrong.
        why: String,
        /// The response body.
        body: String,
    },
}

/// Query API of one server (Prometheus or VictoriaMetrics) at a base URL.
#[derive(Debug, Clone)]
pub struct ApiClient {
    base_url: String,
}

impl ApiClient {
    /// A client for the API under `base_url`, e.g. `http://127.0.0.1:9090`.
    pub fn new(base_url: &str) -> ApiClient {
        ApiClient {
            base_url: base_url.trim_end_matches('/').to_string(),
        }
    }

    /// The base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Instant query at the server's "now"; panics on any error.
    pub fn query(&self, promql: &str) -> Vec<Sample> {
        self.try_query(promql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Instant query at the server's "now".
    pub fn try_query(&self, promql: &str) -> Result<Vec<Sample>, ApiError> {
        self.instant(&[("query", promql.to_string())])
    }

    /// The one value `promql` returns now; an error when it returns another number of
    /// series (or the query fails).
    pub fn try_scalar(&self, promql: &str) -> Result<f64, String> {
        let rows = self.try_query(promql).map_err(|e| e.to_string())?;
        match rows.as_slice() {
            [row] => Ok(row.value),
            _ => Err(format!("{promql}: {} rows: {rows:?}", rows.len())),
        }
    }

    /// Waits up to `timeout` until `promql` returns the one value `want` (to 1e-9
    /// relative), panicking with the last answer otherwise.
    pub fn expect_scalar(&self, promql: &str, want: f64, timeout: std::time::Duration) {
        crate::wait::until(promql, timeout, || {
            let got = self.try_scalar(promql)?;
            if (got - want).abs() <= want.abs() * 1e-9 {
                Ok(())
            } else {
                Err(format!("{got} (want {want})"))
            }
        });
    }

    /// Instant query at `time` (unix seconds); panics on any error.
    pub fn query_at(&self, promql: &str, time: f64) -> Vec<Sample> {
        self.instant(&[("query", promql.to_string()), ("time", time.to_string())])
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Range query from `start` to `end` (unix seconds) every `step` seconds; panics on errors.
    pub fn query_range(&self, promql: &str, start: f64, end: f64, step: f64) -> Vec<RangeSeries> {
        self.try_query_range(promql, start, end, step)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Range query from `start` to `end` (unix seconds) every `step` seconds.
    pub fn try_query_range(
        &self,
        promql: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<RangeSeries>, ApiError> {
        let params = [
            ("query", promql.to_string()),
            ("start", start.to_string()),
            ("end", end.to_string()),
            ("step", step.to_string()),
        ];
        let (url, body, data) = self.get("/api/v1/query_range", &params)?;
        let malformed = |why: &str| ApiError::Malformed {
            url: url.clone(),
            why: why.to_string(),
            body: body.clone(),
        };
        let result = data["result"]
            .as_array()
            .ok_or_else(|| malformed("no data.result array"))?;
        result
            .iter()
            .map(|series| {
                let points = series["values"]
                    .as_array()
                    .ok_or_else(|| malformed("a series without values"))?
                    .iter()
                    .map(|point| {
                        parse_point(point).ok_or_else(|| malformed("a bad [time, value] point"))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(RangeSeries {
                    labels: parse_labels(&series["metric"]),
                    points,
                })
            })
            .collect()
    }

    /// Label sets of the series matching `selector` (`/api/v1/series`); panics on errors.
    pub fn series(&self, selector: &str) -> Vec<Labels> {
        let (url, body, data) = self
            .get("/api/v1/series", &[("match[]", selector.to_string())])
            .unwrap_or_else(|e| panic!("{e}"));
        data.as_array()
            .unwrap_or_else(|| panic!("GET {url}: data is not an array: {body}"))
            .iter()
            .map(parse_labels)
            .collect()
    }

    /// Every metric name the server knows (`/api/v1/label/__name__/values`); panics on errors.
    pub fn metric_names(&self) -> Vec<String> {
        let (url, body, data) = self
            .get("/api/v1/label/__name__/values", &[])
            .unwrap_or_else(|e| panic!("{e}"));
        data.as_array()
            .unwrap_or_else(|| panic!("GET {url}: data is not an array: {body}"))
            .iter()
            .filter_map(|name| name.as_str().map(str::to_string))
            .collect()
    }

    fn instant(&self, params: &[(&str, String)]) -> Result<Vec<Sample>, ApiError> {
        let (url, body, data) = self.get("/api/v1/query", params)?;
        let malformed = |why: &str| ApiError::Malformed {
            url: url.clone(),
            why: why.to_string(),
            body: body.clone(),
        };
        match data["resultType"].as_str() {
            Some("vector") => data["result"]
                .as_array()
                .ok_or_else(|| malformed("no data.result array"))?
                .iter()
                .map(|row| {
                    let (_, value) =
                        parse_point(&row["value"]).ok_or_else(|| malformed("a bad value"))?;
                    Ok(Sample {
                        labels: parse_labels(&row["metric"]),
                        value,
                    })
                })
                .collect(),
            Some("scalar") => {
                let (_, value) =
                    parse_point(&data["result"]).ok_or_else(|| malformed("a bad scalar"))?;
                Ok(vec![Sample {
                    labels: Labels::new(),
                    value,
                }])
            }
            _ => Err(malformed("resultType is neither vector nor scalar")),
        }
    }

    /// GETs an API path; returns the URL, the raw body and the `data` member.
    fn get(
        &self,
        path: &str,
        params: &[(&str, String)],
    ) -> Result<(String, String, Value), ApiError> {
        let url = format!("{}{path}", self.base_url);
        let request = http_client().get(&url).query(params);
        let shown = request
            .try_clone()
            .and_then(|r| r.build().ok())
            .map(|r| r.url().to_string())
            .unwrap_or_else(|| url.clone());
        let transport = |source| ApiError::Transport {
            url: shown.clone(),
            source,
        };
        let resp = request.send().map_err(transport)?;
        let status = resp.status();
        let body = resp.text().map_err(transport)?;
        let json: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if !status.is_success() || json["status"] != "success" {
            return Err(ApiError::Rejected {
                url: shown,
                status: status.as_u16(),
                body,
            });
        }
        let data = json["data"].clone();
        Ok((shown, body, data))
    }
}

fn parse_labels(metric: &Value) -> Labels {
    metric
        .as_object()
        .map(|object| {
            object
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses the API's `[unix_seconds, "value"]` pair (values are strings, NaN and ±Inf included).
fn parse_point(point: &Value) -> Option<(f64, f64)> {
    let time = point.get(0)?.as_f64()?;
    let value = point.get(1)?.as_str()?.parse().ok()?;
    Some((time, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_points_with_special_values() {
        assert_eq!(parse_point(&json!([1.5, "2.25"])), Some((1.5, 2.25)));
        assert_eq!(parse_point(&json!([1, "+Inf"])), Some((1.0, f64::INFINITY)));
        assert!(parse_point(&json!([1, "NaN"])).unwrap().1.is_nan());
        assert_eq!(parse_point(&json!([1, 2])), None);
        assert_eq!(parse_point(&json!("x")), None);
    }

    #[test]
    fn parses_labels() {
        let labels = parse_labels(&json!({"__name__": "up", "job": "a"}));
        assert_eq!(labels.get("job").map(String::as_str), Some("a"));
        assert_eq!(labels.len(), 2);
    }
}
