//! The command line (DESIGN.md "Command-line contracts") and how flags override the
//! config file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use reqwest::Url;

use crate::analysis::classify::Thresholds;
use crate::config::Config;
use crate::error::Error;
use crate::offline::{ForecastArgs, PeriodsArgs};
use crate::pipeline::{WorkloadSettings, MAX_PAIRED_WORKLOADS};
use crate::retry::RetryPolicy;
use crate::shard::Shard;
use crate::source::prometheus::{Auth, ClientOptions};

/// poolprof-analyzer: periods, forecasts and capacity ETAs for GPU workloads, from Prometheus.
#[derive(Debug, Parser)]
#[command(name = "poolprof-analyzer", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyze once and push the results to a Pushgateway (or print them): for cron.
    Run(RunArgs),
    /// Analyze on a schedule and expose the latest results on /metrics.
    Serve(ServeArgs),
    /// Analyze once and write a report: a self-contained HTML page of plots, JSON or CSV.
    Report(ReportArgs),
    /// Periods of the series in a CSV or query_range JSON file, as JSON.
    Periods(PeriodsArgs),
    /// Forecast of the series in a CSV or query_range JSON file, as JSON.
    Forecast(ForecastArgs),
    /// Each workload's profile (measured alone) from Prometheus, as JSON.
    Profiles(crate::workloads_cmd::ProfilesArgs),
    /// Co-location predictions for every pair of a profiles file, as JSON.
    Colocate(crate::workloads_cmd::ColocateArgs),
    /// One workload's kernels (class, SMs needed, duration) as JSON or Orion's CSV.
    Kernels(crate::kernels_cmd::KernelsArgs),
}

/// `run --once`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run once and exit (the only mode of `run`; use `serve` for a schedule).
    #[arg(long)]
    pub once: bool,
    /// Pushgateway base URL; the results replace the group
    /// `job="poolprof-analyzer",instance="<i>-of-<N>"`. Without it they are printed.
    #[arg(long, value_name = "URL")]
    pub push: Option<Url>,
    /// Source and analysis settings.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// File to write (replaced whole, never left half-written); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// `html` (one self-contained page of plots), `json` (the same data) or `csv` (the
    /// same data as one long-format table).
    #[arg(long, value_name = "html|json|csv", default_value = "html")]
    pub format: crate::sink::report::Format,
    /// Source and analysis settings.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address for /metrics, e.g. `:7071` (all interfaces) or `127.0.0.1:7071`. The
    /// default sits beside the API's 7070, outside the exporter range (9100-9999) the
    /// Prometheus wiki allocates and clear of Prometheus' own 9090-9094.
    #[arg(long, default_value = ":7071", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// Address of the REST API for schedulers (`/health`, `/profiles`, `/colocation`, …).
    #[arg(long, default_value = ":7070", value_parser = parse_listen)]
    pub api: SocketAddr,
    /// JSON file keeping the profiles given by `POST /register` across restarts.
    #[arg(long, value_name = "FILE", default_value = "poolprof-registry.json")]
    pub registry: PathBuf,
    /// Time between runs.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub interval: Duration,
    /// Source and analysis settings.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags shared by `run`, `serve` and `report`; each overrides the config file.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Base URL of the Prometheus-compatible query API (Prometheus, VictoriaMetrics, Thanos, Mimir).
    #[arg(long, value_name = "URL", env = "POOLPROF_PROMETHEUS_URL")]
    pub prometheus: Option<Url>,
    /// TOML config file: signals, lookback, horizons, source settings.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Analyze only this shard of the fleet, `i/N` (0 <= i < N).
    #[arg(long, default_value = "0/1")]
    pub shard: Shard,
    /// How far back to query (default 6h).
    #[arg(long, value_parser = parse_duration)]
    pub lookback: Option<Duration>,
    /// Query resolution (default: lookback/10080 rounded up to a nice step, at least 15s).
    #[arg(long, value_parser = parse_duration)]
    pub step: Option<Duration>,
    /// Forecast horizon; repeat for several (default 1h).
    #[arg(long = "horizon", value_parser = parse_duration)]
    pub horizons: Vec<Duration>,
    /// Series analyzed at once (default: the CPU count).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// End of the analyzed window, unix seconds (default: now), e.g. for backfilled history.
    #[arg(long, value_name = "UNIX_SECONDS")]
    pub end: Option<f64>,
    /// Limit for one HTTP request (default 30s).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Attempts per request, the first included (default 4).
    #[arg(long)]
    pub attempts: Option<u32>,
    /// File holding a bearer token for the source.
    #[arg(long, value_name = "FILE")]
    pub bearer_token_file: Option<PathBuf>,
    /// Basic-auth user for the source (with --basic-auth-password-file).
    #[arg(long, value_name = "USER")]
    pub basic_auth_user: Option<String>,
    /// File holding the basic-auth password.
    #[arg(long, value_name = "FILE")]
    pub basic_auth_password_file: Option<PathBuf>,
    /// PEM file of extra CA certificates for an https source.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// How compute- and memory-bound are told apart: `roofline` (the GPU's ridge point)
    /// or `fixed` (the earlier pooling profiler's thresholds, 50 and 10 FLOP/B).
    #[arg(long, value_name = "roofline|fixed", default_value = "roofline")]
    pub class_thresholds: Thresholds,
    /// At most this many workloads (by name) are paired for co-location.
    #[arg(long, value_name = "N", default_value_t = MAX_PAIRED_WORKLOADS, value_parser = parse_max_paired)]
    pub max_paired_workloads: usize,
}

