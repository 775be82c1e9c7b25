//! What each path answers: `/metrics`, the landing page, and the health probes.

use super::negotiate::{accepts_gzip, choose_format, Format};
use super::Body;
use crate::registry::SnapshotStore;
use bytes::Bytes;
use hyper::header::{
    HeaderMap, HeaderValue, ACCEPT, ACCEPT_ENCODING, ALLOW, CONTENT_ENCODING, CONTENT_TYPE, VARY,
};
use hyper::{Method, Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;

/// Paths that answer without taking a `--web.max-requests` slot, so a liveness or
/// readiness probe is never failed by scrape load.
pub const PROBE_PATHS: [&str; 2] = ["/-/healthy", "/-/ready"];

/// The exporter's routes over a shared snapshot store.
#[derive(Debug, Clone)]
pub struct Routes {
    store: Arc<SnapshotStore>,
    collect_interval: Duration,
}

impl Routes {
    /// Routes serving `store`, which the collection loop fills every `collect_interval`.
    pub fn new(store: Arc<SnapshotStore>, collect_interval: Duration) -> Self {
        Self {
            store,
            collect_interval,
        }
    }

    /// The response to one request.
    pub fn respond(&self, method: &Method, path: &str, headers: &HeaderMap) -> Response<Body> {
        let known = matches!(path, "/" | "/metrics") || PROBE_PATHS.contains(&path);
        if !known {
            return plain(StatusCode::NOT_FOUND, "not found: try /metrics\n");
        }
        if method != Method::GET && method != Method::HEAD {
            let mut response = plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed: use GET or HEAD\n",
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        match path {
            "/metrics" => self.metrics(headers),
            "/-/healthy" => plain(StatusCode::OK, "healthy\n"),
            "/-/ready" => self.ready(),
            _ => landing_page(),
        }
    }

    fn metrics(&self, headers: &HeaderMap) -> Response<Body> {
        let Some(snapshot) = self.store.latest() else {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "no collection has finished yet: retry after --collect-interval\n",
            );
        };
        let header = |name| {
            headers
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        let format = choose_format(header(ACCEPT));
        let gzip = accepts_gzip(header(ACCEPT_ENCODING));
        let openmetrics = format == Format::OpenMetrics;
        let body = match (gzip, openmetrics) {
            (true, _) => snapshot.gzipped(openmetrics),
            (false, true) => snapshot.openmetrics(),
            (false, false) => snapshot.text(),
        };
        let mut response = Response::new(Body::new(body));
        let headers = response.headers_mut();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static(format.content_type()),
        );
        headers.insert(VARY, HeaderValue::from_static("Accept, Accept-Encoding"));
        if gzip {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    }

    fn ready(&self) -> Response<Body> {
        let window = self.collect_interval * 3;
        if self.store.succeeded_within(window) {
            return plain(StatusCode::OK, "ready\n");
        }
        let reason = if self.store.latest().is_none() {
            "not ready: no collection has finished yet\n".to_string()
        } else {
            format!(
                "not ready: no fully successful collection in the last {} (3 x --collect-interval)\n",
                humantime::format_duration(window)
            )
        };
        plain(StatusCode::SERVICE_UNAVAILABLE, reason)
    }
}

/// A plain-text response.
pub fn plain(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Body::new(text.into()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn landing_page() -> Response<Body> {
    let version = env!("CARGO_PKG_VERSION");
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>poolprof exporter</title></head>\n\
         <body>\n<h1>poolprof exporter</h1>\n<p>GPU metrics for pooling decisions. Version {version}.</p>\n\
         <ul>\n<li><a href=\"metrics\">metrics</a></li>\n<li><a href=\"-/healthy\">healthy</a></li>\n\
         <li><a href=\"-/ready\">ready</a></li>\n</ul>\n</body>\n</html>\n"
    );
    let mut response = Response::new(Body::new(Bytes::from(html)));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Snapshot;
    use http_body_util::BodyExt;

    const TEXT: &str = "# HELP poolprof_gpu_up 1 when the GPU answers.\n# TYPE poolprof_gpu_up gauge\npoolprof_gpu_up{uuid=\"GPU-1\"} 1\n";
    const OPENMETRICS: &str = "# HELP poolprof_gpu_up 1 when the GPU answers.\n# TYPE poolprof_gpu_up gauge\npoolprof_gpu_up{uuid=\"GPU-1\"} 1\n# EOF\n";

    fn routes(published: Option<bool>) -> Routes {
        let store = Arc::new(SnapshotStore::new());
        if let Some(success) = published {
            store.publish(Snapshot::new(
                Bytes::from(TEXT),
                Bytes::from(OPENMETRICS),
                success,
            ));
        }
        Routes::new(store, Duration::from_secs(1))
    }

    fn get(
        routes: &Routes,
        method: Method,
        path: &str,
        headers: &[(&'static str, &'static str)],
    ) -> Response<Body> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, HeaderValue::from_static(value));
        }
        routes.respond(&method, path, &map)
    }

    async fn body(response: Response<Body>) -> Bytes {
        response.into_body().collect().await.unwrap().to_bytes()
    }

    #[tokio::test]
    async fn metrics_serves_text_by_default() {
        let response = get(&routes(Some(true)), Method::GET, "/metrics", &[]);
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[CONTENT_TYPE],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert!(response.headers().get(CONTENT_ENCODING).is_none());
        assert_eq!(body(response).await, TEXT);
    }

    #[tokio::test]
    async fn metrics_serves_openmetrics_when_asked() {
        let accept = "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;q=0.5";
        let response = get(
            &routes(Some(true)),
            Method::GET,
            "/metrics",
            &[("accept", accept)],
        );
        assert_eq!(
            response.headers()[CONTENT_TYPE],
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        assert_eq!(body(response).await, OPENMETRICS);
    }

    #[tokio::test]
    async fn metrics_gzips_when_accepted() {
        use std::io::Read;
        let response = get(
            &routes(Some(true)),
            Method::GET,
            "/metrics",
            &[("accept-encoding", "gzip, br")],
        );
        assert_eq!(response.headers()[CONTENT_ENCODING], "gzip");
        let compressed = body(response).await;
        let mut text = String::new();
        flate2::read::GzDecoder::new(&compressed[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, TEXT);
    }

    #[tokio::test]
    async fn metrics_is_503_before_the_first_collection() {
        let response = get(&routes(None), Method::GET, "/metrics", &[]);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(String::from_utf8_lossy(&body(response).await).contains("no collection"));
    }

    #[test]
    fn only_get_and_head_are_allowed() {
        let routes = routes(Some(true));
        assert_eq!(
            get(&routes, Method::HEAD, "/metrics", &[]).status(),
            StatusCode::OK
        );
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
            let response = get(&routes, method.clone(), "/metrics", &[]);
            assert_eq!(
                response.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method}"
            );
            assert_eq!(response.headers()[ALLOW], "GET, HEAD");
        }
    }

    #[test]
    fn unknown_paths_are_404() {
        let routes = routes(Some(true));
        for path in ["/metric", "/metrics/", "/-/reload", "/favicon.ico"] {
            assert_eq!(
                get(&routes, Method::GET, path, &[]).status(),
                StatusCode::NOT_FOUND,
                "{path}"
            );
        }
    }

    #[tokio::test]
    async fn ready_follows_successful_collections() {
        let not_yet = get(&routes(None), Method::GET, "/-/ready", &[]);
        assert_eq!(not_yet.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(String::from_utf8_lossy(&body(not_yet).await).contains("no collection"));
        let failed = get(&routes(Some(false)), Method::GET, "/-/ready", &[]);
        assert_eq!(failed.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(String::from_utf8_lossy(&body(failed).await).contains("3 x --collect-interval"));
        assert_eq!(
            get(&routes(Some(true)), Method::GET, "/-/ready", &[]).status(),
            StatusCode::OK
        );
    }

    #[test]
    fn healthy_needs_no_collection() {
        assert_eq!(
            get(&routes(None), Method::GET, "/-/healthy", &[]).status(),
            StatusCode::OK
        );
    }

    #[tokio::test]
    async fn landing_page_links_metrics_and_names_the_version() {
        let response = get(&routes(None), Method::GET, "/", &[]);
        assert_eq!(response.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
        let html = String::from_utf8(body(response).await.to_vec()).unwrap();
        assert!(html.contains("href=\"metrics\""));
        assert!(html.contains(env!("CARGO_PKG_VERSION")));
    }
}
