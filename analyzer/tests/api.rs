//! The REST API over real HTTP on loopback: every endpoint, bad input, restarts, the
//! earlier pooling profiler's client fields, and every endpoint that docs/api.yaml lists.

use std::path::Path;
use std::sync::Arc;

use poolprof_analyzer::analysis::classify::{self, Thresholds};
use poolprof_analyzer::analysis::colocate::{self, Constants};
use poolprof_analyzer::analysis::profile::{Coverage, ProfileSignal as S, Window, WorkloadProfile};
use poolprof_analyzer::pipeline::store::ReportStore;
use poolprof_analyzer::pipeline::{RunReport, WorkloadReport};
use poolprof_analyzer::sink::api::{self, registry::Registry, Api};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::sync::Notify;

fn measured(name: &str, duty: f64, tensor: f64, dram: f64, occupancy: f64) -> WorkloadReport {
    let w = Window {
        start: 0.0,
        end: 600.0,
    };
    let mut p = WorkloadProfile::new(name, Coverage::Kernels)
        .with(S::Busy, duty, w)
        .with(S::SmActive, duty * 0.95, w)
        .with(S::SmOccupancy, duty * 0.95 * occupancy, w)
        .with(S::TensorActive, tensor, w)
        .with(S::DramActive, dram, w)
        .with(S::LaunchRate, 15_000.0, w)
        .with(S::ResidualKernelSeconds, 8e-5, w)
        .with(S::MemoryBytes, 10e9, w);
    p.gpu_name = Some("NVIDIA H100 80GB HBM3".into());
    WorkloadReport {
        class: classify::classify(&p, Thresholds::Roofline),
        kind: classify::workload_type(&p),
        profile: p,
    }
}

fn report() -> RunReport {
    let workloads = vec![
        measured("etl", 0.95, 0.02, 0.85, 0.85),
        measured("ns/train", 0.9, 0.7, 0.15, 0.45),
    ];
    let pairs = vec![colocate::predict(
        &workloads[0].profile,
        &workloads[1].profile,
        &Constants::default(),
    )];
    RunReport {
        workloads,
        pairs,
        ..Default::default()
    }
}

struct Server {
    base: String,
    client: reqwest::Client,
    stop: tokio::sync::watch::Sender<bool>,
}

async fn start(registry: &Path, with_report: bool) -> Server {
    let store = ReportStore::default();
    if with_report {
        store.publish(report());
    }
    let api = Arc::new(Api {
        store,
        registry: Registry::open(registry).unwrap(),
        constants: Constants::default(),
        thresholds: Thresholds::Roofline,
        run_now: Arc::new(Notify::new()),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, mut rx) = tokio::sync::watch::channel(false);
    tokio::spawn(api::serve(listener, api, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    Server {
        base,
        client: reqwest::Client::new(),
        stop,
    }
}

impl Server {
    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let status = r.status();
        assert_eq!(r.headers()["content-type"], "application/json", "{path}");
        (status, r.json().await.unwrap())
    }

    /// A page that is not JSON: its status, content type and text.
    async fn get_page(&self, path: &str) -> (StatusCode, String, String) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        let kind = r.headers()["content-type"].to_str().unwrap().to_string();
        (r.status(), kind, r.text().await.unwrap())
    }

    async fn post(&self, path: &str, body: &str) -> (StatusCode, Value) {
        let r = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        (r.status(), r.json().await.unwrap())
    }
}

#[tokio::test]
async fn health_profiles_and_one_profile() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("reg.json"), true).await;
    let (st, h) = s.get("/health").await;
    assert_eq!(
        (st, h["ok"].as_bool(), h["profiles_measured"].as_u64()),
        (StatusCode::OK, Some(true), Some(2))
    );
    let (st, all) = s.get("/profiles").await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(all["count"], 2);
    // an id holding '/', sent as it is and %-escaped
    for path in ["/profile/ns/train", "/profile/ns%2Ftrain"] {
        let (st, p) = s.get(path).await;
        assert_eq!(st, StatusCode::OK, "{path}");
        assert_eq!(
            (
                p["workload_id"].as_str(),
                p["type"].as_str(),
                p["class"].as_str()
            ),
            (Some("ns/train"), Some("compute"), Some("compute_bound"))
        );
        assert_eq!(p["workload_type"], "training");
    }
    let (st, e) = s.get("/profile/nobody").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert!(e["error"].as_str().unwrap().contains("nobody") && e["ok"] == false);
    let _ = s.stop.send(true);
}

