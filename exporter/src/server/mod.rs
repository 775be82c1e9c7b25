//! The HTTP server (hyper 1 on tokio): binds every `--web.listen-address` up front,
//! then serves `/metrics` and the probes over plain HTTP or TLS, with basic auth and
//! then `--web.max-requests` applied in front of the routes, and drains in-flight
//! requests on shutdown. Authentication comes first so that clients with wrong
//! passwords cannot hold the slots that authenticated scrapes need.

pub mod auth;
pub mod cert_reload;
pub mod failed_logins;
pub mod limit;
pub mod listen;
pub mod negotiate;
pub mod pem;
pub mod routes;
pub mod tls;
pub mod web_config;

use auth::{BasicAuth, Verdict};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::http::request::Parts;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use limit::RequestLimit;
use listen::ListenError;
use routes::{plain, Routes, PROBE_PATHS};
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use web_config::{WebConfig, WebConfigError};

/// Response body type of every route.
pub type Body = http_body_util::Full<Bytes>;

/// The future a [`Handler`] returns.
pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Response<Body>> + Send + 'a>>;

/// Default time a client may take to send its request headers; bounds how long a
/// slow or idle connection can occupy the server.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a TLS client may take to finish its handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default cap on open connections; beyond it new connections wait in the kernel's
/// accept queue, so a flood of idle clients cannot exhaust file descriptors.
pub const MAX_CONNECTIONS: usize = 1024;
/// How long shutdown waits for in-flight requests before giving up on them.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Answers requests that passed the limit and authentication.
pub trait Handler: Send + Sync + 'static {
    /// The response to one request (the body is never read: no route needs one).
    fn handle(&self, request: Parts) -> HandlerFuture<'_>;
}

impl Handler for Routes {
    fn handle(&self, request: Parts) -> HandlerFuture<'_> {
        let response = self.respond(&request.method, request.uri.path(), &request.headers);
        Box::pin(std::future::ready(response))
    }
}

/// Settings of the server besides the listen addresses.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// `--web.max-requests`; 0 means unlimited.
    pub max_requests: usize,
    /// The parsed `--web.config.file`, if one was given.
    pub web_config: Option<WebConfig>,
    /// How long a client may take to send its request headers.
    pub header_read_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_requests: 40,
            web_config: None,
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// A server with its TLS and auth prepared, not yet bound.
pub struct Server {
    pipeline: Arc<Pipeline>,
    tls: Option<TlsAcceptor>,
}

/// A server whose listeners are all bound; requests are answered once it serves.
pub struct BoundServer {
    server: Server,
    listeners: Vec<std::net::TcpListener>,
}

struct Pipeline {
    header_read_timeout: Duration,
    connections: Arc<Semaphore>,
    limit: RequestLimit,
    auth: Option<BasicAuth>,
    extra_headers: Vec<(HeaderName, HeaderValue)>,
    handler: Arc<dyn Handler>,
}

impl Server {
    /// Prepares TLS (loading every certificate now) and basic auth from `options`.
    pub fn new(
        options: ServerOptions,
        handler: Arc<dyn Handler>,
    ) -> Result<Server, WebConfigError> {
        let web = options.web_config.unwrap_or_default();
        for note in &web.ignored {
            tracing::warn!(file = %web.file.display(), setting = %note, "web config setting ignored");
        }
        let tls = match &web.tls {
            Some(settings) => Some(TlsAcceptor::from(tls::server_config(settings, &web.file)?)),
            None => None,
        };
        let auth = (!web.basic_auth_users.is_empty())
            .then(|| BasicAuth::new(web.basic_auth_users.clone()));
        if auth.is_some() && tls.is_none() {
            tracing::warn!(file = %web.file.display(), "basic auth without tls_server_config: passwords cross the network in clear text");
        }
        let extra_headers = web
            .headers
            .iter()
            .filter_map(|(name, value)| {
                Some((
                    HeaderName::try_from(name.as_str()).ok()?,
                    HeaderValue::try_from(value.as_str()).ok()?,
                ))
            })
            .collect();
        let pipeline = Pipeline {
            header_read_timeout: options.header_read_timeout,
            connections: Arc::new(Semaphore::new(
                options.max_connections.clamp(1, Semaphore::MAX_PERMITS),
            )),
            limit: RequestLimit::new(options.max_requests),
            auth,
            extra_headers,
            handler,
        };
        Ok(Server {
            pipeline: Arc::new(pipeline),
            tls,
        })
    }

    /// Binds every listen address; nothing is served until [`BoundServer::serve`].
    pub fn bind(self, listen_addresses: &[String]) -> Result<BoundServer, ListenError> {
        let listeners = listen::bind_all(listen_addresses)?;
        Ok(BoundServer {
            server: self,
            listeners,
        })
    }
}

