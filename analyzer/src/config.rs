//! The analyzer's config file (TOML): what to query, over which window, and how.
//!
//! Every section is optional; an absent file means the defaults, which match the
//! exporter's metric names. A `[[signals]]` list replaces the default signals.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The largest config file read, in bytes.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The most signals one config may list.
const MAX_SIGNALS: usize = 256;

/// A config file problem, naming the file, the field and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("config file {path}: {field}: {message}")]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// The field (`analysis.lookback`, `signals[2].query`), or `file` for the whole file.
    pub field: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// Which label names a series' owner: a whole GPU or a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    /// A whole GPU, by `uuid`.
    Uuid,
    /// A workload, by `workload`.
    Workload,
}

impl Identity {
    /// The label that carries the identity, in queries and in the output.
    pub fn label(self) -> &'static str {
        match self {
            Identity::Uuid => "uuid",
            Identity::Workload => "workload",
        }
    }
}

/// One signal to analyze: a PromQL query returning one series per identity.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signal {
    /// The `signal` label of the results, e.g. `sm_active`.
    pub name: String,
    /// Whose series these are.
    pub identity: Identity,
    /// PromQL; each result series must carry the identity label.
    pub query: String,
    /// PromQL for the limit the signal must stay under (one series per identity), e.g.
    /// the GPU's total memory; when set, the results include the time to reach it.
    #[serde(default)]
    pub capacity: Option<String>,
}

/// Where the source is and how to talk to it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourceSettings {
    /// Base URL of the Prometheus-compatible API; `--prometheus` overrides it.
    pub url: Option<String>,
    /// Limit for one HTTP request.
    #[serde(with = "humantime_serde_compat")]
    pub timeout: Duration,
    /// Attempts per request, the first included.
    pub attempts: u32,
    /// File holding a bearer token.
    pub bearer_token_file: Option<PathBuf>,
    /// Basic-auth user name (with `password_file`).
    pub username: Option<String>,
    /// File holding the basic-auth password.
    pub password_file: Option<PathBuf>,
    /// PEM file of extra CA certificates.
    pub ca_file: Option<PathBuf>,
    /// The largest response accepted, in bytes.
    pub max_body_bytes: usize,
    /// The most series one query may return (after shard filtering).
    pub max_series: usize,
}

impl Default for SourceSettings {
    fn default() -> Self {
        SourceSettings {
            url: None,
            timeout: Duration::from_secs(30),
            attempts: 4,
            bearer_token_file: None,
            username: None,
            password_file: None,
            ca_file: None,
            max_body_bytes: 256 << 20,
            max_series: 100_000,
        }
    }
}

/// The analysis window and forecast horizons.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnalysisSettings {
    /// How far back to query.
    #[serde(with = "humantime_serde_compat")]
    pub lookback: Duration,
    /// Query resolution; chosen from the lookback when absent.
    #[serde(default, with = "humantime_serde_compat::option")]
    pub step: Option<Duration>,
    /// Forecast horizons, each reported as a `horizon` label.
    #[serde(with = "humantime_serde_compat::list")]
    pub horizons: Vec<Duration>,
    /// Series analyzed at once.
    pub concurrency: usize,
}

impl Default for AnalysisSettings {
    fn default() -> Self {
        AnalysisSettings {
            lookback: Duration::from_secs(6 * 3600),
            step: None,
            horizons: vec![Duration::from_secs(3600)],
            concurrency: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// The whole config.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The source.
    #[serde(default)]
    pub source: SourceSettings,
    /// The analysis window.
    #[serde(default)]
    pub analysis: AnalysisSettings,
    /// What to analyze; the defaults when absent.
    #[serde(default = "default_signals")]
    pub signals: Vec<Signal>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            source: SourceSettings::default(),
            analysis: AnalysisSettings::default(),
            signals: default_signals(),
        }
    }
}

