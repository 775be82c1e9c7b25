//! The accept loop `serve`'s two endpoints share (`/metrics` and the REST API):
//! HTTP/1 connections on a listener, each request answered by a handler, until shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Answers every request on `listener` with `handler` until `shutdown` resolves; `name`
/// says which endpoint in the logs.
pub async fn serve<H, F>(
    listener: TcpListener,
    name: &'static str,
    handler: H,
    shutdown: impl Future<Output = ()>,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(endpoint = name, error = %e, "accept failed");
                    continue;
                }
            },
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let answer = handler(req);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(endpoint = name, %peer, error = %e, "connection ended with an error");
            }
        });
    }
}

/// Binds `addr`, naming it in the error.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}; pick a free address"))
}
