//! The HTTP server over real sockets: routes, negotiation, gzip, limits, TLS, auth.

use bytes::Bytes;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use poolprof_exporter::registry::{Snapshot, SnapshotStore};
use poolprof_exporter::server::routes::Routes;
use poolprof_exporter::server::web_config::WebConfig;
use poolprof_exporter::server::{Body, Handler, HandlerFuture, Server, ServerOptions};
use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, Semaphore};

const TEXT: &str = "# HELP poolprof_gpu_up 1 when the GPU answers.\n# TYPE poolprof_gpu_up gauge\npoolprof_gpu_up{uuid=\"GPU-0\"} 1\n";
const OPENMETRICS: &str = "# HELP poolprof_gpu_up 1 when the GPU answers.\n# TYPE poolprof_gpu_up gauge\npoolprof_gpu_up{uuid=\"GPU-0\"} 1\n# EOF\n";

/// A running server and what stops it.
struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Running {
    fn url(&self, scheme: &str, path: &str) -> String {
        let host = if scheme == "https" {
            "localhost".to_string()
        } else {
            self.addr.ip().to_string()
        };
        format!("{scheme}://{host}:{}{path}", self.addr.port())
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), self.done)
            .await
            .expect("server stops within the drain timeout")
            .unwrap();
    }
}

