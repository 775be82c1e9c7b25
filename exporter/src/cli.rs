//! Command-line flags (clap). Every flag can also come from a `POOLPROF_*`
//! environment variable; a flag on the command line wins over the variable.

pub mod collectors;

use clap::{Args, Parser, ValueEnum};
use collectors::CollectorArgs;
use std::path::PathBuf;
use std::time::Duration;

/// Shortest `--collect-interval`: below it NVML's own sampling windows dominate.
pub const MIN_COLLECT_INTERVAL: Duration = Duration::from_millis(100);
/// Longest `--collect-interval`.
pub const MAX_COLLECT_INTERVAL: Duration = Duration::from_secs(3600);
/// Most simulated GPUs `--simulate` accepts.
pub const MAX_SIMULATED_GPUS: u32 = 64;

/// poolprof-exporter: GPU metrics (NVML, GPM, CUPTI kernels) for Prometheus.
#[derive(Debug, Parser)]
#[command(name = "poolprof-exporter", version, about, long_about = None)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// A subcommand; without one the exporter serves /metrics.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of the exporter itself.
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Logging flags, accepted before or after a subcommand.
    #[command(flatten)]
    pub log: LogArgs,
}

/// Subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write simulated history as OpenMetrics with timestamps, for
    /// `promtool tsdb create-blocks-from openmetrics`.
    Simulate(crate::simulate::SimulateArgs),
}

/// Flags of the serving exporter.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on, `host:port`, or `:port` for every interface (IPv6 and IPv4);
    /// repeat the flag (or separate with commas) to listen on several.
    #[arg(
        long = "web.listen-address",
        env = "POOLPROF_WEB_LISTEN_ADDRESS",
        default_value = ":9090",
        value_delimiter = ',',
        value_name = "ADDRESS"
    )]
    pub listen_addresses: Vec<String>,

    /// Prometheus exporter-toolkit web config (TLS, basic auth) in YAML.
    #[arg(
        long = "web.config.file",
        env = "POOLPROF_WEB_CONFIG_FILE",
        value_name = "FILE"
    )]
    pub web_config_file: Option<PathBuf>,

    /// Most requests served at once; more get 503 right away. 0 means no limit.
    #[arg(
        long = "web.max-requests",
        env = "POOLPROF_WEB_MAX_REQUESTS",
        default_value_t = 40,
        value_parser = clap::value_parser!(u32).range(0..=100_000),
        value_name = "N"
    )]
    pub max_requests: u32,

    /// How often GPUs are read (100ms to 1h); scrapes serve the latest reading.
    #[arg(
        long = "collect-interval",
        env = "POOLPROF_COLLECT_INTERVAL",
        default_value = "1s",
        value_parser = parse_collect_interval,
        value_name = "DURATION"
    )]
    pub collect_interval: Duration,

    /// Simulate N GPUs with built-in workloads instead of reading NVML.
    #[arg(
        long = "simulate",
        env = "POOLPROF_SIMULATE",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SIMULATED_GPUS)),
        conflicts_with = "scenario",
        value_name = "N"
    )]
    pub simulate: Option<u32>,

    /// Simulate the GPUs described by a scenario file (TOML) instead of reading NVML.
    #[arg(long = "scenario", env = "POOLPROF_SCENARIO", value_name = "FILE")]
    pub scenario: Option<PathBuf>,

    /// Unix socket where injected applications send kernel statistics. When the
    /// default path cannot be used (not root), kernel metrics are off with a warning;
    /// a path given explicitly must work.
    #[arg(
        long = "kernels.socket-path",
        env = "POOLPROF_KERNELS_SOCKET_PATH",
        default_value = crate::kernels::DEFAULT_SOCKET_PATH,
        value_name = "PATH"
    )]
    pub kernels_socket_path: PathBuf,

    /// Do not listen for kernel statistics from injected applications.
    #[arg(long = "no-kernels", env = "POOLPROF_NO_KERNELS")]
    pub no_kernels: bool,

    /// Limits of the kernel socket (`--kernels.max-*`, `--kernels.*-timeout`).
    #[command(flatten)]
    pub kernels: crate::kernels::KernelFlags,

    /// The kubelet's pod-resources socket, read for poolprof_gpu_pod_info (which
    /// container holds each GPU). Default: /var/lib/kubelet/pod-resources/kubelet.sock
    /// when it exists; a path given here must exist.
    #[arg(
        long = "kubelet.pod-resources-socket",
        env = "POOLPROF_KUBELET_POD_RESOURCES_SOCKET",
        value_name = "PATH"
    )]
    pub kubelet_socket: Option<PathBuf>,

    /// How often to ask the kubelet which containers hold the GPUs (1s to 1h).
    #[arg(
        long = "kubelet.pod-resources-interval",
        env = "POOLPROF_KUBELET_POD_RESOURCES_INTERVAL",
        default_value = "10s",
        value_parser = parse_kubelet_interval,
        value_name = "DURATION"
    )]
    pub kubelet_interval: Duration,

    /// Do not ask the kubelet which containers hold the GPUs.
    #[arg(long = "no-kubelet", env = "POOLPROF_NO_KUBELET")]
    pub no_kubelet: bool,

    /// `--collector.<name>`, `--no-collector.<name>` and the collectors' options.
    #[command(flatten)]
    pub collectors: CollectorArgs,
}

