//! One scraper: a kept-alive HTTP/1.1 connection (re-opened when the server closes
//! it, as HTTP/1.0 servers do after every response) sending GETs until the deadline
//! or the shared request budget runs out.

use crate::args::Target;
use crate::histogram::Histogram;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{ACCEPT, ACCEPT_ENCODING, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// Largest response body accepted; an exposition is far smaller.
const MAX_BODY: usize = 256 << 20;
/// Pause after a failed connection, so a dead target is not hammered.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// How one request went.
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Body bytes received.
    pub body: Bytes,
}

/// What one scraper saw.
#[derive(Default)]
pub struct Outcome {
    /// Latencies of the 200 responses, in µs.
    pub latencies: Histogram,
    /// Requests that failed (connect, timeout, broken connection).
    pub errors: u64,
    /// Responses other than 200.
    pub non_ok: u64,
    /// Body bytes of 200 responses.
    pub bytes: u64,
    /// The last failure, for the report.
    pub last_error: Option<String>,
    /// Whether any connection succeeded.
    pub connected: bool,
}

impl Outcome {
    /// Adds another scraper's outcome.
    pub fn merge(&mut self, other: Outcome) {
        self.latencies.merge(&other.latencies);
        self.errors += other.errors;
        self.non_ok += other.non_ok;
        self.bytes += other.bytes;
        self.connected |= other.connected;
        if other.last_error.is_some() {
            self.last_error = other.last_error;
        }
    }
}

/// Opens a connection and starts its driver task.
pub async fn connect(target: &Target) -> Result<SendRequest<Empty<Bytes>>, String> {
    let stream = TcpStream::connect(&target.authority)
        .await
        .map_err(|e| format!("connect {}: {e}", target.authority))?;
    stream.set_nodelay(true).ok();
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake {}: {e}", target.authority))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Sends one GET and reads the whole body.
pub async fn get(
    sender: &mut SendRequest<Empty<Bytes>>,
    target: &Target,
    gzip: bool,
    accept: Option<&str>,
) -> Result<Response, String> {
    let mut req = Request::get(target.path.as_str()).header(HOST, target.authority.as_str());
    if gzip {
        req = req.header(ACCEPT_ENCODING, "gzip");
    }
    if let Some(accept) = accept {
        req = req.header(ACCEPT, accept);
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("request: {e}"))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("GET {}: {e}", target.path))?;
    let status = resp.status().as_u16();
    let body = Limited::new(resp.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| format!("body of GET {}: {e}", target.path))?
        .to_bytes();
    Ok(Response { status, body })
}

/// Takes one request from the shared budget; false when it is spent.
fn take(budget: &Option<Arc<AtomicU64>>) -> bool {
    match budget {
        None => true,
        Some(b) => b
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok(),
    }
}

/// Settings shared by all scrapers.
pub struct Plan {
    /// Where to send requests.
    pub target: Target,
    /// Stop sending after this instant.
    pub deadline: Instant,
    /// Requests left in all, when bounded.
    pub budget: Option<Arc<AtomicU64>>,
    /// Pause between two requests.
    pub interval: Duration,
    /// Longest wait for one request, connection included.
    pub timeout: Duration,
    /// Send Accept-Encoding: gzip.
    pub gzip: bool,
    /// The Accept header to send, if any.
    pub accept: Option<String>,
}

/// Runs one scraper until the deadline or the budget ends. The latency of a
/// request includes opening the connection when one was needed.
pub async fn run(plan: Arc<Plan>) -> Outcome {
    let mut out = Outcome::default();
    let mut sender: Option<SendRequest<Empty<Bytes>>> = None;
    while Instant::now() < plan.deadline && take(&plan.budget) {
        let start = Instant::now();
        let attempt = tokio::time::timeout(plan.timeout, async {
            let reusable = match sender.take() {
                Some(mut s) => s.ready().await.is_ok().then_some(s),
                None => None,
            };
            let mut live = match reusable {
                Some(s) => s,
                None => connect(&plan.target).await?,
            };
            let result = get(&mut live, &plan.target, plan.gzip, plan.accept.as_deref()).await;
            if result.is_ok() {
                sender = Some(live);
            }
            result
        })
        .await
        .unwrap_or_else(|_| Err(format!("timed out after {:?}", plan.timeout)));
        let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        match attempt {
            Ok(resp) if resp.status == 200 => {
                out.connected = true;
                out.latencies.record(micros);
                out.bytes += resp.body.len() as u64;
            }
            Ok(resp) => {
                out.connected = true;
                out.non_ok += 1;
                out.last_error = Some(format!("HTTP {}", resp.status));
            }
            Err(e) => {
                out.errors += 1;
                out.last_error = Some(e);
                sender = None;
                tokio::time::sleep(RETRY_PAUSE).await;
            }
        }
        if !plan.interval.is_zero() {
            tokio::time::sleep(plan.interval).await;
        }
    }
    out
}
