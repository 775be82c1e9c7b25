//! The Prometheus client against a scripted server speaking the real API's JSON.

mod support;

use std::time::Duration;

use poolprof_analyzer::error::ExitCode;
use poolprof_analyzer::retry::RetryPolicy;
use poolprof_analyzer::source::prometheus::range::PROMETHEUS_MAX_POINTS;
use poolprof_analyzer::source::prometheus::{
    Auth, ClientOptions, PrometheusClient, QueryRange, SourceError,
};
use support::{api_error, grid, matrix, FakeServer};

fn fast_retries(attempts: u32) -> RetryPolicy {
    RetryPolicy {
        attempts,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(20),
    }
}

fn client(url: reqwest::Url, attempts: u32) -> PrometheusClient {
    let mut o = ClientOptions::new(url);
    o.retry = fast_retries(attempts);
    o.timeout = Duration::from_secs(5);
    PrometheusClient::new(o).unwrap()
}

fn range(points: u64, step: f64) -> QueryRange {
    QueryRange {
        start: 1_700_000_000.0,
        end: 1_700_000_000.0 + (points - 1) as f64 * step,
        step,
    }
}

fn one_series_on_grid(req: &support::Request) -> String {
    let values = grid(req)
        .into_iter()
        .map(|t| (t, format!("{}", t % 100.0)))
        .collect();
    matrix(&[(&[("uuid", "GPU-a")], values)])
}

#[tokio::test]
async fn a_5xx_is_retried_and_the_retry_answers() {
    let server = FakeServer::start(|req, n| {
        if n == 1 {
            (
                503,
                api_error("timeout", "query timed out in expression evaluation"),
            )
        } else {
            (200, one_series_on_grid(req))
        }
    });
    let result = client(server.url(), 3)
        .query_range("up", range(10, 15.0), |_| true)
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2);
    let points = result.series.values().next().unwrap();
    assert_eq!(points.len(), 10);
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_carries_prometheus_message() {
    let server = FakeServer::start(|_, _| {
        (
            400,
            api_error(
                "bad_data",
                "1:5: parse error: unexpected right parenthesis ')'",
            ),
        )
    });
    let err = client(server.url(), 4)
        .query_range("rate(x))", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 1, "4xx must not be retried");
    assert_eq!(err.exit_code(), ExitCode::Usage);
    let msg = err.to_string();
    assert!(msg.contains("unexpected right parenthesis"), "{msg}");
    assert!(msg.contains("rate(x))"), "{msg}");
    assert!(msg.contains(&server.url().to_string()), "{msg}");
}

#[tokio::test]
async fn persistent_5xx_gives_up_after_the_attempts_as_unreachable() {
    let server = FakeServer::start(|_, _| (502, "<html>bad gateway</html>".into()));
    let err = client(server.url(), 3)
        .query_range("up", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 3);
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
    assert!(err.to_string().contains("bad gateway"), "{err}");
}

#[tokio::test]
async fn a_closed_port_is_unreachable_and_named() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let err = client(url, 2)
        .query_range("up", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    assert!(
        matches!(err, SourceError::Unreachable { attempts: 2, .. }),
        "{err:?}"
    );
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
    assert!(
        err.to_string()
            .contains(&format!("127.0.0.1:{port}/api/v1/query_range")),
        "{err}"
    );
}

#[tokio::test]
async fn malformed_json_is_a_bad_response_not_retried() {
    let server = FakeServer::start(|_, _| (200, "{\"status\":\"success\",\"data\":".into()));
    let err = client(server.url(), 3)
        .query_range("up", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    assert_eq!(server.requests().len(), 1);
    assert!(matches!(err, SourceError::BadResponse { .. }), "{err:?}");
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[tokio::test]
async fn a_200_that_is_not_the_api_json_is_a_broken_source_exit_3() {
    for body in [
        "<html><body>proxy login</body></html>",
        r#"{"hello":"world"}"#,
        r#"{"status":"success","data":{"resultType":"matrix","result":{"not":"a list"}}}"#,
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}}"#,
        "",
    ] {
        let server = FakeServer::start(move |_, _| (200, body.into()));
        let err = client(server.url(), 2)
            .query_range("up", range(10, 15.0), |_| true)
            .await
            .unwrap_err();
        assert!(
            matches!(err, SourceError::BadResponse { .. }),
            "{body}: {err:?}"
        );
        assert_eq!(err.exit_code(), ExitCode::SourceUnreachable, "{body}");
        assert!(!err.to_string().contains("cannot reach"), "{err}");
    }
}

