//! The `--kernels.*` limits of the injection socket, as command-line flags.
//!
//! The socket is open to every local user, so everything a peer can make the
//! exporter keep (connections, workloads, series, bytes in flight, time) has a bound
//! here; each bound, when hit, is counted in `/metrics` and logged at info.

use super::store::KernelLimits;
use clap::Args;
use std::time::Duration;

/// Limits of the kernel listener (`--kernels.*`).
#[derive(Debug, Clone, Args)]
pub struct KernelFlags {
    /// Processes connected to the kernel socket at once (including those that have
    /// not said hello yet); more are refused.
    #[arg(
        long = "kernels.max-processes",
        env = "POOLPROF_KERNELS_MAX_PROCESSES",
        default_value_t = 256,
        value_parser = clap::value_parser!(u32).range(1..=65_536),
        value_name = "N"
    )]
    pub max_processes: u32,

    /// Connections the processes of one user (uid) may hold at once, so that one user
    /// cannot take every slot.
    #[arg(
        long = "kernels.max-processes-per-user",
        env = "POOLPROF_KERNELS_MAX_PROCESSES_PER_USER",
        default_value_t = 128,
        value_parser = clap::value_parser!(u32).range(1..=65_536),
        value_name = "N"
    )]
    pub max_processes_per_user: u32,

    /// Workloads kept at once; a new one beyond it replaces the workload gone longest,
    /// or is refused while all have a process connected.
    #[arg(
        long = "kernels.max-workloads",
        env = "POOLPROF_KERNELS_MAX_WORKLOADS",
        default_value_t = 256,
        value_parser = clap::value_parser!(u32).range(1..=65_536),
        value_name = "N"
    )]
    pub max_workloads: u32,

    /// Workloads the processes of one user (uid) may add.
    #[arg(
        long = "kernels.max-workloads-per-user",
        env = "POOLPROF_KERNELS_MAX_WORKLOADS_PER_USER",
        default_value_t = 64,
        value_parser = clap::value_parser!(u32).range(1..=65_536),
        value_name = "N"
    )]
    pub max_workloads_per_user: u32,

    /// Kernel names kept per GPU and workload; the rest add to kernel="other".
    #[arg(
        long = "kernels.max-kernels-per-workload",
        env = "POOLPROF_KERNELS_MAX_KERNELS_PER_WORKLOAD",
        default_value_t = 50,
        value_parser = clap::value_parser!(u32).range(1..=10_000),
        value_name = "N"
    )]
    pub top_k: u32,

    /// Named kernel series in total; the rest add to kernel="other".
    #[arg(
        long = "kernels.max-kernel-series",
        env = "POOLPROF_KERNELS_MAX_KERNEL_SERIES",
        default_value_t = 20_000,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000),
        value_name = "N"
    )]
    pub max_series: u32,

    /// How long series stay after the last report (a kernel, a GPU of a workload) or
    /// after the workload's last process left (1s to 24h).
    #[arg(
        long = "kernels.series-expiry",
        env = "POOLPROF_KERNELS_SERIES_EXPIRY",
        default_value = "5m",
        value_parser = parse_expiry,
        value_name = "DURATION"
    )]
    pub expiry: Duration,

    /// Time a new connection has to send its whole hello (100ms to 1m).
    #[arg(
        long = "kernels.hello-timeout",
        env = "POOLPROF_KERNELS_HELLO_TIMEOUT",
        default_value = "5s",
        value_parser = parse_socket_timeout,
        value_name = "DURATION"
    )]
    pub hello_timeout: Duration,

    /// Time a report has from its first byte to its last (100ms to 1m).
    #[arg(
        long = "kernels.frame-timeout",
        env = "POOLPROF_KERNELS_FRAME_TIMEOUT",
        default_value = "10s",
        value_parser = parse_socket_timeout,
        value_name = "DURATION"
    )]
    pub frame_timeout: Duration,

    /// A connection silent for this long is closed (1s to 1h; the library reports every
    /// interval, even when idle).
    #[arg(
        long = "kernels.idle-timeout",
        env = "POOLPROF_KERNELS_IDLE_TIMEOUT",
        default_value = "60s",
        value_parser = parse_idle_timeout,
        value_name = "DURATION"
    )]
    pub idle_timeout: Duration,

    /// Bytes all connections together may hold in reports still arriving (1 MiB to
    /// 1 GiB); a report that finds no room by its deadline closes its connection.
    #[arg(
        long = "kernels.max-buffered-bytes",
        env = "POOLPROF_KERNELS_MAX_BUFFERED_BYTES",
        default_value_t = 32 << 20,
        value_parser = clap::value_parser!(u64).range((1 << 20)..=(1 << 30)),
        value_name = "BYTES"
    )]
    pub max_buffered_bytes: u64,
}

impl KernelFlags {
    /// The listener's limits these flags choose (the rest at their defaults).
    pub fn limits(&self) -> KernelLimits {
        KernelLimits {
            max_processes: self.max_processes as usize,
            max_processes_per_user: self.max_processes_per_user as usize,
            max_workloads: self.max_workloads as usize,
            max_workloads_per_user: self.max_workloads_per_user as usize,
            top_k: self.top_k as usize,
            max_series: self.max_series as usize,
            expiry: self.expiry,
            hello_timeout: self.hello_timeout,
            frame_timeout: self.frame_timeout,
            idle_timeout: self.idle_timeout,
            max_buffered_bytes: self.max_buffered_bytes as usize,
            ..KernelLimits::default()
        }
    }
}

/// A duration from `min` to `max`, with the kernel flags' examples of one.
fn parse_between(value: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    crate::cli::parse_duration_within(value, min, max, "500ms, 5s or 1m")
}

fn parse_expiry(value: &str) -> Result<Duration, String> {
    parse_between(value, Duration::from_secs(1), Duration::from_secs(86_400))
}

fn parse_socket_timeout(value: &str) -> Result<Duration, String> {
    parse_between(value, Duration::from_millis(100), Duration::from_secs(60))
}

fn parse_idle_timeout(value: &str) -> Result<Duration, String> {
    parse_between(value, Duration::from_secs(1), Duration::from_secs(3600))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        kernels: KernelFlags,
    }

    fn parse(args: &[&str]) -> Result<KernelLimits, clap::Error> {
        let mut argv = vec!["x"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).map(|c| c.kernels.limits())
    }

    #[test]
    fn defaults_are_the_library_defaults() {
        assert_eq!(parse(&[]).unwrap(), KernelLimits::default());
    }

    #[test]
    fn limits_are_set_and_checked() {
        let limits = parse(&[
            "--kernels.max-workloads=8",
            "--kernels.frame-timeout=250ms",
            "--kernels.max-buffered-bytes=2097152",
        ])
        .unwrap();
        assert_eq!(limits.max_workloads, 8);
        assert_eq!(limits.frame_timeout, Duration::from_millis(250));
        assert_eq!(limits.max_buffered_bytes, 2 << 20);
        for bad in [
            "--kernels.max-processes=0",
            "--kernels.frame-timeout=10ms",
            "--kernels.frame-timeout=soon",
            "--kernels.idle-timeout=2h",
            "--kernels.max-buffered-bytes=1000",
        ] {
            let err = parse(&[bad]).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ValueValidation,
                "{bad}: {err}"
            );
        }
        // the messages name examples of a duration, and the bounds
        let err = parse(&["--kernels.frame-timeout=soon"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("write a duration such as 500ms, 5s or 1m"),
            "{err}"
        );
        let err = parse(&["--kernels.idle-timeout=2h"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("2h is outside 1s to 1h"), "{err}");
    }
}