/// Everything a run needs, flags and file merged and checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The analysis config (file or defaults, flags applied).
    pub config: Config,
    /// How to reach the source.
    pub client: ClientOptions,
    /// This instance's shard.
    pub shard: Shard,
    /// The window's end, when not now.
    pub end: Option<f64>,
    /// How workloads are classified and paired.
    pub workloads: WorkloadSettings,
}

impl CommonArgs {
    /// Loads the config file (or the defaults) and applies the flags over it.
    pub fn settings(&self) -> Result<Settings, Error> {
        let mut config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        self.apply(&mut config);
        let origin = self.config.as_ref().map_or("flags".to_string(), |p| {
            format!("flags and {}", p.display())
        });
        config
            .validate()
            .map_err(|(field, message)| Error::Usage(format!("{origin}: {field}: {message}")))?;
        if let Some(end) = self.end {
            if !end.is_finite() || end <= 0.0 {
                return Err(Error::Usage(format!(
                    "--end {end}: must be unix seconds, e.g. 1767225600"
                )));
            }
        }
        let client = self.client_options(&config)?;
        Ok(Settings {
            config,
            client,
            shard: self.shard,
            end: self.end,
            workloads: WorkloadSettings {
                thresholds: self.class_thresholds,
                max_paired: self.max_paired_workloads,
                ..WorkloadSettings::default()
            },
        })
    }

    fn apply(&self, config: &mut Config) {
        let a = &mut config.analysis;
        a.lookback = self.lookback.unwrap_or(a.lookback);
        a.step = self.step.or(a.step);
        if !self.horizons.is_empty() {
            a.horizons = self.horizons.clone();
        }
        a.concurrency = self.concurrency.unwrap_or(a.concurrency);
        let s = &mut config.source;
        s.timeout = self.timeout.unwrap_or(s.timeout);
        s.attempts = self.attempts.unwrap_or(s.attempts);
        if self.bearer_token_file.is_some() {
            s.bearer_token_file = self.bearer_token_file.clone();
        }
        if self.basic_auth_user.is_some() || self.basic_auth_password_file.is_some() {
            s.username = self.basic_auth_user.clone();
            s.password_file = self.basic_auth_password_file.clone();
        }
        if self.ca_file.is_some() {
            s.ca_file = self.ca_file.clone();
        }
    }

    fn client_options(&self, config: &Config) -> Result<ClientOptions, Error> {
        let s = &config.source;
        let url = match (&self.prometheus, &s.url) {
            (Some(url), _) => url.clone(),
            (None, Some(text)) => Url::parse(text).map_err(|e| {
                Error::Usage(format!("config source.url {text:?} is not a URL: {e}"))
            })?,
            (None, None) => {
                return Err(Error::Usage(
                    "no source: pass --prometheus URL (or set source.url in --config)".into(),
                ))
            }
        };
        let auth = match (&s.bearer_token_file, &s.username, &s.password_file) {
            (Some(file), _, _) => Auth::Bearer(read_secret(file, "bearer token")?),
            (None, Some(username), Some(file)) => Auth::Basic {
                username: username.clone(),
                password: read_secret(file, "basic-auth password")?,
            },
            _ => Auth::None,
        };
        let mut options = ClientOptions::new(url);
        options.timeout = s.timeout;
        options.retry = RetryPolicy {
            attempts: s.attempts,
            ..RetryPolicy::default()
        };
        options.auth = auth;
        options.ca_file = s.ca_file.clone();
        options.max_body_bytes = s.max_body_bytes;
        options.max_series = s.max_series;
        Ok(options)
    }
}

/// A secret from a file, trailing newline trimmed; bounded so a wrong path cannot load a disk image.
fn read_secret(path: &std::path::Path, what: &str) -> Result<String, Error> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::Usage(format!(
            "cannot read the {what} file {}: {e}",
            path.display()
        ))
    })?;
    if meta.len() > 64 * 1024 {
        return Err(Error::Usage(format!(
            "the {what} file {} is larger than 64 KiB",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Usage(format!(
            "cannot read the {what} file {}: {e}",
            path.display()
        ))
    })?;
    let secret = text.trim_end_matches(['\r', '\n']).to_string();
    if secret.is_empty() {
        return Err(Error::Usage(format!(
            "the {what} file {} is empty",
            path.display()
        )));
    }
    Ok(secret)
}

/// A humantime duration ("30s", "5m", "1h30m").
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{s:?} is not a duration like 30s or 5m: {e}"))?;
    if d.is_zero() {
        return Err(format!("{s:?}: must be longer than zero"));
    }
    Ok(d)
}

/// `:9091` (all interfaces), `127.0.0.1:9091` or `[::1]:9091`.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|_| format!("{s:?} is not a listen address like :9091 or 127.0.0.1:9091"))
}

fn parse_max_paired(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (2..=2000).contains(&n) => Ok(n),
        _ => Err(format!("{s:?}: a number of workloads from 2 to 2000")),
    }
}