/// A server that promises `declared` bytes of body, sends `body` and closes.
fn short_body_server(body: &'static str, declared: usize) -> reqwest::Url {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    reqwest::Url::parse(&format!("http://{addr}")).unwrap()
}

#[tokio::test]
async fn a_truncated_body_is_named_as_such_not_unreachable() {
    let body = r#"{"status":"success","data":{"resultType":"matrix","res"#;
    let url = short_body_server(body, body.len() + 500);
    let err = client(url, 2)
        .query_range("up", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, SourceError::Truncated { attempts: 2, .. }),
        "{err:?}"
    );
    assert!(
        msg.contains("ended early") && msg.contains("truncated"),
        "{msg}"
    );
    assert!(!msg.contains("cannot reach"), "{msg}");
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
}

#[tokio::test]
async fn a_200_with_status_error_is_a_query_error() {
    let server = FakeServer::start(|_, _| {
        (
            200,
            api_error("execution", "many-to-many matching not allowed"),
        )
    });
    let err = client(server.url(), 3)
        .query_range("a * b", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Usage);
    assert!(
        err.to_string()
            .contains("many-to-many matching not allowed"),
        "{err}"
    );
}

#[tokio::test]
async fn a_scalar_result_is_refused_with_what_to_do() {
    let server = FakeServer::start(|_, _| {
        (
            200,
            r#"{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}"#.into(),
        )
    });
    let err = client(server.url(), 1)
        .query_range("1", range(10, 15.0), |_| true)
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Usage);
    assert!(
        err.to_string().contains("returned a scalar result"),
        "{err}"
    );
}

#[tokio::test]
async fn nan_and_inf_are_dropped_and_counted() {
    let server = FakeServer::start(|_, _| {
        let values = vec![
            (1.0, "1".to_string()),
            (2.0, "NaN".to_string()),
            (3.0, "+Inf".to_string()),
            (4.0, "-Inf".to_string()),
            (5.0, "2.5".to_string()),
        ];
        (200, matrix(&[(&[("uuid", "GPU-a")], values)]))
    });
    let result = client(server.url(), 1)
        .query_range(
            "x",
            QueryRange {
                start: 1.0,
                end: 5.0,
                step: 1.0,
            },
            |_| true,
        )
        .await
        .unwrap();
    assert_eq!(result.dropped.nan, 1);
    assert_eq!(result.dropped.inf, 2);
    assert_eq!(
        result.series.values().next().unwrap(),
        &vec![(1.0, 1.0), (5.0, 2.5)]
    );
}

#[tokio::test]
async fn long_ranges_are_chunked_under_the_point_limit_and_merged() {
    let server = FakeServer::start(|req, _| (200, one_series_on_grid(req)));
    let total = 25_001;
    let r = range(total, 60.0);
    let result = client(server.url(), 1)
        .query_range("x", r, |_| true)
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for req in &requests {
        assert!(
            grid(req).len() as u64 <= PROMETHEUS_MAX_POINTS,
            "{:?}",
            req.params()
        );
        assert_eq!(req.params()["step"], "60");
    }
    let points = result.series.values().next().unwrap();
    assert_eq!(points.len() as u64, total, "every grid point exactly once");
    assert!(points
        .windows(2)
        .all(|w| (w[1].0 - w[0].0 - 60.0).abs() < 1e-6));
    assert_eq!(points[0].0, r.start);
    assert_eq!(points.last().unwrap().0, r.end);
}

#[tokio::test]
async fn the_filter_drops_series_before_they_are_kept() {
    let server = FakeServer::start(|_, _| {
        let v = || vec![(1.0, "1".to_string())];
        (
            200,
            matrix(&[(&[("uuid", "GPU-a")], v()), (&[("uuid", "GPU-b")], v())]),
        )
    });
    let result = client(server.url(), 1)
        .query_range(
            "x",
            QueryRange {
                start: 1.0,
                end: 1.0,
                step: 1.0,
            },
            |l| l["uuid"] == "GPU-b",
        )
        .await
        .unwrap();
    let owners: Vec<_> = result.series.keys().map(|l| l["uuid"].clone()).collect();
    assert_eq!(owners, vec!["GPU-b"]);
}

