//! Settings of the injection library, read from environment variables.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `POOLPROF_INJECT` | `on` | `off` makes the library step aside silently |
//! | `POOLPROF_INJECT_SOCKET` | `/run/poolprof/inject.sock` | the exporter's socket |
//! | `POOLPROF_INJECT_INTERVAL_MS` | `1000` | milliseconds between reports (100–60000) |
//! | `POOLPROF_INJECT_DUTY` | `200/4000` | tracing duty cycle of every record kind: `always`, `never` (`0/PERIOD_MS`) or `TRACE_MS/PERIOD_MS` |
//! | `POOLPROF_INJECT_MEMCPY` | `on` | memcpy and memset bytes too, sampled by the same duty cycle; `off` leaves them out |
//! | `POOLPROF_INJECT_DETACH` | `on` | detach CUPTI (`cuptiFinalize`) during the off part of a duty cycle; `off` only disables the records |
//! | `POOLPROF_INJECT_BUFFER_KB` | `2048` | size of one CUPTI activity buffer (64–65536) |
//! | `POOLPROF_INJECT_BUFFERS` | `8` | activity buffers in the pool (2–64); when all are busy CUPTI drops records |
//! | `POOLPROF_INJECT_MAX_KERNELS` | `2048` | distinct kernels kept per interval (16–65536); the rest are folded |
//! | `POOLPROF_INJECT_CUPTI` | unset | the libcupti to load (absolute path); unset: the copy the application already loaded, else the first found by name |
//! | `POOLPROF_INJECT_WINDOW_LOG` | unset | a file to append, at the end of each duty-cycle window, the grid ids and records seen per context (diagnosing the sampling) |
//! | `POOLPROF_KERNEL_COUNTERS` | `off` | `on`: profile the first launch of each distinct kernel once with CUPTI's range profiler (FLOPs, DRAM bytes); needs a sampled duty cycle |
//! | `POOLPROF_KERNEL_COUNTERS_MAX` | `64` | most distinct kernels profiled per process (1–1024) |
//! | `POOLPROF_WORKLOAD` | unset | the `workload` label, sent to the exporter |

use crate::wire::{DutyCycle, MAX_LABEL_BYTES};
use std::path::PathBuf;
use std::time::Duration;

/// Socket used when `POOLPROF_INJECT_SOCKET` is unset.
pub const DEFAULT_SOCKET: &str = "/run/poolprof/inject.sock";

/// Duty cycle used when `POOLPROF_INJECT_DUTY` is unset: records are collected 200 ms
/// of every 4 s. Tracing every launch costs about a microsecond of CPU per launch
/// (CUPTI instruments each kernel), which launch-bound programs feel; sampling 5% of
/// the time bounds that cost and the exporter scales the counts back up. Windows of
/// 200 ms every 4 s rather than 50 ms every second: the same share with a quarter of
/// the attaches and detaches of CUPTI. The two were not told apart on the H100 (both
/// cost as much as a library that never traces, within that machine's noise;
/// docs/validation/kernels-h100.md, runs 8–12).
pub const DEFAULT_DUTY: DutyCycle = DutyCycle::Sampled {
    trace_ms: 200,
    period_ms: 4000,
};

/// Distinct kernels profiled per process when `POOLPROF_KERNEL_COUNTERS_MAX` is unset.
pub const DEFAULT_COUNTERS_MAX: usize = 64;

/// Validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Whether the library should do anything at all.
    pub enabled: bool,
    /// Path of the exporter's Unix socket.
    pub socket: PathBuf,
    /// Time between reports.
    pub interval: Duration,
    /// Tracing duty cycle of every record kind; `None` never enables any record
    /// (CUPTI is still started: the cost of being loaded, measured on its own).
    pub duty: Option<DutyCycle>,
    /// Whether memcpy and memset records are collected too (on by default). They
    /// follow the duty cycle with the kernels, so CUPTI leaves the launch path during
    /// the off part, and their bytes are scaled up like the kernel counts.
    pub trace_memory: bool,
    /// Whether CUPTI is detached while a duty cycle is off: disabled records alone
    /// leave CUPTI on the launch path (see `detach`).
    pub detach: bool,
    /// Bytes in one activity buffer.
    pub buffer_bytes: usize,
    /// Number of activity buffers.
    pub buffers: usize,
    /// Distinct (device, kernel) pairs kept per interval.
    pub max_kernels: usize,
    /// `POOLPROF_WORKLOAD`, if set and not empty.
    pub workload: Option<String>,
    /// `POOLPROF_INJECT_WINDOW_LOG`: where to log each window's launches, if anywhere.
    pub window_log: Option<PathBuf>,
    /// `POOLPROF_INJECT_CUPTI`: the libcupti to load instead of the one found.
    pub cupti: Option<PathBuf>,
    /// `POOLPROF_KERNEL_COUNTERS`: when on, the most distinct kernels to profile once
    /// each (`POOLPROF_KERNEL_COUNTERS_MAX`); `None` (the default) profiles nothing.
    pub kernel_counters: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            enabled: true,
            socket: PathBuf::from(DEFAULT_SOCKET),
            interval: Duration::from_millis(1000),
            duty: Some(DEFAULT_DUTY),
            trace_memory: true,
            detach: true,
            buffer_bytes: 2048 * 1024,
            buffers: 8,
            max_kernels: 2048,
            workload: None,
            window_log: None,
            cupti: None,
            kernel_counters: None,
        }
    }
}

/// A variable with a value the library cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?} is invalid: {expected}")]
pub struct ConfigError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What a valid value looks like.
    pub expected: String,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|var| std::env::var(var).ok())
    }

    /// Reads settings through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let d = Config::default();
        let get = |var: &'static str| lookup(var).map(|v| (var, v.trim().to_string()));
        let duty = match get("POOLPROF_INJECT_DUTY") {
            None => d.duty,
            Some((var, v)) => parse_duty(var, &v)?,
        };
        Ok(Config {
            enabled: match get("POOLPROF_INJECT") {
                None => true,
                Some((var, v)) => parse_switch(var, &v)?,
            },
            socket: match get("POOLPROF_INJECT_SOCKET") {
                None => d.socket,
                Some((var, v)) => parse_socket(var, &v)?,
            },
            interval: match get("POOLPROF_INJECT_INTERVAL_MS") {
                None => d.interval,
                Some((var, v)) => Duration::from_millis(parse_range(var, &v, 100, 60_000)?),
            },
            duty,
            kernel_counters: parse_counters(&get, duty)?,
            trace_memory: match get("POOLPROF_INJECT_MEMCPY") {
                None => d.trace_memory,
                Some((var, v)) => parse_switch(var, &v)?,
            },
            detach: match get("POOLPROF_INJECT_DETACH") {
                None => d.detach,
                Some((var, v)) => parse_switch(var, &v)?,
            },
            buffer_bytes: match get("POOLPROF_INJECT_BUFFER_KB") {
                None => d.buffer_bytes,
                Some((var, v)) => parse_range(var, &v, 64, 65_536)? as usize * 1024,
            },
            buffers: match get("POOLPROF_INJECT_BUFFERS") {
                None => d.buffers,
                Some((var, v)) => parse_range(var, &v, 2, 64)? as usize,
            },
            max_kernels: match get("POOLPROF_INJECT_MAX_KERNELS") {
                None => d.max_kernels,
                Some((var, v)) => parse_range(var, &v, 16, 65_536)? as usize,
            },
            window_log: match get("POOLPROF_INJECT_WINDOW_LOG") {
                None => None,
                Some((var, v)) => Some(parse_path(var, &v)?),
            },
            cupti: match get("POOLPROF_INJECT_CUPTI") {
                None => None,
                Some((var, v)) => Some(parse_path(var, &v)?),
            },
            workload: lookup("POOLPROF_WORKLOAD")
                .map(|w| crate::wire::truncate_utf8(w.trim(), MAX_LABEL_BYTES).to_string())
                .filter(|w| !w.is_empty()),
        })
    }
}

