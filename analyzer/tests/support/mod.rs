//! A tiny scripted HTTP/1.1 server on 127.0.0.1 for client tests: it records every
//! request and answers with whatever the test's handler returns.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Request {
    /// The form (or query string) parameters.
    pub fn params(&self) -> BTreeMap<String, String> {
        let url = reqwest::Url::parse(&format!("http://x/?{}", self.body)).unwrap();
        url.query_pairs().into_owned().collect()
    }
}

/// A server answering with `handler(request)` = (status, body).
pub struct FakeServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl FakeServer {
    pub fn start(
        handler: impl Fn(&Request, usize) -> (u16, String) + Send + Sync + 'static,
    ) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let handler = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (seen, handler) = (Arc::clone(&seen), Arc::clone(&handler));
                // One thread per connection, so a slow answer does not hold up retries.
                std::thread::spawn(move || {
                    let Some(req) = read_request(&mut stream) else {
                        return;
                    };
                    let n = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(req.clone());
                        seen.len()
                    };
                    let (status, body) = handler(&req, n);
                    let head = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body.as_bytes());
                });
            }
        });
        FakeServer { addr, requests }
    }

    pub fn url(&self) -> reqwest::Url {
        reqwest::Url::parse(&format!("http://{}", self.addr)).unwrap()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// One series for [`matrix`]: its labels and its (time, value text) samples.
pub type SeriesSpec<'a> = (&'a [(&'a str, &'a str)], Vec<(f64, String)>);

/// A `query_range` success body.
pub fn matrix(series: &[SeriesSpec]) -> String {
    let result: Vec<serde_json::Value> = series
        .iter()
        .map(|(labels, values)| {
            let metric: serde_json::Map<String, serde_json::Value> = labels
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                .collect();
            let values: Vec<serde_json::Value> = values
                .iter()
                .map(|(t, v)| serde_json::json!([t, v]))
                .collect();
            serde_json::json!({"metric": metric, "values": values})
        })
        .collect();
    serde_json::json!({"status": "success", "data": {"resultType": "matrix", "result": result}})
        .to_string()
}

/// An API error body, as Prometheus sends it.
pub fn api_error(error_type: &str, message: &str) -> String {
    serde_json::json!({"status": "error", "errorType": error_type, "error": message}).to_string()
}

/// The evaluation times Prometheus would answer for a request's start/end/step.
pub fn grid(req: &Request) -> Vec<f64> {
    let p = req.params();
    let start: f64 = p["start"].parse().unwrap();
    let end: f64 = p["end"].parse().unwrap();
    let step: f64 = p["step"].parse().unwrap();
    let n = ((end - start) / step + 1e-9).floor() as usize + 1;
    (0..n).map(|i| start + i as f64 * step).collect()
}
