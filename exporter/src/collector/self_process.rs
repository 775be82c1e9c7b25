//! The exporter's own process, under the names every Prometheus client library uses
//! (`process_*`), read from `/proc/self` each collection. Linux only; on a system
//! without `/proc` the series are absent.
//!
//! Metrics:
//! - `process_cpu_seconds_total`, `process_start_time_seconds`
//! - `process_resident_memory_bytes`, `process_virtual_memory_bytes`
//! - `process_open_fds`, `process_max_fds`

use crate::registry::MetricSet;
use std::path::Path;
use std::sync::OnceLock;

/// Names of the families written here.
pub const PROCESS_METRICS: &[&str] = &[
    "process_cpu_seconds_total",
    "process_start_time_seconds",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_open_fds",
    "process_max_fds",
];

/// What `/proc/self/stat` says, in base units.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    cpu_seconds: f64,
    start_seconds_after_boot: f64,
    virtual_bytes: f64,
    resident_bytes: f64,
}

/// Writes the `process_*` series of this process.
pub fn write(out: &mut MetricSet) {
    // The boot time never changes, and `/proc/stat` is long on a many-CPU node (a
    // line per CPU and one count per interrupt): read it once, not every collection.
    static BOOT: OnceLock<Option<f64>> = OnceLock::new();
    let proc = Path::new("/proc");
    let boot = *BOOT.get_or_init(|| {
        std::fs::read_to_string(proc.join("stat"))
            .ok()
            .and_then(|s| parse_boot_time(&s))
    });
    write_from(out, proc, boot, ticks_per_second(), page_size());
}

fn write_from(out: &mut MetricSet, proc: &Path, boot: Option<f64>, ticks: f64, page: f64) {
    let read = |path: &str| std::fs::read_to_string(proc.join(path)).ok();
    if let Some(stat) = read("self/stat").and_then(|s| parse_stat(&s, ticks, page)) {
        out.counter(
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
            &[],
            stat.cpu_seconds,
        );
        if let Some(boot) = boot {
            out.gauge(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                &[],
                boot + stat.start_seconds_after_boot,
            );
        }
        out.gauge(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            &[],
            stat.virtual_bytes,
        );
        out.gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            &[],
            stat.resident_bytes,
        );
    }
    if let Ok(fds) = std::fs::read_dir(proc.join("self/fd")) {
        out.gauge(
            "process_open_fds",
            "Number of open file descriptors.",
            &[],
            fds.count() as f64,
        );
    }
    if let Some(max) = max_fds() {
        out.gauge(
            "process_max_fds",
            "Maximum number of open file descriptors.",
            &[],
            max,
        );
    }
}

/// Fields of `/proc/self/stat` after the command name (which may hold spaces and
/// parentheses, hence the split at the last `)`): utime and stime are fields 14–15,
/// starttime 22, vsize 23, rss 24 (in pages), counting from 1.
fn parse_stat(text: &str, ticks: f64, page: f64) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let field = |n: usize| -> Option<f64> { fields.get(n - 3)?.parse().ok() };
    Some(Stat {
        cpu_seconds: (field(14)? + field(15)?) / ticks,
        start_seconds_after_boot: field(22)? / ticks,
        virtual_bytes: field(23)?,
        resident_bytes: field(24)? * page,
    })
}

/// `btime` of `/proc/stat`: boot time in seconds since the epoch.
fn parse_boot_time(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The soft limit on open files (a syscall, where `/proc/self/limits` would be a
/// file to open and parse every collection).
fn max_fds() -> Option<f64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit that we own.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    (rc == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as f64)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

fn page_size() -> f64 {
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        page as f64
    } else {
        4096.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (poolprof (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 3 0 12000 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

    #[test]
    fn stat_fields_become_base_units() {
        let stat = parse_stat(STAT, 100.0, 4096.0).unwrap();
        assert_eq!(stat.cpu_seconds, 3.0);
        assert_eq!(stat.start_seconds_after_boot, 120.0);
        assert_eq!(stat.virtual_bytes, 104_857_600.0);
        assert_eq!(stat.resident_bytes, 2560.0 * 4096.0);
    }

    #[test]
    fn limits_and_boot_time_are_read() {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let row = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap();
        let soft: f64 = row["Max open files".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(max_fds(), Some(soft), "the soft limit /proc shows");
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1700000000\n"),
            Some(1.7e9)
        );
    }

    #[test]
    fn this_process_has_every_series() {
        let mut out = MetricSet::new();
        write(&mut out);
        for name in PROCESS_METRICS {
            assert!(out.get(name).is_some(), "{name}");
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = out.get("process_start_time_seconds").unwrap().get_metric()[0]
            .get_gauge()
            .get_value();
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{start}"
        );
    }
}
