//! JSON responses, errors a client can act on, bounded bodies and checked ids.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde::Serialize;

/// The largest request body read, bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest workload id accepted, bytes (the exporter's label limit).
pub const MAX_ID_BYTES: usize = 128;

/// A response.
pub type Reply = Response<Full<Bytes>>;

/// `value` as JSON with `status`.
pub fn json(status: StatusCode, value: &impl Serialize) -> Reply {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"{\"ok\":false}".to_vec());
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// An error as `{"ok": false, "error": "…"}`.
pub fn error(status: StatusCode, message: impl Into<String>) -> Reply {
    json(
        status,
        &serde_json::json!({ "ok": false, "error": message.into() }),
    )
}

/// 405 with the methods the path takes.
pub fn method_not_allowed(allow: &'static str) -> Reply {
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("use {allow} on this path"),
    );
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    r
}

/// Checks a workload id: 1 to [`MAX_ID_BYTES`] bytes of printable characters.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(format!(
            "workload id must be 1 to {MAX_ID_BYTES} bytes (got {})",
            id.len()
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("workload id must not hold control characters".into());
    }
    Ok(())
}

/// Decodes `%XX` escapes; None when an escape is broken or the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Reads a JSON body: refuses other content types (415), bodies over the bound (413,
/// by Content-Length before reading, and while reading) and bad JSON (400).
pub async fn read_json<T: serde::de::DeserializeOwned>(req: Request<Incoming>) -> Result<T, Reply> {
    let headers = req.headers();
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/json") {
        return Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the body as JSON with Content-Type: application/json",
        ));
    }
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let too_large = || {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is over {MAX_BODY_BYTES} bytes"),
        )
    };
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    let body = Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|_| too_large())?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            format!("the body is not the expected JSON: {e}"),
        )
    })
}
