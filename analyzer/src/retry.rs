//! Exponential backoff shared by the source and the sinks.

use std::time::Duration;

/// How often and how patiently a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub attempts: u32,
    /// The wait after the first failure; each later wait doubles it.
    pub initial_backoff: Duration,
    /// No single wait is longer than this.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt` (1-based; attempt 1 has none).
    pub fn backoff_before(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let doublings = (attempt - 2).min(20);
        self.initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }
}

/// Whether a failed attempt may be repeated, or its error is final.
#[derive(Debug)]
pub enum Attempt<E> {
    /// Worth trying again (timeouts, refused connections, 5xx).
    Transient(E),
    /// Trying again cannot help (4xx, malformed answers).
    Final(E),
}

/// Runs `op` until it succeeds, fails finally, or the policy's attempts are spent; the
/// error returned is the last one, with the number of attempts made.
pub async fn with_retries<T, E, F, Fut>(policy: RetryPolicy, mut op: F) -> Result<T, (E, u32)>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<T, Attempt<E>>>,
    E: std::fmt::Display,
{
    let attempts = policy.attempts.max(1);
    let mut attempt = 1;
    loop {
        tokio::time::sleep(policy.backoff_before(attempt)).await;
        match op(attempt).await {
            Ok(v) => return Ok(v),
            Err(Attempt::Final(e)) => return Err((e, attempt)),
            Err(Attempt::Transient(e)) if attempt >= attempts => return Err((e, attempt)),
            Err(Attempt::Transient(e)) => {
                tracing::warn!(attempt, error = %e, "request failed, retrying");
            }
        }
        attempt += 1;
    }
}
