//! The collector flags: `--collector.<name>` / `--no-collector.<name>` for each
//! collector, `--collector.disable-defaults`, and the process collector's
//! `--[no-]collector.process.pid-label` and `--collector.process.sample-interval`.
//! Generated from one table so a new collector needs one line here; each flag has its
//! `POOLPROF_*` variable like every other.

use crate::collector::{Selection, COLLECTOR_NAMES};
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use std::time::Duration;

/// One collector's flag names, written out because clap wants `'static` strings.
struct Flags {
    name: &'static str,
    on: &'static str,
    off: &'static str,
    on_env: &'static str,
    off_env: &'static str,
}

macro_rules! flags {
    ($(($name:literal, $env:literal)),* $(,)?) => {
        &[$(Flags {
            name: $name,
            on: concat!("collector.", $name),
            off: concat!("no-collector.", $name),
            on_env: concat!("POOLPROF_COLLECTOR_", $env),
            off_env: concat!("POOLPROF_NO_COLLECTOR_", $env),
        }),*]
    };
}

const FLAGS: &[Flags] = flags![
    ("utilization", "UTILIZATION"),
    ("memory", "MEMORY"),
    ("power", "POWER"),
    ("temperature", "TEMPERATURE"),
    ("clocks", "CLOCKS"),
    ("pcie", "PCIE"),
    ("clock_events", "CLOCK_EVENTS"),
    ("ecc", "ECC"),
    ("xid", "XID"),
    ("nvlink", "NVLINK"),
    ("codec", "CODEC"),
    ("process", "PROCESS"),
    ("gpm", "GPM"),
    ("mig", "MIG"),
    ("kernels", "KERNELS"),
    ("pods", "PODS"),
];

const DISABLE_DEFAULTS: &str = "collector.disable-defaults";
const PID_LABEL: &str = "collector.process.pid-label";
const NO_PID_LABEL: &str = "no-collector.process.pid-label";
const SAMPLE_INTERVAL: &str = "collector.process.sample-interval";

/// How often per-process utilization is read by default while a GPU runs two or more
/// processes. Each read costs NVML about 2 ms of CPU; the same jobs read every 10 s
/// and every 5 s showed a 35 s cycle in 9 and 23 of their own 23 six-cycle windows
/// (`docs/validation/analyzer/process-sample-interval.md`).
pub const DEFAULT_PROCESS_SAMPLE_INTERVAL: Duration = Duration::from_secs(5);

/// Shortest `--collector.process.sample-interval`.
pub const MIN_PROCESS_SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Longest `--collector.process.sample-interval`: the longest stretch whose mean the
/// driver was checked to give in one reading (`docs/validation/process-samples-h100.md`).
pub const MAX_PROCESS_SAMPLE_INTERVAL: Duration = Duration::from_secs(10);

/// What the collector flags chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectorArgs {
    /// The collectors that run.
    pub selection: Selection,
    /// Whether per-process series carry `pid` (else they are summed per workload).
    pub pid_label: bool,
    /// How often per-process utilization is read while a GPU runs two or more
    /// processes; each reading is the driver's mean since the previous one.
    pub process_sample_interval: Duration,
}

impl Default for CollectorArgs {
    fn default() -> Self {
        Self {
            selection: Selection::default(),
            pid_label: true,
            process_sample_interval: DEFAULT_PROCESS_SAMPLE_INTERVAL,
        }
    }
}

fn switch(id: &'static str, env: &'static str, help: String, other: &'static str) -> Arg {
    Arg::new(id)
        .long(id)
        .env(env)
        .action(ArgAction::SetTrue)
        .overrides_with(other)
        .help(help)
        .help_heading("Collectors")
}

