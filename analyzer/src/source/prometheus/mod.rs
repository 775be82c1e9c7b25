//! The Prometheus HTTP API as a source: client, response parsing and range chunking.

pub mod body;
pub mod client;
pub mod range;
pub mod response;

pub use client::{Auth, ClientOptions, PrometheusClient, RangeResult};
pub use range::{choose_step, QueryRange};

use crate::exit_code::ExitCode;

/// Why the source could not answer a query.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// No connection or no answer in time, after every retry.
    #[error("cannot reach the source at {url} after {attempts} attempt(s): {cause}; check --prometheus and that the server is up")]
    Unreachable {
        /// The URL called.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The transport error.
        cause: String,
    },
    /// The source answered, but the body ended before its declared end (a proxy or the
    /// server cut it short), after every retry.
    #[error("the response body from the source at {url} ended early (it was truncated) after {attempts} attempt(s): {cause}; the server or a proxy in between cut the answer short: check their timeouts and size limits")]
    Truncated {
        /// The URL called.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The transport error that ended the body.
        cause: String,
    },
    /// The source kept answering 5xx.
    #[error(
        "the source at {url} failed with HTTP {status} after {attempts} attempt(s): {message}"
    )]
    Unavailable {
        /// The URL called.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The last HTTP status.
        status: u16,
        /// The source's error text.
        message: String,
    },
    /// The source refused the query (bad PromQL, a wrong result type, bad credentials).
    #[error("the source at {url} refused query {query:?}{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Query {
        /// The URL called.
        url: String,
        /// The PromQL sent.
        query: String,
        /// The HTTP status, when the refusal was not a 200 with `"status":"error"`.
        status: Option<u16>,
        /// The source's own message, verbatim.
        message: String,
    },
    /// The answer is larger than allowed.
    #[error("the source at {url} answered query {query:?} with more than {limit} bytes; narrow the query, shorten the lookback, use --shard or raise max_body_bytes")]
    TooLarge {
        /// The URL called.
        url: String,
        /// The PromQL sent.
        query: String,
        /// The byte limit.
        limit: usize,
    },
    /// The query matched more series than allowed.
    #[error("query {query:?} at {url} returned more than {limit} series; narrow the query, use --shard or raise max_series")]
    TooManySeries {
        /// The URL called.
        url: String,
        /// The PromQL sent.
        query: String,
        /// The series limit.
        limit: usize,
    },
    /// The answer is not the API's JSON (or the JSON ends early).
    #[error("the source at {url} sent a malformed answer: {detail}; is this a Prometheus-compatible query API?")]
    BadResponse {
        /// The URL called.
        url: String,
        /// What was wrong with it.
        detail: String,
    },
    /// The client could not be set up (URL scheme, CA file).
    #[error("{0}")]
    Setup(String),
}

impl SourceError {
    /// The exit code DESIGN.md assigns: 3 when the source is unreachable or broken
    /// (no answer, 5xx, a truncated or malformed body), 2 for a bad query or setup.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            // A source that answers garbage is as unusable as one that does not answer:
            // the fix is on the source's side (or the URL), not in the analyzer.
            SourceError::Unreachable { .. }
            | SourceError::Unavailable { .. }
            | SourceError::Truncated { .. }
            | SourceError::BadResponse { .. } => ExitCode::SourceUnreachable,
            SourceError::Query { .. }
            | SourceError::TooLarge { .. }
            | SourceError::TooManySeries { .. }
            | SourceError::Setup(_) => ExitCode::Usage,
        }
    }
}