/// Where the GPUs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuSource {
    /// Real GPUs through NVML.
    Nvml,
    /// `--simulate N`.
    Simulated(u32),
    /// `--scenario FILE`.
    Scenario(PathBuf),
}

impl ServeArgs {
    /// The GPU source the flags select (clap already refused both at once).
    pub fn gpu_source(&self) -> GpuSource {
        match (&self.scenario, self.simulate) {
            (Some(file), _) => GpuSource::Scenario(file.clone()),
            (None, Some(n)) => GpuSource::Simulated(n),
            (None, None) => GpuSource::Nvml,
        }
    }
}

/// Logging flags.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Least severe level logged.
    #[arg(
        long = "log.level",
        env = "POOLPROF_LOG_LEVEL",
        value_enum,
        default_value_t = LogLevel::Info,
        global = true
    )]
    pub level: LogLevel,

    /// Log line format, on standard error.
    #[arg(
        long = "log.format",
        env = "POOLPROF_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Logfmt,
        global = true
    )]
    pub format: LogFormat,
}

/// `--log.level` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum LogLevel {
    /// Failures only.
    Error,
    /// Failures and degraded operation.
    Warn,
    /// Start, stop and state changes.
    Info,
    /// Per-collection detail.
    Debug,
    /// Everything.
    Trace,
}

/// `--log.format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// `key=value` pairs, one event per line.
    Logfmt,
    /// One JSON object per line.
    Json,
}

/// Parses a humantime duration (`500ms`, `1s`, `2m`) within the allowed bounds.
pub fn parse_collect_interval(value: &str) -> Result<Duration, String> {
    parse_duration_within(
        value,
        MIN_COLLECT_INTERVAL,
        MAX_COLLECT_INTERVAL,
        "500ms, 1s or 1m",
    )
}

/// Parses `--kubelet.pod-resources-interval`: 1s to 1h, since each poll is a call
/// to the kubelet.
pub fn parse_kubelet_interval(value: &str) -> Result<Duration, String> {
    parse_duration_within(
        value,
        Duration::from_secs(1),
        Duration::from_secs(3600),
        "10s or 1m",
    )
}