impl Config {
    /// Reads and validates `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let err = |field: &str, message: String| ConfigError {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
        };
        let meta =
            std::fs::metadata(path).map_err(|e| err("file", format!("cannot read it: {e}")))?;
        if meta.len() > MAX_CONFIG_BYTES {
            return Err(err(
                "file",
                format!("larger than {MAX_CONFIG_BYTES} bytes; is this the right file?"),
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| err("file", format!("cannot read it: {e}")))?;
        Config::parse(&text).map_err(|(field, message)| err(&field, message))
    }

    /// Parses and validates TOML text; the error names the field.
    pub fn parse(text: &str) -> Result<Config, (String, String)> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().replace('\n', "; ");
            match e.span() {
                Some(span) => {
                    let start = span.start.min(text.len());
                    let line = text[..start].matches('\n').count() + 1;
                    (field_at(text, start), format!("line {line}: {message}"))
                }
                None => ("file".to_string(), message),
            }
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges and names that TOML types alone cannot.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |field: &str, msg: &str| Err((field.to_string(), msg.to_string()));
        let s = &self.source;
        if s.timeout.is_zero() || s.timeout > Duration::from_secs(600) {
            return bad("source.timeout", "must be between 1ms and 10m");
        }
        if s.attempts == 0 || s.attempts > 20 {
            return bad("source.attempts", "must be between 1 and 20");
        }
        if s.username.is_some() != s.password_file.is_some() {
            return bad("source.username", "username and password_file go together");
        }
        if s.username.is_some() && s.bearer_token_file.is_some() {
            return bad(
                "source.bearer_token_file",
                "use either a bearer token or basic auth, not both",
            );
        }
        if s.max_body_bytes < 1024 {
            return bad("source.max_body_bytes", "must be at least 1024");
        }
        if s.max_series == 0 {
            return bad("source.max_series", "must be at least 1");
        }
        self.validate_analysis()?;
        self.validate_signals()
    }

    fn validate_analysis(&self) -> Result<(), (String, String)> {
        let bad = |field: &str, msg: String| Err((field.to_string(), msg));
        let a = &self.analysis;
        if a.lookback < Duration::from_secs(60) || a.lookback > Duration::from_secs(400 * 86_400) {
            return bad("analysis.lookback", "must be between 1m and 400d".into());
        }
        if let Some(step) = a.step {
            if step < Duration::from_secs(1) || step > a.lookback / 4 {
                return bad(
                    "analysis.step",
                    "must be at least 1s and at most a quarter of the lookback".into(),
                );
            }
        }
        if a.horizons.is_empty() || a.horizons.len() > 16 {
            return bad(
                "analysis.horizons",
                "list 1 to 16 horizons, e.g. [\"1h\"]".into(),
            );
        }
        let step = a
            .step
            .unwrap_or_else(|| crate::source::prometheus::choose_step(a.lookback));
        for (i, h) in a.horizons.iter().enumerate() {
            let steps = h.as_secs_f64() / step.as_secs_f64();
            if *h < step || steps > 100_000.0 {
                return bad(
                    &format!("analysis.horizons[{i}]"),
                    format!(
                        "must be at least one step ({}s) and at most 100000 steps",
                        step.as_secs()
                    ),
                );
            }
        }
        if a.concurrency == 0 || a.concurrency > 1024 {
            return bad("analysis.concurrency", "must be between 1 and 1024".into());
        }
        Ok(())
    }

    fn validate_signals(&self) -> Result<(), (String, String)> {
        let bad = |i: usize, field: &str, msg: &str| {
            Err((format!("signals[{i}].{field}"), msg.to_string()))
        };
        if self.signals.is_empty() || self.signals.len() > MAX_SIGNALS {
            return Err((
                "signals".into(),
                format!("list 1 to {MAX_SIGNALS} signals, or leave it out for the defaults"),
            ));
        }
        for (i, sig) in self.signals.iter().enumerate() {
            let valid_name = !sig.name.is_empty()
                && sig.name.len() <= 64
                && sig
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !valid_name {
                return bad(i, "name", "must be 1-64 characters of a-z, 0-9 and _");
            }
            if sig.query.trim().is_empty() {
                return bad(i, "query", "must not be empty");
            }
            if sig.capacity.as_deref().is_some_and(|c| c.trim().is_empty()) {
                return bad(i, "capacity", "must not be empty; leave it out instead");
            }
            if self.signals[..i]
                .iter()
                .any(|o| o.name == sig.name && o.identity == sig.identity)
            {
                return bad(i, "name", "another signal has the same name and identity");
            }
        }
        Ok(())
    }

    /// The step the queries use: the configured one or the one chosen from the lookback.
    pub fn step(&self) -> Duration {
        self.analysis
            .step
            .unwrap_or_else(|| crate::source::prometheus::choose_step(self.analysis.lookback))
    }
}