/// `POOLPROF_KERNEL_COUNTERS` and its cap. Counters are profiled inside the duty
/// cycle's windows only (the subscription they need would keep a profiler started
/// later from CUPTI if it were held all the time), so they need a sampled duty cycle.
fn parse_counters(
    get: &impl Fn(&'static str) -> Option<(&'static str, String)>,
    duty: Option<DutyCycle>,
) -> Result<Option<usize>, ConfigError> {
    let on = match get("POOLPROF_KERNEL_COUNTERS") {
        None => false,
        Some((var, v)) => parse_switch(var, &v)?,
    };
    let max = match get("POOLPROF_KERNEL_COUNTERS_MAX") {
        None => DEFAULT_COUNTERS_MAX,
        Some((var, v)) => parse_range(var, &v, 1, 1024)? as usize,
    };
    if on && !matches!(duty, Some(DutyCycle::Sampled { .. })) {
        return Err(invalid(
            "POOLPROF_KERNEL_COUNTERS",
            "on",
            "counters are profiled in duty-cycle windows: set POOLPROF_INJECT_DUTY to \
             TRACE_MS/PERIOD_MS (the default 200/4000) or turn counters off",
        ));
    }
    Ok(on.then_some(max))
}

fn invalid(var: &'static str, value: &str, expected: &str) -> ConfigError {
    ConfigError {
        var,
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

fn parse_switch(var: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "" | "1" | "on" | "true" | "yes" => Ok(true),
        "0" | "off" | "false" | "no" => Ok(false),
        _ => Err(invalid(var, v, "use on or off")),
    }
}

fn parse_socket(var: &'static str, v: &str) -> Result<PathBuf, ConfigError> {
    // sockaddr_un holds 108 bytes including the terminating NUL.
    parse_absolute(var, v, 107)
}

fn parse_path(var: &'static str, v: &str) -> Result<PathBuf, ConfigError> {
    parse_absolute(var, v, 4096)
}

/// An absolute path of at most `max` bytes, without NUL.
fn parse_absolute(var: &'static str, v: &str, max: usize) -> Result<PathBuf, ConfigError> {
    if !v.starts_with('/') || v.len() > max || v.contains('\0') {
        let expected = format!("an absolute path of at most {max} bytes");
        return Err(invalid(var, v, &expected));
    }
    Ok(PathBuf::from(v))
}

fn parse_range(var: &'static str, v: &str, min: u64, max: u64) -> Result<u64, ConfigError> {
    v.parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| invalid(var, v, &format!("an integer from {min} to {max}")))
}

