//! An https source with a private CA: trusted through `ca_file`, refused without it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use poolprof_analyzer::error::ExitCode;
use poolprof_analyzer::retry::RetryPolicy;
use poolprof_analyzer::source::prometheus::{ClientOptions, PrometheusClient, QueryRange};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const BODY: &str = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"uuid":"GPU-a"},"values":[[1,"0.5"]]}]}}"#;

/// Serves `BODY` over TLS with a fresh self-signed certificate; returns its port and PEM.
async fn tls_server() -> (u16, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let pem = cert.cert.pem();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![CertificateDer::from(cert.cert.der().to_vec())], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                        Bytes::from_static(BODY.as_bytes()),
                    )))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, pem)
}

fn options(port: u16) -> ClientOptions {
    let mut o =
        ClientOptions::new(reqwest::Url::parse(&format!("https://localhost:{port}")).unwrap());
    o.retry = RetryPolicy {
        attempts: 1,
        ..RetryPolicy::default()
    };
    o.timeout = Duration::from_secs(5);
    o
}

const ONE_POINT: QueryRange = QueryRange {
    start: 1.0,
    end: 1.0,
    step: 1.0,
};

#[tokio::test]
async fn a_private_ca_is_trusted_through_the_ca_file() {
    let (port, pem) = tls_server().await;
    let ca = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca.path(), pem).unwrap();
    let mut o = options(port);
    o.ca_file = Some(ca.path().to_path_buf());
    let result = PrometheusClient::new(o)
        .unwrap()
        .query_range("x", ONE_POINT, |_| true)
        .await
        .unwrap();
    assert_eq!(result.series.len(), 1);
}

#[tokio::test]
async fn without_the_ca_file_the_certificate_is_refused() {
    let (port, _) = tls_server().await;
    let err = PrometheusClient::new(options(port))
        .unwrap()
        .query_range("x", ONE_POINT, |_| true)
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::SourceUnreachable);
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
}

#[test]
fn a_ca_file_without_certificates_is_a_usage_error() {
    let ca = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(ca.path(), "not a certificate\n").unwrap();
    let mut o = options(1);
    o.ca_file = Some(ca.path().to_path_buf());
    let err = PrometheusClient::new(o).unwrap_err();
    assert_eq!(err.exit_code(), ExitCode::Usage);
    assert!(
        err.to_string().contains(&ca.path().display().to_string()),
        "{err}"
    );
}
