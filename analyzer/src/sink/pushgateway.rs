//! Pushes a run's results to a Pushgateway: one PUT per group, so a group is replaced
//! whole or not at all.

use std::time::Duration;

use reqwest::{StatusCode, Url};

use crate::retry::{with_retries, Attempt, RetryPolicy};

/// The Pushgateway `job` of every group the analyzer pushes.
pub const JOB: &str = "poolprof-analyzer";

/// Why the Pushgateway did not take the results.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The Pushgateway answered with an error status.
    #[error("the Pushgateway at {url} refused the results with HTTP {status}: {message}; nothing of this group was changed")]
    Rejected {
        /// The group's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The Pushgateway's message.
        message: String,
    },
    /// The Pushgateway could not be reached.
    #[error("cannot reach the Pushgateway at {url} after {attempts} attempt(s): {cause}; check --push and that it is up")]
    Unreachable {
        /// The group's URL.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The transport error.
        cause: String,
    },
    /// The URL given cannot address a group.
    #[error("--push {url} cannot be used: {reason}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// A Pushgateway client for one grouping key.
#[derive(Debug, Clone)]
pub struct Pushgateway {
    http: reqwest::Client,
    group_url: Url,
    retry: RetryPolicy,
}

enum Failure {
    Transport(String),
    Status(StatusCode, String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport(e) => f.write_str(e),
            Failure::Status(s, m) => write!(f, "HTTP {s}: {m}"),
        }
    }
}

impl Pushgateway {
    /// A client for the group `job=poolprof-analyzer, instance=<instance>` at `base`.
    pub fn new(
        base: &Url,
        instance: &str,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, PushError> {
        let bad = |reason: &str| PushError::BadUrl {
            url: base.to_string(),
            reason: reason.to_string(),
        };
        if !matches!(base.scheme(), "http" | "https") {
            return Err(bad("it must start with http:// or https://"));
        }
        let mut group_url = base.clone();
        group_url
            .path_segments_mut()
            .map_err(|_| bad("it cannot take a path"))?
            .pop_if_empty()
            .extend(["metrics", "job", JOB, "instance", instance]);
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("poolprof-analyzer/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| bad(&format!("cannot build the HTTP client: {e}")))?;
        Ok(Pushgateway {
            http,
            group_url,
            retry,
        })
    }

    /// The group's URL.
    pub fn group_url(&self) -> &Url {
        &self.group_url
    }

    /// Replaces the group's metrics with `body` (text format) in one PUT.
    pub async fn replace_group(&self, body: String) -> Result<(), PushError> {
        let url = self.group_url.to_string();
        with_retries(self.retry, |_| self.put_once(body.clone()))
            .await
            .map_err(|(failure, attempts)| match failure {
                Failure::Transport(cause) => PushError::Unreachable {
                    url: url.clone(),
                    attempts,
                    cause,
                },
                Failure::Status(status, message) => PushError::Rejected {
                    url: url.clone(),
                    status: status.as_u16(),
                    message,
                },
            })
    }

    async fn put_once(&self, body: String) -> Result<(), Attempt<Failure>> {
        let resp = self
            .http
            .put(self.group_url.clone())
            .header(reqwest::header::CONTENT_TYPE, "text/plain; version=0.0.4")
            .body(body)
            .send()
            .await
            .map_err(|e| Attempt::Transient(Failure::Transport(chain(&e))))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let text = resp.text().await.unwrap_or_default();
        let message = text
            .chars()
            .take(512)
            .collect::<String>()
            .trim()
            .to_string();
        let failure = Failure::Status(status, message);
        if status.is_server_error() {
            Err(Attempt::Transient(failure))
        } else {
            Err(Attempt::Final(failure))
        }
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out = format!("{out}: {text}");
        }
        cause = c.source();
    }
    out
}