#[tokio::test]
async fn too_many_series_is_refused() {
    let server = FakeServer::start(|_, _| {
        let v = || vec![(1.0, "1".to_string())];
        (
            200,
            matrix(&[
                (&[("uuid", "a")], v()),
                (&[("uuid", "b")], v()),
                (&[("uuid", "c")], v()),
            ]),
        )
    });
    let mut o = ClientOptions::new(server.url());
    o.max_series = 2;
    let err = PrometheusClient::new(o)
        .unwrap()
        .query_range(
            "x",
            QueryRange {
                start: 1.0,
                end: 1.0,
                step: 1.0,
            },
            |_| true,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, SourceError::TooManySeries { limit: 2, .. }),
        "{err:?}"
    );
    assert_eq!(err.exit_code(), ExitCode::Usage);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let server = FakeServer::start(|req, _| (200, one_series_on_grid(req)));
    let mut o = ClientOptions::new(server.url());
    o.max_body_bytes = 2048;
    let err = PrometheusClient::new(o)
        .unwrap()
        .query_range("x", range(1000, 15.0), |_| true)
        .await
        .unwrap_err();
    assert!(
        matches!(err, SourceError::TooLarge { limit: 2048, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn bearer_and_basic_credentials_are_sent() {
    let server = FakeServer::start(|req, _| (200, one_series_on_grid(req)));
    for (auth, expected) in [
        (Auth::Bearer("s3cret".into()), "Bearer s3cret".to_string()),
        (
            Auth::Basic {
                username: "ops".into(),
                password: "pw".into(),
            },
            // base64("ops:pw")
            "Basic b3BzOnB3".to_string(),
        ),
    ] {
        let mut o = ClientOptions::new(server.url());
        o.auth = auth.clone();
        PrometheusClient::new(o)
            .unwrap()
            .query_range("x", range(2, 15.0), |_| true)
            .await
            .unwrap();
        let last = server.requests().pop().unwrap();
        assert_eq!(last.headers.get("authorization"), Some(&expected));
        assert!(!format!("{auth:?}").contains("s3cret") && !format!("{auth:?}").contains("pw"));
    }
}

#[tokio::test]
async fn a_path_prefix_is_kept() {
    let server = FakeServer::start(|req, _| (200, one_series_on_grid(req)));
    let url = server.url().join("/prom/").unwrap();
    client(url, 1)
        .query_range("x", range(2, 15.0), |_| true)
        .await
        .unwrap();
    assert_eq!(server.requests()[0].path, "/prom/api/v1/query_range");
    assert_eq!(server.requests()[0].method, "POST");
}

#[tokio::test]
async fn instant_queries_parse_vectors() {
    let server = FakeServer::start(|_, _| {
        (200, r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"uuid":"GPU-a"},"value":[100,"8.5e10"]},{"metric":{"uuid":"GPU-b"},"value":[100,"NaN"]}]}}"#.into())
    });
    let v = client(server.url(), 1)
        .query("max by (uuid) (m)", 100.0)
        .await
        .unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].0["uuid"], "GPU-a");
    assert_eq!(v[0].1, 8.5e10);
    assert_eq!(server.requests()[0].path, "/api/v1/query");
}

#[test]
fn a_missing_ca_file_is_a_setup_error_naming_it() {
    let mut o = ClientOptions::new(reqwest::Url::parse("https://prom.example:9090").unwrap());
    o.ca_file = Some("/nonexistent/ca.pem".into());
    let err = PrometheusClient::new(o).unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Usage);
    assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
}

#[test]
fn a_non_http_url_is_refused() {
    let err = PrometheusClient::new(ClientOptions::new(reqwest::Url::parse("ftp://x").unwrap()))
        .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Usage);
}

#[tokio::test]
async fn a_silent_server_times_out_and_is_retried() {
    let server = FakeServer::start(|req, n| {
        if n == 1 {
            std::thread::sleep(Duration::from_millis(800));
        }
        (200, one_series_on_grid(req))
    });
    let mut o = ClientOptions::new(server.url());
    o.retry = fast_retries(2);
    o.timeout = Duration::from_millis(300);
    let result = PrometheusClient::new(o)
        .unwrap()
        .query_range("x", range(5, 15.0), |_| true)
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2);
    assert_eq!(result.series.len(), 1);
}