#[tokio::test]
async fn colocation_answers_what_the_earlier_clients_read() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("reg.json"), true).await;
    let (st, c) = s.get("/colocation?a=ns%2Ftrain&b=etl").await;
    assert_eq!(st, StatusCode::OK, "{c}");
    // a client written against the earlier profiler reads only these fields
    #[derive(serde::Deserialize)]
    struct Side {
        id: String,
        #[serde(rename = "type")]
        kind: String,
    }
    #[derive(serde::Deserialize)]
    struct Partition {
        workload_a: f64,
        workload_b: f64,
    }
    #[derive(serde::Deserialize)]
    struct OldClient {
        ok: bool,
        workload_a: Side,
        workload_b: Side,
        colocation_score: f64,
        recommendation: String,
        sm_partition: Partition,
    }
    let old: OldClient = serde_json::from_value(c.clone()).unwrap();
    assert!(old.ok);
    assert_eq!(
        (old.workload_a.id.as_str(), old.workload_a.kind.as_str()),
        ("ns/train", "compute")
    );
    assert_eq!(
        (old.workload_b.id.as_str(), old.workload_b.kind.as_str()),
        ("etl", "memory")
    );
    assert!((0.0..=1.0).contains(&old.colocation_score));
    assert!(["good", "caution", "avoid"].contains(&old.recommendation.as_str()));
    assert!(old.sm_partition.workload_a > 0.0 && old.sm_partition.workload_b <= 100.0);
    // sides as asked: swapping the question swaps the sides
    let (_, swapped) = s.get("/colocation?a=etl&b=ns/train").await;
    assert_eq!(
        swapped["predicted_progress"]["workload_a"],
        c["predicted_progress"]["workload_b"]
    );
    assert_eq!(c["modes"].as_array().unwrap().len(), 3);
    for bad in [
        "/colocation?a=etl",
        "/colocation?a=etl&b=etl",
        "/colocation?a=%zz&b=etl",
    ] {
        assert_eq!(s.get(bad).await.0, StatusCode::BAD_REQUEST, "{bad}");
    }
    assert_eq!(
        s.get("/colocation?a=etl&b=ghost").await.0,
        StatusCode::NOT_FOUND
    );
    let _ = s.stop.send(true);
}