impl Args for CollectorArgs {
    fn augment_args(mut command: Command) -> Command {
        command = command.arg(
            Arg::new(DISABLE_DEFAULTS)
                .long(DISABLE_DEFAULTS)
                .env("POOLPROF_COLLECTOR_DISABLE_DEFAULTS")
                .action(ArgAction::SetTrue)
                .help("Start with every collector off; turn the wanted ones on with --collector.<name>")
                .help_heading("Collectors"),
        );
        for f in FLAGS {
            command = command
                .arg(switch(
                    f.on,
                    f.on_env,
                    format!("Run the {} collector (on by default)", f.name),
                    f.off,
                ))
                .arg(switch(
                    f.off,
                    f.off_env,
                    format!("Do not run the {} collector", f.name),
                    f.on,
                ));
        }
        command
            .arg(switch(
                PID_LABEL,
                "POOLPROF_COLLECTOR_PROCESS_PID_LABEL",
                "Give per-process series a pid label (the default)".to_string(),
                NO_PID_LABEL,
            ))
            .arg(switch(
                NO_PID_LABEL,
                "POOLPROF_NO_COLLECTOR_PROCESS_PID_LABEL",
                "Sum per-process series by workload, without a pid label (fewer series when processes come and go)".to_string(),
                PID_LABEL,
            ))
            .arg(
                Arg::new(SAMPLE_INTERVAL)
                    .long(SAMPLE_INTERVAL)
                    .env("POOLPROF_COLLECTOR_PROCESS_SAMPLE_INTERVAL")
                    .default_value("5s")
                    .value_parser(parse_process_sample_interval)
                    .value_name("DURATION")
                    .help("How often per-process utilization is read while a GPU runs two or more processes (1s to 10s); each reading is the driver's mean since the previous one. Shorter shows faster cycles of each job (a 35 s cycle needs 5s) and costs about 2 ms of CPU per GPU and reading")
                    .help_heading("Collectors"),
            )
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl FromArgMatches for CollectorArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let flag = |id: &str| matches.try_get_one::<bool>(id).ok().flatten() == Some(&true);
        let mut choices = Vec::new();
        for f in FLAGS {
            if flag(f.on) {
                choices.push((f.name, true));
            } else if flag(f.off) {
                choices.push((f.name, false));
            }
        }
        Ok(Self {
            selection: Selection::new(flag(DISABLE_DEFAULTS), &choices),
            pid_label: !flag(NO_PID_LABEL),
            process_sample_interval: matches
                .get_one::<Duration>(SAMPLE_INTERVAL)
                .copied()
                .unwrap_or(DEFAULT_PROCESS_SAMPLE_INTERVAL),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// Parses `--collector.process.sample-interval`, 1s to 10s.
pub fn parse_process_sample_interval(value: &str) -> Result<Duration, String> {
    crate::cli::parse_duration_within(
        value,
        MIN_PROCESS_SAMPLE_INTERVAL,
        MAX_PROCESS_SAMPLE_INTERVAL,
        "5s or 10s",
    )
}

/// True when the flag table names exactly the collectors there are.
pub fn covers_every_collector() -> bool {
    FLAGS.len() == COLLECTOR_NAMES.len() && FLAGS.iter().all(|f| COLLECTOR_NAMES.contains(&f.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> CollectorArgs {
        Cli::try_parse_from(std::iter::once("poolprof-exporter").chain(args.iter().copied()))
            .unwrap()
            .serve
            .collectors
    }

    #[test]
    fn the_table_matches_the_collectors() {
        assert!(covers_every_collector());
    }

    #[test]
    fn every_collector_is_on_by_default() {
        let args = parse(&[]);
        assert_eq!(args, CollectorArgs::default());
        assert!(COLLECTOR_NAMES.iter().all(|n| args.selection.enabled(n)));
    }

    #[test]
    fn no_collector_turns_one_off_and_the_last_flag_wins() {
        let args = parse(&["--no-collector.gpm", "--no-collector.clock_events"]);
        assert!(!args.selection.enabled("gpm"));
        assert!(!args.selection.enabled("clock_events"));
        assert!(args.selection.enabled("memory"));
        let args = parse(&["--no-collector.gpm", "--collector.gpm"]);
        assert!(args.selection.enabled("gpm"));
    }

    #[test]
    fn disable_defaults_keeps_only_the_named_ones() {
        let args = parse(&[
            "--collector.disable-defaults",
            "--collector.memory",
            "--collector.power",
        ]);
        assert_eq!(args.selection.describe(), "memory,power");
    }

    #[test]
    fn pid_label_can_be_turned_off() {
        assert!(parse(&[]).pid_label);
        assert!(!parse(&["--no-collector.process.pid-label"]).pid_label);
    }

    #[test]
    fn process_sample_interval_is_five_seconds_unless_set_within_bounds() {
        assert_eq!(parse(&[]).process_sample_interval, Duration::from_secs(5));
        let args = parse(&["--collector.process.sample-interval=10s"]);
        assert_eq!(args.process_sample_interval, Duration::from_secs(10));
        for bad in ["500ms", "11s", "1m", "often"] {
            let flag = format!("--collector.process.sample-interval={bad}");
            let err = Cli::try_parse_from(["poolprof-exporter", flag.as_str()]).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
            assert!(err.to_string().contains("sample-interval"), "{err}");
        }
    }

    #[test]
    fn an_unknown_collector_is_a_usage_error() {
        let err = Cli::try_parse_from(["poolprof-exporter", "--no-collector.gpu"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