impl BoundServer {
    /// The bound addresses (with the real port when port 0 was asked for).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// Serves until `shutdown` completes, then stops accepting, lets in-flight
    /// requests finish (at most [`DRAIN_TIMEOUT`]) and returns.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        // Every connection task holds a sender; the channel closes when the last ends.
        let (alive_tx, mut alive_rx) = mpsc::channel::<Infallible>(1);
        let mut acceptors = tokio::task::JoinSet::new();
        let tls_on = self.server.tls.is_some();
        for listener in self.listeners {
            let addr = listener
                .local_addr()
                .map_or_else(|e| e.to_string(), |a| a.to_string());
            match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => {
                    tracing::info!(address = %addr, tls = tls_on, "listening");
                    acceptors.spawn(accept_loop(
                        listener,
                        self.server.pipeline.clone(),
                        self.server.tls.clone(),
                        stop_rx.clone(),
                        alive_tx.clone(),
                    ));
                }
                Err(e) => tracing::error!(address = %addr, error = %e, "cannot serve listener"),
            }
        }
        drop(alive_tx);
        shutdown.await;
        let _ = stop_tx.send(true);
        while acceptors.join_next().await.is_some() {}
        if tokio::time::timeout(DRAIN_TIMEOUT, alive_rx.recv())
            .await
            .is_err()
        {
            tracing::warn!(timeout = ?DRAIN_TIMEOUT, "in-flight requests did not finish; closing them");
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    pipeline: Arc<Pipeline>,
    tls: Option<TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
    alive: mpsc::Sender<Infallible>,
) {
    loop {
        let permit = tokio::select! {
            permit = pipeline.connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
            _ = stop.wait_for(|stopped| *stopped) => return,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stopped| *stopped) => return,
        };
        let (tcp, peer) = match accepted {
            Ok(connection) => connection,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(
            tcp,
            peer,
            pipeline.clone(),
            tls.clone(),
            stop.clone(),
            (alive.clone(), permit),
        ));
    }
}

async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    pipeline: Arc<Pipeline>,
    tls: Option<TlsAcceptor>,
    stop: watch::Receiver<bool>,
    _held: (mpsc::Sender<Infallible>, OwnedSemaphorePermit),
) {
    let Some(acceptor) = tls else {
        return serve_http(tcp, peer.ip(), pipeline, stop).await;
    };
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => serve_http(stream, peer.ip(), pipeline, stop).await,
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
    }
}

async fn serve_http<I>(
    io: I,
    client: IpAddr,
    pipeline: Arc<Pipeline>,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let header_read_timeout = pipeline.header_read_timeout;
    let service = service_fn(move |request| {
        let pipeline = pipeline.clone();
        async move { Ok::<_, Infallible>(pipeline.serve(request, client).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let finished = tokio::select! {
        result = conn.as_mut() => Some(result),
        _ = stop.wait_for(|stopped| *stopped) => None,
    };
    let result = match finished {
        Some(result) => result,
        None => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

impl Pipeline {
    async fn serve(&self, request: Request<Incoming>, client: IpAddr) -> Response<Body> {
        let (parts, _body) = request.into_parts();
        let mut response = self.admit(parts, client).await;
        let headers = response.headers_mut();
        for (name, value) in &self.extra_headers {
            headers.insert(name.clone(), value.clone());
        }
        response
    }

    async fn admit(&self, parts: Parts, client: IpAddr) -> Response<Body> {
        if let Some(auth) = &self.auth {
            let header = parts.headers.get(AUTHORIZATION).map(HeaderValue::as_bytes);
            match auth.check(header, client).await {
                Verdict::Allowed => {}
                Verdict::Denied => return unauthorized(),
                Verdict::Throttled(wait) => return throttled(wait),
            }
        }
        let _slot = if PROBE_PATHS.contains(&parts.uri.path()) {
            None
        } else {
            match self.limit.try_acquire() {
                Some(slot) => Some(slot),
                None => {
                    return plain(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "too many concurrent requests (--web.max-requests): retry later\n",
                    )
                }
            }
        };
        self.handler.handle(parts).await
    }
}

fn unauthorized() -> Response<Body> {
    let mut response = plain(StatusCode::UNAUTHORIZED, "unauthorized\n");
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static(auth::CHALLENGE));
    response
}

fn throttled(wait: Duration) -> Response<Body> {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut response = plain(
        StatusCode::TOO_MANY_REQUESTS,
        format!("too many failed logins from this address: retry in {seconds} s\n"),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}
