//! The HTTP client for a Prometheus-compatible query API (Prometheus, VictoriaMetrics,
//! Thanos, Mimir): chunked `query_range`, instant `query`, retries and bounds.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::{StatusCode, Url};

use super::body::{self, BodyError};
use super::range::{QueryRange, POINTS_PER_CHUNK};
use super::response::{self, DroppedSamples, Labels, ResponseError};
use super::SourceError;
use crate::retry::{with_retries, Attempt, RetryPolicy};

/// Credentials sent with every request.
#[derive(Clone, Default)]
pub enum Auth {
    /// No credentials.
    #[default]
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print secrets, not even in debug logs.
        match self {
            Auth::None => f.write_str("None"),
            Auth::Bearer(_) => f.write_str("Bearer(***)"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}:***)"),
        }
    }
}

/// How to reach the source and how much to accept from it.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The API's base URL, e.g. `http://prometheus:9090` (a path prefix is kept).
    pub url: Url,
    /// Limit for one HTTP request, connect included.
    pub timeout: Duration,
    /// Retries on timeouts, connection failures and 5xx.
    pub retry: RetryPolicy,
    /// Credentials.
    pub auth: Auth,
    /// A PEM file of extra CA certificates to trust for `https` URLs.
    pub ca_file: Option<PathBuf>,
    /// The largest response body accepted, in bytes.
    pub max_body_bytes: usize,
    /// The most series one query may return (after shard filtering).
    pub max_series: usize,
}

impl ClientOptions {
    /// Defaults for `url`: 30 s timeout, 4 attempts, 256 MiB bodies, 100,000 series.
    pub fn new(url: Url) -> ClientOptions {
        ClientOptions {
            url,
            timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            auth: Auth::None,
            ca_file: None,
            max_body_bytes: 256 << 20,
            max_series: 100_000,
        }
    }
}

/// A `query_range` result: finite series merged across chunks, with what was dropped.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RangeResult {
    /// Series by their labels, samples in time order.
    pub series: BTreeMap<Labels, Vec<(f64, f64)>>,
    /// Non-finite samples left out.
    pub dropped: DroppedSamples,
}

/// A client for one source.
#[derive(Debug, Clone)]
pub struct PrometheusClient {
    http: reqwest::Client,
    options: ClientOptions,
}

