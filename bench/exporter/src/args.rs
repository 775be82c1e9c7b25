//! Command line of `scrape-load`, validated and bounded.

use std::time::Duration;

/// Most scrapers at once.
const MAX_CONCURRENCY: usize = 1024;
/// Longest run.
const MAX_DURATION: Duration = Duration::from_secs(3600);
/// Most requests in one run.
const MAX_REQUESTS: u64 = 100_000_000;

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Fetch the URL once and print the body.
    Get,
    /// Run concurrent scrapers and report latencies.
    Load,
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    /// Lines for people.
    Text,
    /// One `key=value …` line for scripts.
    Kv,
}

/// A loopback HTTP target.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `host:port` to connect to.
    pub authority: String,
    /// Path and query to request.
    pub path: String,
}

/// Parsed arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// Get once, or load.
    pub mode: Mode,
    /// Where to send requests.
    pub target: Target,
    /// Scrapers at once.
    pub concurrency: usize,
    /// How long the load runs.
    pub duration: Duration,
    /// Stop after this many requests in all.
    pub max_requests: Option<u64>,
    /// Pause between two requests of one scraper (zero: back to back).
    pub interval: Duration,
    /// Longest wait for one response.
    pub timeout: Duration,
    /// Ask for gzip like Prometheus does.
    pub gzip: bool,
    /// The Accept header to send, if any (Prometheus asks for OpenMetrics first).
    pub accept: Option<String>,
    /// Runtime worker threads.
    pub threads: usize,
    /// Output format.
    pub format: Format,
}

/// The usage text.
pub const USAGE: &str = "\
usage: scrape-load --url http://127.0.0.1:PORT/metrics [options]
  --get                fetch once, print the body, exit 0 on HTTP 200
  --concurrency N      scrapers at once (1-1024, default 50)
  --duration D         how long to run: 30, 30s, 5m (default 10s, at most 1h)
  --requests N         stop after N requests in all
  --interval D         pause between requests of one scraper (default 0: back to back)
  --timeout D          longest wait for one response (default 10s)
  --gzip               send Accept-Encoding: gzip
  --accept VALUE       send this Accept header (e.g. Prometheus's, OpenMetrics first)
  --threads N          runtime threads (default 2)
  --format text|kv     output for people or one key=value line (default text)
Only loopback targets (127.0.0.1, ::1, localhost) are allowed.";

/// Parses `30`, `30s`, `250ms`, `5m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (examples: 30s, 250ms, 5m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (use ms, s or m)")),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("`{s}` must be a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Accepts `http://HOST:PORT/path` where HOST is a loopback address.
pub fn parse_url(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("--url `{url}` must start with http://"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| format!("--url `{url}` needs a port (http://127.0.0.1:9090/metrics)"))?;
    let loopback = matches!(host, "127.0.0.1" | "localhost" | "[::1]");
    if !loopback {
        return Err(format!(
            "--url `{url}`: host `{host}` is not loopback; load goes to 127.0.0.1 only"
        ));
    }
    port.parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("--url `{url}`: `{port}` is not a port"))?;
    Ok(Target {
        authority: authority.to_string(),
        path: path.to_string(),
    })
}

