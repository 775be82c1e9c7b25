//! `serve`'s own `/metrics` endpoint: the latest results, as Prometheus scrapes them.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;

use crate::pipeline::store::ReportStore;

/// Serves the store's exposition on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    latest: ReportStore,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let handler = move |req: Request<Incoming>| {
        let answer = respond(&req, &latest);
        async move { answer }
    };
    super::http::serve(listener, "metrics", handler, shutdown).await;
}

fn respond(req: &Request<Incoming>, latest: &ReportStore) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            latest.get().exposition,
        ),
        (&Method::GET | &Method::HEAD, "/") => (
            StatusCode::OK,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"poolprof-analyzer: results on /metrics\n"),
        ),
        (&Method::GET | &Method::HEAD, _) => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"not found; results are on /metrics\n"),
        ),
        _ => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            Bytes::from_static(b"only GET and HEAD\n"),
        ),
    };
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}