impl PrometheusClient {
    /// A client for `options`; fails when the URL or CA file is unusable.
    pub fn new(options: ClientOptions) -> Result<PrometheusClient, SourceError> {
        if !matches!(options.url.scheme(), "http" | "https") {
            return Err(SourceError::Setup(format!(
                "source URL {} must start with http:// or https://",
                options.url
            )));
        }
        let mut builder = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("poolprof-analyzer/", env!("CARGO_PKG_VERSION")));
        if let Some(path) = &options.ca_file {
            let pem = std::fs::read(path).map_err(|e| {
                SourceError::Setup(format!("cannot read CA file {}: {e}", path.display()))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                SourceError::Setup(format!(
                    "CA file {} holds no usable PEM certificate: {e}",
                    path.display()
                ))
            })?;
            if certs.is_empty() {
                return Err(SourceError::Setup(format!(
                    "CA file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                    path.display()
                )));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
            .build()
            .map_err(|e| SourceError::Setup(format!("cannot build the HTTP client: {e}")))?;
        Ok(PrometheusClient { http, options })
    }

    /// The base URL this client queries.
    pub fn url(&self) -> &Url {
        &self.options.url
    }

    /// Runs `query` over `range` in chunks under the point limit, keeping only the series
    /// `keep` accepts, merged across chunks.
    pub async fn query_range(
        &self,
        query: &str,
        range: QueryRange,
        mut keep: impl FnMut(&Labels) -> bool,
    ) -> Result<RangeResult, SourceError> {
        let url = self.endpoint("api/v1/query_range");
        let mut out = RangeResult::default();
        for chunk in range.chunks(POINTS_PER_CHUNK) {
            let form = [
                ("query", query.to_string()),
                ("start", format_time(chunk.start)),
                ("end", format_time(chunk.end)),
                ("step", format_time(chunk.step)),
            ];
            let limit = self.options.max_body_bytes;
            let matrix = self
                .post(&url, &form, |resp| async move {
                    body::parse_streamed(resp, limit, response::read_matrix)
                        .await
                        .map_err(Attempt::from)?
                        .map_err(|e| Attempt::Final(Failure::Answer(e)))
                })
                .await?;
            for w in &matrix.warnings {
                tracing::warn!(url = %url, query, warning = %w, "source warning");
            }
            out.dropped.add(matrix.dropped);
            for s in matrix.series {
                if !keep(&s.labels) {
                    continue;
                }
                // Moved, not copied: a copy of every series would double the answer's
                // samples in memory while the parsed ones wait to be freed.
                match out.series.entry(s.labels) {
                    Entry::Vacant(e) => {
                        e.insert(s.points);
                    }
                    Entry::Occupied(mut e) => e.get_mut().extend(s.points),
                }
                if out.series.len() > self.options.max_series {
                    return Err(SourceError::TooManySeries {
                        url: url.to_string(),
                        query: query.to_string(),
                        limit: self.options.max_series,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Runs an instant `query` at `time` (unix seconds); finite samples only.
    pub async fn query(&self, query: &str, time: f64) -> Result<Vec<(Labels, f64)>, SourceError> {
        let url = self.endpoint("api/v1/query");
        let form = [("query", query.to_string()), ("time", format_time(time))];
        let limit = self.options.max_body_bytes;
        self.post(&url, &form, |mut resp| async move {
            let body = body::read_bounded(&mut resp, limit).await?;
            response::parse_vector(&body).map_err(|e| Attempt::Final(Failure::Answer(e)))
        })
        .await
    }

    fn endpoint(&self, path: &str) -> Url {
        let mut url = self.options.url.clone();
        let base = url.path().trim_end_matches('/').to_string();
        url.set_path(&format!("{base}/{path}"));
        url
    }

    /// POSTs a form (long PromQL fits in a body, not a URL) with retries, and reads a
    /// 2xx answer with `read`.
    async fn post<T, R>(
        &self,
        url: &Url,
        form: &[(&str, String)],
        read: impl Fn(reqwest::Response) -> R,
    ) -> Result<T, SourceError>
    where
        R: Future<Output = Result<T, Attempt<Failure>>>,
    {
        let policy = self.options.retry;
        with_retries(policy, |_| async {
            let resp = self.send(url, form).await?;
            read(resp).await
        })
        .await
        .map_err(|(e, attempts)| e.into_source_error(url, form, attempts))
    }

    /// Sends one request; the response when its status is 2xx.
    async fn send(
        &self,
        url: &Url,
        form: &[(&str, String)],
    ) -> Result<reqwest::Response, Attempt<Failure>> {
        let mut req = self.http.post(url.clone()).form(form);
        req = match &self.options.auth {
            Auth::None => req,
            Auth::Bearer(token) => req.bearer_auth(token),
            Auth::Basic { username, password } => req.basic_auth(username, Some(password)),
        };
        let mut resp = req
            .send()
            .await
            .map_err(|e| Attempt::Transient(Failure::Transport(e)))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = body::read_bounded(&mut resp, self.options.max_body_bytes).await?;
        let failure = Failure::Status {
            status,
            message: api_message(&body),
        };
        if status.is_server_error() {
            Err(Attempt::Transient(failure))
        } else {
            Err(Attempt::Final(failure))
        }
    }
}

/// What one attempt ran into, before it becomes a [`SourceError`].
#[derive(Debug)]
enum Failure {
    Transport(reqwest::Error),
    /// The status and headers arrived, the body did not in full.
    Body(reqwest::Error),
    Status {
        status: StatusCode,
        message: String,
    },
    TooLarge(usize),
    /// The body arrived and is not a usable answer.
    Answer(ResponseError),
}

impl From<BodyError> for Attempt<Failure> {
    fn from(e: BodyError) -> Attempt<Failure> {
        match e {
            BodyError::Ended(e) => Attempt::Transient(Failure::Body(e)),
            BodyError::TooLarge(limit) => Attempt::Final(Failure::TooLarge(limit)),
            BodyError::ParserStopped => Attempt::Final(Failure::Answer(ResponseError::Malformed(
                "the answer's parser stopped before it answered: a bug in poolprof-analyzer, \
                 please report it"
                    .into(),
            ))),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Transport(e) => write!(f, "{}", error_chain(e)),
            Failure::Body(e) => write!(f, "the response body ended early: {}", error_chain(e)),
            Failure::Status { status, message } => write!(f, "HTTP {status}: {message}"),
            Failure::TooLarge(limit) => write!(f, "response larger than {limit} bytes"),
            Failure::Answer(e) => write!(f, "{e}"),
        }
    }
}

impl Failure {
    fn into_source_error(self, url: &Url, form: &[(&str, String)], attempts: u32) -> SourceError {
        let query = form
            .iter()
            .find(|(k, _)| *k == "query")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        match self {
            Failure::Transport(e) => SourceError::Unreachable {
                url: url.to_string(),
                attempts,
                cause: error_chain(&e),
            },
            Failure::Body(e) => SourceError::Truncated {
                url: url.to_string(),
                attempts,
                cause: error_chain(&e),
            },
            Failure::Status { status, message } if status.is_server_error() => {
                SourceError::Unavailable {
                    url: url.to_string(),
                    attempts,
                    status: status.as_u16(),
                    message,
                }
            }
            Failure::Status { status, message } => SourceError::Query {
                url: url.to_string(),
                query,
                status: Some(status.as_u16()),
                message,
            },
            Failure::TooLarge(limit) => SourceError::TooLarge {
                url: url.to_string(),
                query,
                limit,
            },
            Failure::Answer(ResponseError::Malformed(detail)) => SourceError::BadResponse {
                url: url.to_string(),
                detail,
            },
            Failure::Answer(other) => SourceError::Query {
                url: url.to_string(),
                query,
                status: None,
                message: other.to_string(),
            },
        }
    }
}

/// The API's `error` text from an error body, or the start of the body when it is not
/// the API's JSON (a proxy's HTML page, say).
fn api_message(body: &[u8]) -> String {
    match response::parse_matrix(body) {
        Err(ResponseError::Api {
            error_type,
            message,
        }) => format!("{error_type}: {message}"),
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]);
            text.trim().to_string()
        }
    }
}

/// reqwest's error with its causes, e.g. "error sending request: connection refused".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// Unix seconds as the API takes them, to the millisecond.
fn format_time(t: f64) -> String {
    let s = format!("{t:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