fn parse_count(flag: &str, value: &str, max: u64) -> Result<u64, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("{flag} `{value}` must be a whole number from 1 to {max}"))
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[String]) -> Result<Args, String> {
    let mut url = None;
    let mut args = Args {
        mode: Mode::Load,
        target: Target {
            authority: String::new(),
            path: String::new(),
        },
        concurrency: 50,
        duration: Duration::from_secs(10),
        max_requests: None,
        interval: Duration::ZERO,
        timeout: Duration::from_secs(10),
        gzip: false,
        accept: None,
        threads: 2,
        format: Format::Text,
    };
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name {
            "--url" => url = Some(value()?),
            "--get" => args.mode = Mode::Get,
            "--gzip" => args.gzip = true,
            "--accept" => {
                let v = value()?;
                if v.is_empty() || v.len() > 1024 || v.chars().any(|c| c.is_control()) {
                    return Err(
                        "--accept must be a header value of 1 to 1024 printable characters".into(),
                    );
                }
                args.accept = Some(v);
            }
            "--concurrency" => {
                args.concurrency = parse_count(name, &value()?, MAX_CONCURRENCY as u64)? as usize
            }
            "--threads" => args.threads = parse_count(name, &value()?, 64)? as usize,
            "--requests" => args.max_requests = Some(parse_count(name, &value()?, MAX_REQUESTS)?),
            "--duration" => args.duration = parse_duration(&value()?)?,
            "--interval" => args.interval = parse_duration(&value()?)?,
            "--timeout" => args.timeout = parse_duration(&value()?)?,
            "--format" => {
                args.format = match value()?.as_str() {
                    "text" => Format::Text,
                    "kv" => Format::Kv,
                    other => return Err(format!("--format `{other}`: use text or kv")),
                }
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    args.target = parse_url(&url.ok_or("--url is required")?)?;
    if args.duration.is_zero() || args.duration > MAX_DURATION {
        return Err("--duration must be more than 0 and at most 1h".into());
    }
    if args.timeout.is_zero() {
        return Err("--timeout must be more than 0".into());
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_and_flags() {
        let a = parse(&argv("--url http://127.0.0.1:9400/metrics")).unwrap();
        assert_eq!(a.concurrency, 50);
        assert_eq!(a.target.authority, "127.0.0.1:9400");
        assert_eq!(a.target.path, "/metrics");
        let a = parse(&argv(
            "--url=http://localhost:1/m --concurrency 3 --duration 2m --requests 10 --gzip --format kv --get",
        ))
        .unwrap();
        assert_eq!(a.concurrency, 3);
        assert_eq!(a.duration, Duration::from_secs(120));
        assert_eq!(a.max_requests, Some(10));
        assert!(a.gzip);
        assert_eq!(a.format, Format::Kv);
        assert_eq!(a.mode, Mode::Get);
        assert_eq!(a.accept, None);
        let a = parse(&[
            "--url".to_string(),
            "http://127.0.0.1:1/".to_string(),
            "--accept".to_string(),
            "application/openmetrics-text;version=1.0.0,text/plain;q=0.5".to_string(),
        ])
        .unwrap();
        assert_eq!(
            a.accept.as_deref(),
            Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
        );
        for bad in ["", "a\nb"] {
            let parsed = parse(&[
                "--url=http://127.0.0.1:1/".to_string(),
                format!("--accept={bad}"),
            ]);
            assert!(parsed.is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn only_loopback_targets() {
        for bad in [
            "http://10.0.0.1:9090/metrics",
            "http://example.com:80/",
            "https://127.0.0.1:9090/",
            "http://127.0.0.1/metrics",
            "http://127.0.0.1:0/",
            "http://127.0.0.1:99999/",
        ] {
            assert!(parse_url(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(parse_url("http://[::1]:80").unwrap().path, "/");
    }

    #[test]
    fn bounds_are_enforced() {
        let base = "--url http://127.0.0.1:1/";
        for extra in [
            "--concurrency 0",
            "--concurrency 5000",
            "--duration 2h",
            "--duration 0",
            "--duration -1s",
            "--requests 0",
            "--timeout 0",
            "--format xml",
            "--bogus",
            "--duration",
        ] {
            assert!(
                parse(&argv(&format!("{base} {extra}"))).is_err(),
                "{extra} accepted"
            );
        }
        assert!(
            parse(&argv("--concurrency 5")).is_err(),
            "missing --url accepted"
        );
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("7").unwrap(), Duration::from_secs(7));
        assert!(parse_duration("5h").is_err());
        assert!(parse_duration("abc").is_err());
    }
}