/// `None` for `never` or `0/P`: no activity record is ever enabled.
fn parse_duty(var: &'static str, v: &str) -> Result<Option<DutyCycle>, ConfigError> {
    const EXPECTED: &str = "always, never, or TRACE_MS/PERIOD_MS with 0 <= TRACE_MS <= PERIOD_MS, \
         1 <= PERIOD_MS <= 600000 (e.g. 100/1000; 0/1000 = never)";
    if v.eq_ignore_ascii_case("always") {
        return Ok(Some(DutyCycle::Always));
    }
    if v.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    let (trace, period) = v.split_once('/').ok_or_else(|| invalid(var, v, EXPECTED))?;
    match (trace.trim().parse::<u32>(), period.trim().parse::<u32>()) {
        (Ok(t), Ok(p)) if p == 0 || p > 600_000 || t > p => Err(invalid(var, v, EXPECTED)),
        (Ok(0), Ok(_)) => Ok(None),
        (Ok(t), Ok(p)) if t == p => Ok(Some(DutyCycle::Always)),
        (Ok(t), Ok(p)) => Ok(Some(DutyCycle::Sampled {
            trace_ms: t,
            period_ms: p,
        })),
        _ => Err(invalid(var, v, EXPECTED)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_without_variables() {
        assert_eq!(config(&[]).unwrap(), Config::default());
    }

    #[test]
    fn every_variable_is_read() {
        let c = config(&[
            ("POOLPROF_INJECT", "on"),
            ("POOLPROF_INJECT_SOCKET", "/tmp/x.sock"),
            ("POOLPROF_INJECT_INTERVAL_MS", "250"),
            ("POOLPROF_INJECT_DUTY", "100/1000"),
            ("POOLPROF_INJECT_MEMCPY", "on"),
            ("POOLPROF_INJECT_DETACH", "off"),
            ("POOLPROF_INJECT_BUFFER_KB", "512"),
            ("POOLPROF_INJECT_BUFFERS", "4"),
            ("POOLPROF_INJECT_MAX_KERNELS", "64"),
            ("POOLPROF_INJECT_WINDOW_LOG", "/tmp/windows.log"),
            ("POOLPROF_INJECT_CUPTI", "/opt/cuda/lib64/libcupti.so.13"),
            ("POOLPROF_WORKLOAD", " team/job "),
        ])
        .unwrap();
        assert_eq!(c.socket, PathBuf::from("/tmp/x.sock"));
        assert_eq!(c.interval, Duration::from_millis(250));
        assert_eq!(
            c.duty,
            Some(DutyCycle::Sampled {
                trace_ms: 100,
                period_ms: 1000
            })
        );
        assert!(c.trace_memory);
        assert!(!c.detach);
        assert_eq!(c.buffer_bytes, 512 * 1024);
        assert_eq!(c.buffers, 4);
        assert_eq!(c.max_kernels, 64);
        assert_eq!(c.workload.as_deref(), Some("team/job"));
        assert_eq!(c.window_log, Some(PathBuf::from("/tmp/windows.log")));
        let cupti = PathBuf::from("/opt/cuda/lib64/libcupti.so.13");
        assert_eq!(c.cupti, Some(cupti));
    }

    #[test]
    fn kernel_counters_are_off_by_default_and_capped_when_on() {
        assert_eq!(config(&[]).unwrap().kernel_counters, None);
        let on = config(&[("POOLPROF_KERNEL_COUNTERS", "1")]).unwrap();
        assert_eq!(on.kernel_counters, Some(DEFAULT_COUNTERS_MAX));
        let capped = config(&[
            ("POOLPROF_KERNEL_COUNTERS", "on"),
            ("POOLPROF_KERNEL_COUNTERS_MAX", "8"),
        ])
        .unwrap();
        assert_eq!(capped.kernel_counters, Some(8));
        let off = config(&[
            ("POOLPROF_KERNEL_COUNTERS", "off"),
            ("POOLPROF_KERNEL_COUNTERS_MAX", "8"),
        ])
        .unwrap();
        assert_eq!(off.kernel_counters, None, "the cap alone turns nothing on");
    }

    #[test]
    fn kernel_counters_need_a_sampled_duty_cycle_and_a_cap_in_range() {
        for duty in ["always", "never", "0/1000"] {
            let err = config(&[
                ("POOLPROF_KERNEL_COUNTERS", "on"),
                ("POOLPROF_INJECT_DUTY", duty),
            ])
            .unwrap_err();
            assert_eq!(err.var, "POOLPROF_KERNEL_COUNTERS", "{duty}");
            assert!(err.to_string().contains("POOLPROF_INJECT_DUTY"), "{err}");
        }
        let with_always = config(&[
            ("POOLPROF_KERNEL_COUNTERS", "off"),
            ("POOLPROF_INJECT_DUTY", "always"),
        ]);
        assert!(with_always.is_ok(), "off never conflicts");
        for (var, value) in [
            ("POOLPROF_KERNEL_COUNTERS", "maybe"),
            ("POOLPROF_KERNEL_COUNTERS_MAX", "0"),
            ("POOLPROF_KERNEL_COUNTERS_MAX", "1025"),
            ("POOLPROF_KERNEL_COUNTERS_MAX", "many"),
        ] {
            let err = config(&[(var, value)]).unwrap_err();
            assert_eq!(err.var, var, "{value}");
        }
    }

    #[test]
    fn off_disables_and_empty_workload_is_none() {
        let c = config(&[("POOLPROF_INJECT", "off"), ("POOLPROF_WORKLOAD", "  ")]).unwrap();
        assert!(!c.enabled);
        assert_eq!(c.workload, None);
    }

    #[test]
    fn bad_values_name_the_variable_and_the_fix() {
        for (var, value) in [
            ("POOLPROF_INJECT", "maybe"),
            ("POOLPROF_INJECT_SOCKET", "relative.sock"),
            ("POOLPROF_INJECT_SOCKET", &format!("/{}", "a".repeat(120))),
            ("POOLPROF_INJECT_INTERVAL_MS", "5"),
            ("POOLPROF_INJECT_INTERVAL_MS", "1s"),
            ("POOLPROF_INJECT_DUTY", "1000/100"),
            ("POOLPROF_INJECT_DUTY", "1/0"),
            ("POOLPROF_INJECT_DUTY", "0/0"),
            ("POOLPROF_INJECT_DUTY", "0/700000"),
            ("POOLPROF_INJECT_DUTY", "-1/100"),
            ("POOLPROF_INJECT_DUTY", "nevermore"),
            ("POOLPROF_INJECT_DUTY", "half"),
            ("POOLPROF_INJECT_BUFFERS", "65"),
            ("POOLPROF_INJECT_MEMCPY", "sometimes"),
            ("POOLPROF_INJECT_DETACH", "later"),
            ("POOLPROF_INJECT_MAX_KERNELS", "-1"),
            ("POOLPROF_INJECT_WINDOW_LOG", "windows.log"),
            ("POOLPROF_INJECT_CUPTI", "libcupti.so"),
        ] {
            let err = config(&[(var, value)]).unwrap_err();
            assert_eq!(err.var, var);
            let msg = err.to_string();
            assert!(msg.starts_with(var), "{msg}");
        }
    }

    #[test]
    fn default_samples_kernels_and_memory_records() {
        let c = config(&[]).unwrap();
        assert_eq!(
            c.duty,
            Some(DutyCycle::Sampled {
                trace_ms: 200,
                period_ms: 4000
            })
        );
        assert!(c.trace_memory, "memcpy and memset are on by default");
        assert!(c.detach, "CUPTI is detached while off by default");
        let c = config(&[
            ("POOLPROF_INJECT_DUTY", "always"),
            ("POOLPROF_INJECT_MEMCPY", "OFF"),
        ])
        .unwrap();
        assert_eq!(c.duty, Some(DutyCycle::Always));
        assert!(!c.trace_memory);
    }

    #[test]
    fn memcpy_switch_accepts_on_and_off_spellings_only() {
        for (value, want) in [
            ("off", false),
            (" 0 ", false),
            ("no", false),
            ("on", true),
            ("1", true),
        ] {
            let c = config(&[("POOLPROF_INJECT_MEMCPY", value)]).unwrap();
            assert_eq!(c.trace_memory, want, "{value:?}");
        }
        for value in ["2", "enabled", "of"] {
            let err = config(&[("POOLPROF_INJECT_MEMCPY", value)]).unwrap_err();
            assert_eq!(err.var, "POOLPROF_INJECT_MEMCPY");
            assert!(err.to_string().contains("use on or off"), "{err}");
        }
    }

    #[test]
    fn duty_equal_trace_and_period_means_always() {
        let c = config(&[("POOLPROF_INJECT_DUTY", "200/200")]).unwrap();
        assert_eq!(c.duty, Some(DutyCycle::Always));
        let c = config(&[("POOLPROF_INJECT_DUTY", "ALWAYS")]).unwrap();
        assert_eq!(c.duty, Some(DutyCycle::Always));
    }

    #[test]
    fn zero_trace_time_or_never_means_nothing_is_traced() {
        for v in ["0/1000", "0/1", " 0 / 600000 ", "never", "NEVER"] {
            let c = config(&[("POOLPROF_INJECT_DUTY", v)]).unwrap();
            assert_eq!(c.duty, None, "{v}");
            assert!(c.enabled, "{v}: the library still loads and subscribes");
        }
    }
}
