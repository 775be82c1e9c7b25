//! The REST API schedulers call (`serve --api`, default port 7070), compatible with the
//! earlier pooling profiler's clients: `GET /health`, `/profiles`, `/profile/{id}`,
//! `/colocation?a=ID&b=ID`, `POST /register`, `POST /profile`, and `GET /report` (the
//! HTML report, `sink::report`). Every other answer is JSON; errors are
//! `{"ok": false, "error": "…"}` with the status that fits. `docs/api.yaml` documents
//! each endpoint.

pub mod registry;
pub mod reply;
pub mod views;

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::analysis::classify::Thresholds;
use crate::analysis::colocate::Constants;
use crate::pipeline::store::ReportStore;
use registry::{Registration, Registry, RegistryError};
use reply::{check_id, error, json, method_not_allowed, percent_decode, read_json, Reply};

/// What the API reads and writes.
pub struct Api {
    /// The latest run's report.
    pub store: ReportStore,
    /// Hand-given profiles.
    pub registry: Registry,
    /// The co-location model's constants.
    pub constants: Constants,
    /// How hand-given and measured profiles are classified.
    pub thresholds: Thresholds,
    /// Woken by `POST /profile` to run the analysis now.
    pub run_now: Arc<Notify>,
}

/// Serves `api` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    api: Arc<Api>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let handler = move |req: Request<Incoming>| {
        let api = Arc::clone(&api);
        async move { route(&api, req).await }
    };
    crate::sink::http::serve(listener, "API", handler, shutdown).await;
}

/// Dispatches one request.
pub async fn route(api: &Api, req: Request<Incoming>) -> Reply {
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    match path.as_str() {
        "/health" if get => json(StatusCode::OK, &views::health(api)),
        "/health" => method_not_allowed("GET, HEAD"),
        "/profiles" if get => json(StatusCode::OK, &views::profiles(api)),
        "/profiles" => method_not_allowed("GET, HEAD"),
        "/report" if get => crate::sink::report::http_reply(&api.store),
        "/report" => method_not_allowed("GET, HEAD"),
        "/colocation" if get => colocation(api, req.uri().query().unwrap_or("")),
        "/colocation" => method_not_allowed("GET, HEAD"),
        "/register" if method == Method::POST => register(api, req).await,
        "/register" => method_not_allowed("POST"),
        "/profile" if method == Method::POST => profile_now(api, req).await,
        "/profile" => method_not_allowed("POST"),
        p if p.starts_with("/profile/") && get => profile(api, &p["/profile/".len()..]),
        p if p.starts_with("/profile/") => method_not_allowed("GET, HEAD"),
        _ => error(StatusCode::NOT_FOUND, format!("no endpoint {path}; see docs/api.yaml (GET /health, /profiles, /profile/ID, /colocation?a=ID&b=ID, /report; POST /register, /profile)")),
    }
}

/// A workload id from the path or query, decoded and checked.
fn id_from(raw: &str) -> Result<String, String> {
    let id = percent_decode(raw).ok_or("the workload id has a broken %-escape or is not UTF-8")?;
    check_id(&id)?;
    Ok(id)
}

fn profile(api: &Api, raw: &str) -> Reply {
    let id = match id_from(raw) {
        Ok(id) => id,
        Err(m) => return error(StatusCode::BAD_REQUEST, m),
    };
    match views::profile(api, &id) {
        Some(view) => json(StatusCode::OK, &view),
        None => error(
            StatusCode::NOT_FOUND,
            format!(
                "no profile for workload {id:?}; GET /profiles lists them, POST /register adds one"
            ),
        ),
    }
}

fn colocation(api: &Api, query: &str) -> Reply {
    let (mut a, mut b) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "a" => a = Some(v.replace('+', " ")),
            "b" => b = Some(v.replace('+', " ")),
            _ => {}
        }
    }
    let (Some(a), Some(b)) = (a, b) else {
        return error(
            StatusCode::BAD_REQUEST,
            "give both workloads: /colocation?a=ID&b=ID",
        );
    };
    let (a, b) = match (id_from(&a), id_from(&b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(m), _) | (_, Err(m)) => return error(StatusCode::BAD_REQUEST, m),
    };
    if a == b {
        return error(
            StatusCode::BAD_REQUEST,
            "a and b are the same workload; give two",
        );
    }
    match views::colocation(api, &a, &b) {
        Ok(view) => json(StatusCode::OK, &view),
        Err(missing) => error(StatusCode::NOT_FOUND, format!("no profile for workload {missing:?}; GET /profiles lists them, POST /register adds one")),
    }
}

async fn register(api: &Api, req: Request<Incoming>) -> Reply {
    let mut r: Registration = match read_json(req).await {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    r.registered_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let id = r.workload_id.clone();
    match api.registry.register(r) {
        Ok(()) => json(
            StatusCode::OK,
            &serde_json::json!({ "ok": true, "workload_id": id, "profile": views::profile(api, &id) }),
        ),
        Err(RegistryError::Invalid(m)) => error(StatusCode::BAD_REQUEST, m),
        Err(e @ RegistryError::File { .. }) => {
            tracing::error!(error = %e, "registration not saved");
            error(StatusCode::INTERNAL_SERVER_ERROR, format!("not saved: {e}"))
        }
    }
}

/// `POST /profile`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileRequest {
    workload_id: String,
}

async fn profile_now(api: &Api, req: Request<Incoming>) -> Reply {
    let r: ProfileRequest = match read_json(req).await {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    if let Err(m) = check_id(&r.workload_id) {
        return error(StatusCode::BAD_REQUEST, m);
    }
    api.run_now.notify_one();
    let current = views::profile(api, &r.workload_id);
    json(
        StatusCode::ACCEPTED,
        &serde_json::json!({
            "ok": true,
            "status": "analysis scheduled now",
            "workload_id": r.workload_id,
            "poll": format!("/profile/{}", r.workload_id),
            "profile": current,
        }),
    )
}