fn start(options: ServerOptions, handler: Arc<dyn Handler>) -> Running {
    let bound = Server::new(options, handler)
        .expect("server config is valid")
        .bind(&["127.0.0.1:0".to_string()])
        .expect("bind a free port");
    let addr = bound.local_addrs()[0];
    let (stop, stopped) = oneshot::channel();
    let done = tokio::spawn(bound.serve(async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop: Some(stop),
        done,
    }
}

fn store(published: bool) -> Arc<SnapshotStore> {
    let store = Arc::new(SnapshotStore::new());
    if published {
        store.publish(Snapshot::new(
            Bytes::from(TEXT),
            Bytes::from(OPENMETRICS),
            true,
        ));
    }
    store
}

fn routes(published: bool) -> Arc<dyn Handler> {
    Arc::new(Routes::new(store(published), Duration::from_secs(1)))
}

fn plain_options() -> ServerOptions {
    ServerOptions {
        max_requests: 40,
        web_config: None,
        ..ServerOptions::default()
    }
}

/// A server like [`plain_options`]'s, serving with `config` (TLS, basic auth).
fn start_with_web_config(config: WebConfig) -> Running {
    let options = ServerOptions {
        web_config: Some(config),
        ..plain_options()
    };
    start(options, routes(true))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

#[tokio::test]
async fn get_head_and_other_methods() {
    let server = start(plain_options(), routes(true));
    let client = client();
    let url = server.url("http", "/metrics");
    let get = client.get(&url).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    assert_eq!(
        get.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    assert_eq!(get.text().await.unwrap(), TEXT);

    let head = client.head(&url).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(
        head.headers()["content-length"],
        TEXT.len().to_string().as_str()
    );
    assert!(head.bytes().await.unwrap().is_empty(), "HEAD has no body");

    let post = client.post(&url).body("x").send().await.unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers()["allow"], "GET, HEAD");

    let missing = client
        .get(server.url("http", "/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test]
async fn openmetrics_and_gzip_are_negotiated() {
    let server = start(plain_options(), routes(true));
    let client = client();
    let url = server.url("http", "/metrics");
    let om = client
        .get(&url)
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0;q=0.8,text/plain;version=0.0.4;q=0.3",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        om.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert_eq!(om.text().await.unwrap(), OPENMETRICS);

    let text = client
        .get(&url)
        .header(
            "accept",
            "application/openmetrics-text;q=0.1,text/plain;q=0.9",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        text.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );

    let gz = client
        .get(&url)
        .header("accept", "application/openmetrics-text")
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    let compressed = gz.bytes().await.unwrap();
    let mut decompressed = String::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_string(&mut decompressed)
        .unwrap();
    assert_eq!(decompressed, OPENMETRICS);
    server.stop().await;
}

#[tokio::test]
async fn metrics_and_ready_are_503_before_the_first_collection() {
    let server = start(plain_options(), routes(false));
    let client = client();
    for path in ["/metrics", "/-/ready"] {
        let response = client.get(server.url("http", path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
    }
    let healthy = client
        .get(server.url("http", "/-/healthy"))
        .send()
        .await
        .unwrap();
    assert_eq!(healthy.status(), StatusCode::OK);
    server.stop().await;
}

/// Holds every `/metrics` request until released, counting those inside; other
/// paths answer at once.
struct Gate {
    inside: AtomicUsize,
    release: Semaphore,
    routes: Routes,
}

impl Handler for Gate {
    fn handle(&self, request: Parts) -> HandlerFuture<'_> {
        Box::pin(async move {
            let _permit = if request.uri.path() == "/metrics" {
                self.inside.fetch_add(1, Ordering::SeqCst);
                Some(self.release.acquire().await.unwrap())
            } else {
                None
            };
            let response: Response<Body> =
                self.routes
                    .respond(&request.method, request.uri.path(), &request.headers);
            response
        })
    }
}

#[tokio::test]
async fn requests_beyond_max_requests_get_503_at_once() {
    let gate = Arc::new(Gate {
        inside: AtomicUsize::new(0),
        release: Semaphore::new(0),
        routes: Routes::new(store(true), Duration::from_secs(1)),
    });
    let server = start(
        ServerOptions {
            max_requests: 2,
            web_config: None,
            ..ServerOptions::default()
        },
        gate.clone(),
    );
    let client = client();
    let url = server.url("http", "/metrics");
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(client.get(&url).send()))
        .collect();
    tokio::time::timeout(Duration::from_secs(10), async {
        while gate.inside.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("two requests reach the handler");

    let refused = tokio::time::timeout(Duration::from_secs(5), client.get(&url).send())
        .await
        .expect("the third request is answered without waiting")
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.text().await.unwrap().contains("--web.max-requests"));
    assert_eq!(
        gate.inside.load(Ordering::SeqCst),
        2,
        "the refused request never reached the handler"
    );

    let probe = client
        .get(server.url("http", "/-/healthy"))
        .send()
        .await
        .unwrap();
    assert_eq!(probe.status(), StatusCode::OK, "probes do not need a slot");

    gate.release.add_permits(100);
    for request in held {
        assert_eq!(request.await.unwrap().unwrap().status(), StatusCode::OK);
    }
    let after = client.get(&url).send().await.unwrap();
    assert_eq!(after.status(), StatusCode::OK, "slots are free again");
    server.stop().await;
}

/// Connects to a server with a 300 ms header timeout and sends `sent`: what the server
/// wrote before it closed the connection, or `None` if it still held it after 5 s.
async fn closed_after_sending(sent: &[u8]) -> Option<Vec<u8>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let options = ServerOptions {
        header_read_timeout: Duration::from_millis(300),
        ..ServerOptions::default()
    };
    let server = start(options, routes(true));
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(sent).await.unwrap();
    let mut buffer = Vec::new();
    let closed =
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buffer)).await;
    drop(stream);
    server.stop().await;
    closed.ok().map(|_| buffer)
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_dropped() {
    let buffer = closed_after_sending(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("the server closes a connection stuck in its headers");
    assert!(
        !String::from_utf8_lossy(&buffer).contains("200 OK"),
        "an incomplete request is not served"
    );
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_dropped() {
    assert!(
        closed_after_sending(b"").await.is_some(),
        "the server closes a silent connection"
    );
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let options = ServerOptions {
        max_connections: 1,
        ..ServerOptions::default()
    };
    let server = start(options, routes(true));
    let first = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut second = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    second
        .write_all(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    let early = tokio::time::timeout(
        Duration::from_millis(300),
        second.read_to_end(&mut response),
    )
    .await;
    assert!(
        early.is_err(),
        "the second connection waits while the first is open"
    );
    drop(first);
    tokio::time::timeout(Duration::from_secs(5), second.read_to_end(&mut response))
        .await
        .expect("served once the first connection closed")
        .unwrap();
    assert!(String::from_utf8_lossy(&response).starts_with("HTTP/1.1 200"));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish() {
    let gate = Arc::new(Gate {
        inside: AtomicUsize::new(0),
        release: Semaphore::new(0),
        routes: Routes::new(store(true), Duration::from_secs(1)),
    });
    let server = start(plain_options(), gate.clone());
    let request = tokio::spawn(client().get(server.url("http", "/metrics")).send());
    while gate.inside.load(Ordering::SeqCst) < 1 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let addr = server.addr;
    let stopping = tokio::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no new connections once shutdown began"
    );
    gate.release.add_permits(1);
    assert_eq!(request.await.unwrap().unwrap().status(), StatusCode::OK);
    stopping.await.unwrap();
}

/// A CA, a server certificate for localhost signed by it, and a client certificate.
struct Pki {
    dir: tempfile::TempDir,
    ca_pem: String,
    client_identity_pem: String,
}

fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client = CertificateParams::new(vec!["scraper".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    std::fs::write(dir.path().join("ca.crt"), ca.pem()).unwrap();
    std::fs::write(dir.path().join("server.crt"), server.pem()).unwrap();
    std::fs::write(dir.path().join("server.key"), server_key.serialize_pem()).unwrap();
    Pki {
        ca_pem: ca.pem(),
        client_identity_pem: format!("{}{}", client.pem(), client_key.serialize_pem()),
        dir,
    }
}

fn web_config(dir: &Path, yaml: &str) -> WebConfig {
    let file = dir.join("web.yml");
    std::fs::write(&file, yaml).unwrap();
    WebConfig::load(&file).unwrap()
}

fn tls_client(pki: &Pki, identity: bool) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(pki.ca_pem.as_bytes()).unwrap())
        .timeout(Duration::from_secs(10));
    if identity {
        builder = builder
            .identity(reqwest::Identity::from_pem(pki.client_identity_pem.as_bytes()).unwrap());
    }
    builder.build().unwrap()
}

const TLS_YAML: &str = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";

#[tokio::test]
async fn tls_serves_a_client_that_trusts_the_ca() {
    let pki = pki();
    let config = web_config(pki.dir.path(), TLS_YAML);
    let server = start_with_web_config(config);
    let response = tls_client(&pki, false)
        .get(server.url("https", "/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), TEXT);

    let plain_http = client().get(server.url("http", "/metrics")).send().await;
    assert!(
        plain_http.is_err() || plain_http.unwrap().status() != StatusCode::OK,
        "plain HTTP is not served on a TLS port"
    );
    server.stop().await;
}

#[tokio::test]
async fn min_version_tls13_refuses_a_tls12_client() {
    let pki = pki();
    let config = web_config(pki.dir.path(), &format!("{TLS_YAML}  min_version: TLS13\n"));
    let server = start_with_web_config(config);
    let url = server.url("https", "/metrics");
    let tls12_client = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(pki.ca_pem.as_bytes()).unwrap())
        .max_tls_version(reqwest::tls::Version::TLS_1_2)
        .build()
        .unwrap();
    assert!(
        tls12_client.get(&url).send().await.is_err(),
        "TLS 1.2 is refused"
    );
    let response = tls_client(&pki, false).get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "TLS 1.3 is served");
    server.stop().await;
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate() {
    let pki = pki();
    let yaml = format!(
        "{TLS_YAML}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
    );
    let config = web_config(pki.dir.path(), &yaml);
    let server = start_with_web_config(config);
    let url = server.url("https", "/metrics");
    let without = tls_client(&pki, false).get(&url).send().await;
    assert!(
        without.is_err(),
        "a client without a certificate is refused: {without:?}"
    );
    let with = tls_client(&pki, true).get(&url).send().await.unwrap();
    assert_eq!(with.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn basic_auth_over_tls() {
    let pki = pki();
    let hash = bcrypt::hash("hunter2", 4).unwrap();
    let yaml = format!("{TLS_YAML}basic_auth_users:\n  prometheus: '{hash}'\nhttp_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n");
    let config = web_config(pki.dir.path(), &yaml);
    let server = start_with_web_config(config);
    let client = tls_client(&pki, false);
    let url = server.url("https", "/metrics");

    let right = client
        .get(&url)
        .basic_auth("prometheus", Some("hunter2"))
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), StatusCode::OK);
    assert_eq!(right.headers()["x-content-type-options"], "nosniff");

    for (user, password) in [
        ("prometheus", Some("wrong")),
        ("nobody", Some("hunter2")),
        ("prometheus", None),
    ] {
        let wrong = client
            .get(&url)
            .basic_auth(user, password)
            .send()
            .await
            .unwrap();
        assert_eq!(
            wrong.status(),
            StatusCode::UNAUTHORIZED,
            "{user} {password:?}"
        );
        assert!(wrong.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic"));
    }
    let anonymous = client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    server.stop().await;
}

/// What a flood of wrong passwords got back, by status.
#[derive(Debug, Default)]
struct FloodTally {
    ok: AtomicUsize,
    unauthorized: AtomicUsize,
    throttled: AtomicUsize,
    other: AtomicUsize,
}

impl FloodTally {
    fn total(&self) -> usize {
        [&self.ok, &self.unauthorized, &self.throttled, &self.other]
            .iter()
            .map(|n| n.load(Ordering::SeqCst))
            .sum()
    }
}

/// Issue 13: 60 clients guessing passwords used to hold every `--web.max-requests`
/// slot while they queued for bcrypt, so every authenticated scrape got 503. Now
/// credentials are checked before a slot is taken, a remembered password skips
/// bcrypt, and a guessing address is refused cheaply once its budget is spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_flood_does_not_starve_authenticated_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    // A real cost, so that each bcrypt the flood gets is expensive.
    let hash = bcrypt::hash("scrape-secret", 8).unwrap();
    let yaml = format!("basic_auth_users:\n  prometheus: '{hash}'\n");
    let server = start_with_web_config(web_config(dir.path(), &yaml));
    let url = server.url("http", "/metrics");
    let from = |ip: [u8; 4]| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from(ip))
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap()
    };
    // Prometheus has been scraping before the flood starts, from the flood's address.
    let prometheus = from([127, 0, 0, 1]);
    let scrape = |client: &reqwest::Client| {
        client
            .get(&url)
            .basic_auth("prometheus", Some("scrape-secret"))
            .send()
    };
    assert_eq!(scrape(&prometheus).await.unwrap().status(), StatusCode::OK);

    let tally = Arc::new(FloodTally::default());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let attacker = from([127, 0, 0, 1]);
    let flood: Vec<_> = (0..60)
        .map(|i| {
            let (client, url, tally, stop) =
                (attacker.clone(), url.clone(), tally.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    let guess = format!("guess-{i}");
                    let status = match client
                        .get(&url)
                        .basic_auth("prometheus", Some(guess))
                        .send()
                        .await
                    {
                        Ok(response) => response.status(),
                        Err(_) => StatusCode::BAD_GATEWAY,
                    };
                    let counter = match status {
                        StatusCode::OK => &tally.ok,
                        StatusCode::UNAUTHORIZED => &tally.unauthorized,
                        StatusCode::TOO_MANY_REQUESTS => &tally.throttled,
                        _ => &tally.other,
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    while tally.total() < 120 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Every scrape must succeed: a remembered password never waits for bcrypt or
    // for a slot the flood holds, so there is no load at which some may fail.
    let mut statuses = Vec::new();
    for _ in 0..20 {
        statuses.push(scrape(&prometheus).await.unwrap().status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A replica that never logged in, from another address, gets in too: the flood
    // can run at most its budget of bcrypt checks ahead of it.
    let replica = from([127, 0, 0, 2]);
    for _ in 0..3 {
        statuses.push(scrape(&replica).await.unwrap().status());
    }
    stop.store(true, Ordering::SeqCst);
    for task in flood {
        task.await.unwrap();
    }
    assert!(
        statuses.iter().all(|s| *s == StatusCode::OK),
        "authenticated scrapes during the flood: {statuses:?}; flood: {tally:?}"
    );
    assert_eq!(tally.ok.load(Ordering::SeqCst), 0, "{tally:?}");
    assert_eq!(tally.other.load(Ordering::SeqCst), 0, "no 503: {tally:?}");
    let throttled = tally.throttled.load(Ordering::SeqCst);
    let unauthorized = tally.unauthorized.load(Ordering::SeqCst);
    assert!(
        throttled > unauthorized,
        "most guesses are refused without bcrypt: {tally:?}"
    );
    server.stop().await;
}