/// The signals analyzed when the config lists none, on the exporter's metric names.
pub fn default_signals() -> Vec<Signal> {
    let gpu = |name: &str, agg: &str, metric: &str, capacity: Option<&str>| Signal {
        name: name.into(),
        identity: Identity::Uuid,
        query: format!("{agg} by (uuid) ({metric})"),
        capacity: capacity.map(String::from),
    };
    // A workload's share of device activity: the activity of each GPU it holds memory on,
    // averaged over those GPUs.
    let on_workload_gpus = |name: &str, metric: &str| {
        Signal {
        name: name.into(),
        identity: Identity::Workload,
        query: format!(
            "avg by (workload) (clamp_max(count by (uuid, workload) (poolprof_process_gpu_memory_bytes), 1) \
             * on (uuid) group_left () avg by (uuid) ({metric}))"
        ),
        capacity: None,
    }
    };
    vec![
        gpu("sm_active", "avg", "poolprof_gpu_sm_active_ratio", None),
        gpu(
            "tensor_active",
            "avg",
            "poolprof_gpu_tensor_any_active_ratio",
            None,
        ),
        gpu("dram_active", "avg", "poolprof_gpu_dram_active_ratio", None),
        gpu("utilization", "avg", "poolprof_gpu_utilization_ratio", None),
        gpu(
            "memory_used",
            "max",
            "poolprof_gpu_memory_used_bytes",
            Some("max by (uuid) (poolprof_gpu_memory_total_bytes)"),
        ),
        gpu("power", "avg", "poolprof_gpu_power_usage_watts", None),
        on_workload_gpus("sm_active", "poolprof_gpu_sm_active_ratio"),
        on_workload_gpus("tensor_active", "poolprof_gpu_tensor_any_active_ratio"),
        on_workload_gpus("dram_active", "poolprof_gpu_dram_active_ratio"),
        on_workload_gpus("utilization", "poolprof_gpu_utilization_ratio"),
        Signal {
            name: "memory_used".into(),
            identity: Identity::Workload,
            query: "sum by (workload) (poolprof_process_gpu_memory_bytes)".into(),
            capacity: None,
        },
    ]
}

/// The dotted path of the TOML key or table header nearest before byte `offset`, for
/// error messages (`analysis.lookback`, `signals[1].query`).
fn field_at(text: &str, offset: usize) -> String {
    // Include the whole line the error starts on: a span may begin at the key itself.
    let offset = offset.min(text.len());
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    let before = &text[..line_end];
    let mut table = String::new();
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    let mut key = None;
    for line in before.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")) {
            let n = counts.entry(name.trim().to_string()).or_insert(0);
            table = format!("{}[{}]", name.trim(), *n);
            *n += 1;
            key = None;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            table = name.trim().to_string();
            key = None;
        } else if let Some((k, _)) = t.split_once('=') {
            key = Some(k.trim().to_string());
        }
    }
    match (table.is_empty(), key) {
        (true, None) => "file".into(),
        (true, Some(k)) => k,
        (false, None) => table,
        (false, Some(k)) => format!("{table}.{k}"),
    }
}

/// Durations written as humantime strings ("30s", "6h", "1h30m").
mod humantime_serde_compat {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    fn parse<E: serde::de::Error>(s: &str) -> Result<Duration, E> {
        humantime::parse_duration(s).map_err(|e| {
            E::custom(format!(
                "{s:?} is not a duration like \"30s\" or \"6h\": {e}"
            ))
        })
    }

    /// One duration.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        parse(&String::deserialize(d)?)
    }

    /// An optional duration.
    pub mod option {
        use super::*;

        /// An optional duration.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|s| parse(&s))
                .transpose()
        }
    }

    /// A list of durations.
    pub mod list {
        use super::*;

        /// A list of durations.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
            Vec::<String>::deserialize(d)?
                .iter()
                .map(|s| parse(s))
                .collect()
        }
    }
}
