//! `poolprof-exporter simulate`: writes the history a simulated node would have produced,
//! as OpenMetrics with timestamps, for `promtool tsdb create-blocks-from openmetrics`.
//!
//! The simulated GPUs run on a [`ManualClock`]: the writer steps scenario time from 0 to
//! `--history` by `--step`, collects once at each step with the exporter's own
//! collectors, and stamps the samples with `--end - --history + t`.

mod history;

pub use history::History;

use crate::backend::sim::{ManualClock, Scenario, ScenarioError, SimBackend, SimClock};
use crate::collector::{self, runner::Collection, Collector};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest history accepted: 31 days.
pub const MAX_HISTORY: Duration = Duration::from_secs(31 * 24 * 3600);
/// The shortest step accepted.
pub const MIN_STEP: Duration = Duration::from_secs(1);
/// The most samples one run may hold (about 12 bytes each in memory: ~600 MB).
pub const MAX_SAMPLES: usize = 50_000_000;

/// Families left out of the history: they time this `simulate` run, not the node.
const SKIPPED_FAMILIES: [&str; 2] = [
    "poolprof_exporter_collector_duration_seconds",
    "poolprof_exporter_collector_cpu_seconds_total",
];

/// Arguments of `poolprof-exporter simulate`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulateArgs {
    /// How much history to write, ending at --end (e.g. 6h, 90m, 2d).
    #[arg(long, value_name = "DURATION", default_value = "6h", value_parser = parse_duration, env = "POOLPROF_HISTORY")]
    pub history: Duration,
    /// Time between two samples of a series (e.g. 15s, 1m).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration, env = "POOLPROF_HISTORY_STEP")]
    pub step: Duration,
    /// File to write (replaced when it exists).
    #[arg(long, value_name = "FILE", env = "POOLPROF_HISTORY_OUTPUT")]
    pub output: PathBuf,
    /// Number of built-in simulated GPUs (1–64), workloads round-robin: training,
    /// inference, idle, memory_bound, failing, mig.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 6,
        conflicts_with = "scenario",
        env = "POOLPROF_SIMULATE"
    )]
    pub simulate: u32,
    /// Scenario file (TOML, see docs/scenario.md) choosing the simulated GPUs.
    #[arg(long, value_name = "FILE", env = "POOLPROF_SCENARIO")]
    pub scenario: Option<PathBuf>,
    /// Unix time in seconds of the last sample; now when omitted.
    #[arg(long, value_name = "UNIX_SECONDS", env = "POOLPROF_HISTORY_END")]
    pub end: Option<f64>,
}

/// Why no history was written.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// A flag's value is out of range.
    #[error("{flag}: {message}")]
    Usage {
        /// The flag, e.g. `--step`.
        flag: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// Writing the exposition failed.
    #[error("cannot write the history: {0}")]
    Write(#[source] std::io::Error),
    /// The output file could not be written.
    #[error("{path}: cannot write the history: {source}")]
    Output {
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

impl SimulateError {
    /// The process exit code (DESIGN.md): 2 for bad input, 1 for a failed write.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage { .. } | Self::Scenario(_) => 2,
            Self::Write(_) | Self::Output { .. } => 1,
        }
    }
}

/// What a run wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryStats {
    /// Collections taken.
    pub steps: u32,
    /// Distinct series written.
    pub series: usize,
    /// Samples written.
    pub samples: usize,
}