/// A server that answers every request with `body` in chunked transfer encoding (no
/// Content-Length), `piece` bytes a chunk, and closes; without the last chunk when
/// `cut_after` bytes have gone, as a proxy that dies mid-answer.
fn chunked_server(body: String, piece: usize, cut_after: Option<usize>) -> reqwest::Url {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let bytes = body.as_bytes();
            let end = cut_after.unwrap_or(bytes.len()).min(bytes.len());
            for part in bytes[..end].chunks(piece) {
                let _ = write!(stream, "{:x}\r\n", part.len());
                let _ = stream.write_all(part);
                let _ = stream.write_all(b"\r\n");
            }
            if cut_after.is_none() {
                let _ = stream.write_all(b"0\r\n\r\n");
            }
        }
    });
    reqwest::Url::parse(&format!("http://{addr}")).unwrap()
}

/// An answer of `series` series of `points` samples each, a few MB for the sizes used.
fn big_matrix(series: usize, points: usize) -> String {
    let result: Vec<String> = (0..series)
        .map(|s| {
            let values: Vec<String> = (0..points)
                .map(|p| format!("[{},\"{}.25\"]", 1_700_000_000 + 15 * p, (s + p) % 97))
                .collect();
            format!(
                r#"{{"metric":{{"uuid":"GPU-{s}"}},"values":[{}]}}"#,
                values.join(",")
            )
        })
        .collect();
    format!(
        r#"{{"status":"success","data":{{"resultType":"matrix","result":[{}]}}}}"#,
        result.join(",")
    )
}

/// The error of a `query_range` that must fail.
async fn failed_range(client: PrometheusClient) -> SourceError {
    client
        .query_range("x", range(10, 15.0), |_| true)
        .await
        .unwrap_err()
}

#[tokio::test]
async fn an_answer_of_many_chunks_is_parsed_whole_as_it_arrives() {
    let body = big_matrix(40, 2000);
    assert!(body.len() > 1 << 20, "{} bytes", body.len());
    let url = chunked_server(body, 3001, None);
    let got = client(url, 1)
        .query_range("x", range(10, 15.0), |_| true)
        .await
        .unwrap();
    assert_eq!(got.series.len(), 40);
    let gpu7 = &got.series[&[("uuid".to_string(), "GPU-7".to_string())].into()];
    assert_eq!(gpu7.len(), 2000);
    assert_eq!(
        gpu7[1999],
        (
            1_700_000_000.0 + 15.0 * 1999.0,
            (7 + 1999) as f64 % 97.0 + 0.25
        )
    );
}

#[tokio::test]
async fn an_undeclared_body_past_the_limit_is_refused_while_it_is_read() {
    let url = chunked_server(big_matrix(40, 2000), 4096, None);
    let mut o = ClientOptions::new(url);
    o.max_body_bytes = 1 << 20;
    let err = failed_range(PrometheusClient::new(o).unwrap()).await;
    assert!(
        matches!(err, SourceError::TooLarge { limit: 1048576, .. }),
        "{err:?}"
    );
    assert_eq!(err.exit_code(), ExitCode::Usage);
}

#[tokio::test]
async fn a_body_cut_mid_stream_is_truncated_and_retried() {
    let body = big_matrix(40, 2000);
    let cut = body.len() / 2;
    let url = chunked_server(body, 4096, Some(cut));
    let err = failed_range(client(url, 2)).await;
    assert!(
        matches!(err, SourceError::Truncated { attempts: 2, .. }),
        "{err:?}"
    );
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
}

#[tokio::test]
async fn garbage_deep_in_a_long_answer_is_placed_and_not_retried() {
    let mut body = big_matrix(40, 2000);
    let at = body.len() - 5000;
    let after = body.split_off(at);
    body.push_str("oops");
    body.push_str(&after);
    let url = chunked_server(body, 4096, None);
    let err = failed_range(client(url, 3)).await;
    assert!(matches!(err, SourceError::BadResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("line 1 column"), "{err}");
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
}