#[tokio::test]
async fn bad_requests_get_json_errors_with_the_right_status() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("reg.json"), true).await;
    assert_eq!(s.get("/nowhere").await.0, StatusCode::NOT_FOUND);
    let r = s
        .client
        .delete(format!("{}/profiles", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers()["allow"], "GET, HEAD");
    assert_eq!(
        s.post("/register", "{not json").await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        s.post("/register", r#"{"workload_id":"x","kernel_type":"gaming"}"#)
            .await
            .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        s.post(
            "/register",
            r#"{"workload_id":"x","kernel_type":"memory","arithmetic_intensity":-1}"#
        )
        .await
        .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        s.post(
            "/register",
            r#"{"workload_id":"a\u0007b","kernel_type":"memory"}"#
        )
        .await
        .0,
        StatusCode::BAD_REQUEST
    );
    let long = "x".repeat(129);
    assert_eq!(
        s.get(&format!("/profile/{long}")).await.0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(s.get("/profile/a%07b").await.0, StatusCode::BAD_REQUEST);
    let big = format!(
        r#"{{"workload_id":"x","kernel_type":"memory","description":"{}"}}"#,
        "y".repeat(70_000)
    );
    assert_eq!(
        s.post("/register", &big).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    let r = s
        .client
        .post(format!("{}/register", s.base))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let _ = s.stop.send(true);
}

#[tokio::test]
async fn registered_profiles_survive_a_restart_and_pair_with_measured_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reg.json");
    let s = start(&file, false).await;
    let body = r#"{"workload_id":"team-a/notebook","kernel_type":"memory","arithmetic_intensity":4.2,"description":"embedding lookups"}"#;
    let (st, r) = s.post("/register", body).await;
    assert_eq!(st, StatusCode::OK, "{r}");
    let _ = s.stop.send(true);
    // a new server on the same file, now with a measured report too
    let s = start(&file, true).await;
    let (st, p) = s.get("/profile/team-a/notebook").await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        (
            p["registered"].as_bool(),
            p["type"].as_str(),
            p["arithmetic_intensity"].as_f64()
        ),
        (Some(true), Some("memory"), Some(4.2))
    );
    assert_eq!(p["description"], "embedding lookups");
    let (st, c) = s.get("/colocation?a=team-a/notebook&b=ns/train").await;
    assert_eq!(st, StatusCode::OK, "{c}");
    assert_eq!(s.get("/profiles").await.1["count"], 3);
    let (st, r) = s.post("/profile", r#"{"workload_id":"ns/train"}"#).await;
    assert_eq!(
        (st, r["poll"].as_str()),
        (StatusCode::ACCEPTED, Some("/profile/ns/train"))
    );
    let _ = s.stop.send(true);
}

#[test]
fn a_corrupt_registry_is_named_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reg.json");
    std::fs::write(&file, "{ half a file").unwrap();
    let err = Registry::open(&file).unwrap_err().to_string();
    assert!(
        err.contains("reg.json") && err.contains("fix or move it away"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ half a file");
}

/// Every path and method in docs/api.yaml answers one of its documented statuses with
/// the documented required fields.
#[tokio::test]
async fn every_documented_endpoint_answers_as_documented() {
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api.yaml")).unwrap(),
    )
    .unwrap();
    let schemas = &doc["components"]["schemas"];
    let dir = tempfile::tempdir().unwrap();
    let s = start(&dir.path().join("reg.json"), true).await;
    let mut called = 0;
    for (path, ops) in doc["paths"].as_mapping().unwrap() {
        let path = path.as_str().unwrap();
        for (method, op) in ops.as_mapping().unwrap() {
            let method = method.as_str().unwrap();
            let mut url = path.replace("{id}", "ns/train");
            let queries: Vec<String> = op["parameters"]
                .as_sequence()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "query")
                .map(|p| {
                    format!(
                        "{}={}",
                        p["name"].as_str().unwrap(),
                        p["example"].as_str().unwrap()
                    )
                })
                .collect();
            if !queries.is_empty() {
                url = format!("{url}?{}", queries.join("&"));
            }
            if !op["responses"]["200"]["content"]["text/html"].is_null() {
                let (status, kind, page) = s.get_page(&url).await;
                assert!(
                    !op["responses"][status.as_str()].is_null(),
                    "{method} {url}: {status} is not documented\n{page}"
                );
                assert_eq!(kind, "text/html; charset=utf-8", "{url}");
                assert!(page.starts_with("<!DOCTYPE html>"), "{url}: {page}");
                called += 1;
                continue;
            }
            let (status, body) = match method {
                "get" => s.get(&url).await,
                "post" => {
                    let example = &op["requestBody"]["content"]["application/json"]["example"];
                    s.post(
                        &url,
                        &serde_json::to_string(
                            &serde_yaml_ng::from_value::<Value>(example.clone()).unwrap(),
                        )
                        .unwrap(),
                    )
                    .await
                }
                other => panic!("undocumented method {other}"),
            };
            let documented = &op["responses"][status.as_str()];
            assert!(
                !documented.is_null(),
                "{method} {url}: {status} is not documented\n{body}"
            );
            let mut schema = documented["content"]["application/json"]["schema"].clone();
            if let Some(r) = schema["$ref"].as_str() {
                schema = schemas[r.rsplit('/').next().unwrap()].clone();
            }
            for field in schema["required"].as_sequence().into_iter().flatten() {
                let f = field.as_str().unwrap();
                assert!(body.get(f).is_some(), "{method} {url}: no {f} in {body}");
            }
            called += 1;
        }
    }
    assert_eq!(called, 7);
    let _ = s.stop.send(true);
}