/// Runs `simulate`: builds the GPUs, writes the history to `--output` (through a
/// temporary file in the same folder, so a failed run leaves no half-written file).
pub fn run(args: &SimulateArgs) -> Result<HistoryStats, SimulateError> {
    let scenario = match &args.scenario {
        Some(path) => Scenario::from_file(path)?,
        None => Scenario::builtin(args.simulate)?,
    };
    let end = match args.end {
        Some(end) => end,
        None => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64().floor()),
    };
    validate(args.history, args.step, end)?;
    let partial = partial_path(&args.output);
    let output_error = |source| SimulateError::Output {
        path: args.output.display().to_string(),
        source,
    };
    let file = std::fs::File::create(&partial).map_err(output_error)?;
    let mut out = BufWriter::new(file);
    let written = write_history(
        scenario,
        collector::default_collectors(),
        args.history,
        args.step,
        end,
        &mut out,
    )
    .map_err(|e| match e {
        SimulateError::Write(source) => output_error(source),
        other => other,
    })
    .and_then(|stats| {
        out.flush().map_err(output_error)?;
        std::fs::rename(&partial, &args.output).map_err(output_error)?;
        Ok(stats)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    let stats = written?;
    tracing::info!(
        output = %args.output.display(),
        steps = stats.steps,
        series = stats.series,
        samples = stats.samples,
        "history written"
    );
    Ok(stats)
}

/// Writes `history` of `scenario` ending at `end_unix_s`, one collection every `step`,
/// as OpenMetrics with timestamps ending in `# EOF`.
pub fn write_history(
    scenario: Scenario,
    collectors: Vec<Box<dyn Collector>>,
    history: Duration,
    step: Duration,
    end_unix_s: f64,
    out: &mut dyn Write,
) -> Result<HistoryStats, SimulateError> {
    validate(history, step, end_unix_s)?;
    let clock = ManualClock::new();
    let backend = SimBackend::new(scenario, SimClock::Manual(clock.clone()));
    let steps = (history.as_millis() / step.as_millis()) as u32 + 1;
    let mut collection = Collection::new(Arc::new(backend), collectors);
    let mut recorded = History::new();
    for i in 0..steps {
        clock.set((step * i).as_secs_f64());
        recorded.record(i, &collection.collect_once(), &SKIPPED_FAMILIES);
        let expected = recorded.samples() / (i as usize + 1) * steps as usize;
        if expected > MAX_SAMPLES {
            return Err(SimulateError::Usage {
                flag: "--step",
                message: format!(
                    "{steps} steps of about {} samples each exceed the limit of \
                     {MAX_SAMPLES} samples; use a larger --step, a shorter --history or \
                     fewer GPUs",
                    recorded.samples() / (i as usize + 1)
                ),
            });
        }
    }
    let end_ms = (end_unix_s * 1000.0).round() as i64;
    let start_ms = end_ms - history.as_millis() as i64;
    let step_ms = step.as_millis() as i64;
    recorded
        .write(|i| start_ms + i64::from(i) * step_ms, out)
        .map_err(SimulateError::Write)?;
    Ok(HistoryStats {
        steps,
        series: recorded.series(),
        samples: recorded.samples(),
    })
}

fn validate(history: Duration, step: Duration, end_unix_s: f64) -> Result<(), SimulateError> {
    let usage = |flag, message: String| Err(SimulateError::Usage { flag, message });
    if history.is_zero() || history > MAX_HISTORY {
        return usage(
            "--history",
            format!(
                "must be more than 0 and at most 31d (got {})",
                show(history)
            ),
        );
    }
    if step < MIN_STEP || step > history {
        return usage(
            "--step",
            format!(
                "must be at least 1s and at most --history ({}) (got {})",
                show(history),
                show(step)
            ),
        );
    }
    if step.subsec_nanos() % 1_000_000 != 0 {
        return usage(
            "--step",
            format!("must be whole milliseconds (got {})", show(step)),
        );
    }
    // From 2001 to 2286: promtool and Prometheus store milliseconds since 1970.
    if !(end_unix_s.is_finite() && (1.0e9..1.0e10).contains(&end_unix_s)) {
        return usage(
            "--end",
            format!("must be Unix seconds between 1000000000 and 9999999999 (got {end_unix_s})"),
        );
    }
    Ok(())
}

fn show(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Parses `6h`, `15s`, `1h30m`, `500ms` (humantime's syntax).
fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("{e}; write a duration such as 15s, 5m, 6h or 2d"))
}

/// `<output>.partial` next to the output, so the final rename stays on one filesystem.
fn partial_path(output: &Path) -> PathBuf {
    let mut name = output.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    output.with_file_name(name)
}

#[cfg(test)]
mod tests;