/// Parses a humantime duration from `min` to `max`; a value that is no duration is
/// answered with `examples` of one, a value out of bounds with the bounds.
pub fn parse_duration_within(
    value: &str,
    min: Duration,
    max: Duration,
    examples: &str,
) -> Result<Duration, String> {
    let d = humantime::parse_duration(value)
        .map_err(|e| format!("{e}: write a duration such as {examples}"))?;
    if !(min..=max).contains(&d) {
        return Err(format!(
            "{value} is outside {} to {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("poolprof-exporter").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_match_the_design() {
        let cli = parse(&[]).unwrap();
        assert_eq!(cli.serve.listen_addresses, vec![":9090"]);
        assert_eq!(cli.serve.collect_interval, Duration::from_secs(1));
        assert_eq!(cli.serve.max_requests, 40);
        assert_eq!(cli.serve.gpu_source(), GpuSource::Nvml);
        assert_eq!(cli.log.level, LogLevel::Info);
        assert_eq!(cli.log.format, LogFormat::Logfmt);
        assert!(!cli.serve.no_kernels);
        assert_eq!(cli.serve.kubelet_socket, None);
        assert_eq!(cli.serve.kubelet_interval, Duration::from_secs(10));
        assert!(!cli.serve.no_kubelet);
    }

    #[test]
    fn kubelet_interval_is_bounded() {
        let interval = |v: &str| parse(&["--kubelet.pod-resources-interval", v]);
        assert_eq!(
            interval("30s").unwrap().serve.kubelet_interval,
            Duration::from_secs(30)
        );
        assert!(interval("500ms").is_err());
        assert!(interval("2h").is_err());
        assert!(interval("often").is_err());
    }

    #[test]
    fn listen_address_repeats() {
        let cli = parse(&[
            "--web.listen-address=:1",
            "--web.listen-address",
            "127.0.0.1:2",
        ])
        .unwrap();
        assert_eq!(cli.serve.listen_addresses, vec![":1", "127.0.0.1:2"]);
    }

    #[test]
    fn simulate_and_scenario_exclude_each_other() {
        let err = parse(&["--simulate", "2", "--scenario", "s.toml"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
        assert_eq!(
            parse(&["--simulate", "3"]).unwrap().serve.gpu_source(),
            GpuSource::Simulated(3)
        );
        assert_eq!(
            parse(&["--scenario", "s.toml"]).unwrap().serve.gpu_source(),
            GpuSource::Scenario(PathBuf::from("s.toml"))
        );
    }

    #[test]
    fn simulate_is_bounded() {
        assert!(parse(&["--simulate", "0"]).is_err());
        assert!(parse(&["--simulate", "65"]).is_err());
        assert!(parse(&["--simulate", "64"]).is_ok());
    }

    #[test]
    fn collect_interval_is_bounded() {
        assert_eq!(
            parse_collect_interval("250ms"),
            Ok(Duration::from_millis(250))
        );
        assert!(parse_collect_interval("10ms")
            .unwrap_err()
            .contains("outside"));
        assert!(parse_collect_interval("2h")
            .unwrap_err()
            .contains("outside"));
        assert!(parse_collect_interval("soon").is_err());
        assert!(parse(&["--collect-interval", "5ms"]).is_err());
    }

    #[test]
    fn duration_errors_give_examples_and_bounds() {
        assert_eq!(
            parse_kubelet_interval("2h").unwrap_err(),
            "2h is outside 1s to 1h"
        );
        assert!(parse_kubelet_interval("often")
            .unwrap_err()
            .ends_with(": write a duration such as 10s or 1m"));
        assert_eq!(
            parse_collect_interval("5ms").unwrap_err(),
            "5ms is outside 100ms to 1h"
        );
        assert!(parse_collect_interval("soon")
            .unwrap_err()
            .ends_with(": write a duration such as 500ms, 1s or 1m"));
    }

    #[test]
    fn max_requests_is_bounded() {
        assert_eq!(
            parse(&["--web.max-requests", "0"])
                .unwrap()
                .serve
                .max_requests,
            0
        );
        assert!(parse(&["--web.max-requests", "-1"]).is_err());
        assert!(parse(&["--web.max-requests", "1000000"]).is_err());
    }

    #[test]
    fn log_flags_take_only_known_values() {
        let cli = parse(&["--log.level", "debug", "--log.format", "json"]).unwrap();
        assert_eq!(cli.log.level, LogLevel::Debug);
        assert_eq!(cli.log.format, LogFormat::Json);
        assert!(parse(&["--log.level", "verbose"]).is_err());
        assert!(parse(&["--log.format", "xml"]).is_err());
    }

    #[test]
    fn every_flag_has_a_poolprof_env_var() {
        let command = Cli::command();
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if matches!(long, "help" | "version") {
                continue;
            }
            let expected = format!("POOLPROF_{}", long.replace(['.', '-'], "_").to_uppercase());
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            assert_eq!(env.as_deref(), Some(expected.as_str()), "--{long}");
        }
        // The subcommand's flags are the sim helper's; they only need the prefix.
        let simulate = command.find_subcommand("simulate").unwrap();
        for arg in simulate
            .get_arguments()
            .filter(|a| a.get_long() != Some("help"))
        {
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            assert!(
                env.as_deref().is_some_and(|e| e.starts_with("POOLPROF_")),
                "simulate --{:?}",
                arg.get_long()
            );
        }
    }

    #[test]
    fn simulate_subcommand_takes_its_own_flags() {
        let cli = parse(&[
            "simulate",
            "--history",
            "1h",
            "--output",
            "h.om",
            "--simulate",
            "2",
        ])
        .unwrap();
        let Some(Command::Simulate(args)) = cli.command else {
            panic!("simulate subcommand expected");
        };
        assert_eq!(args.history, Duration::from_secs(3600));
        assert_eq!(args.simulate, 2);
        assert_eq!(args.output, PathBuf::from("h.om"));
        let cli = parse(&["simulate", "--output", "h.om", "--log.level", "warn"]).unwrap();
        assert_eq!(cli.log.level, LogLevel::Warn);
    }

    #[test]
    fn serve_flags_do_not_mix_with_the_subcommand() {
        assert!(parse(&["--web.max-requests", "3", "simulate", "--output", "h.om"]).is_err());
    }

    #[test]
    fn unknown_flag_is_a_usage_error() {
        let err = parse(&["--web.listen-adress", ":1"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(err.exit_code(), 2);
    }
}
