//! Benchmark: poolprof-analyzer periods + forecast against augurs, same inputs.
//!
//! `speed ours|augurs [--series N] [--threads T] [--varied-lengths]`: wall time and peak RSS over N series
//! of 10,080 points (a week at one minute), drawn round-robin from a pool of 1,000
//! deterministic series mixing every kind of the labelled suite.
//! `accuracy`: detection/false-positive and forecast-error tables on the labelled suite.
//! `impulsive dev|report [--per-cell N] [--periods LO-HI] [--cycles A,B,...]`: periodicity on the impulsive suite (issue 11),
//! with the development or the reporting seed set.
//! `dump FILE [--series N]`: the first N pool series as raw little-endian f64 rows,
//! for `peer.py`.
//! `forecast-fresh [--seed S] [--per-class N]`: the forecast scoring of `forecast-eval`
//! on the independent second set ([`freshset`]).
//! `forecast-tenants [--seed S] [--per-class N]`: the same scoring on a GPU cluster
//! driven by its users ([`tenants`]).
//! `parse ours|streamed|tree [--series N] [--points P]`: time and peak memory of parsing one
//! `query_range` answer ([`parse`]).

#[path = "../../../analyzer/tests/synthetic/mod.rs"]
mod synthetic;

mod accuracy;
mod clustersim;
mod detection;
mod engines;
mod evalset;
mod fcast_eval;
mod freshset;
mod impulsive;
mod inputs;
mod parse;
mod profile;
mod public;
mod recorded;
mod recorded_periods;
mod speed;
mod tenants;

/// The whole number after `name`, or `default` without the flag; another value exits
/// 2 naming the flag.
fn flag(args: &[String], name: &str, default: usize) -> usize {
    parsed(args, name, default, |v| {
        v.parse()
            .map_err(|_| format!("{name} {v:?}: want a whole number"))
    })
}

/// The value after `name` read by `parse`, or `default` without the flag; a value
/// `parse` refuses exits 2 with its message.
fn parsed<T>(
    args: &[String],
    name: &str,
    default: T,
    parse: impl Fn(&str) -> Result<T, String>,
) -> T {
    let Some(value) = args
        .iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
    else {
        return default;
    };
    parse(value).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

/// The folders named after the subcommand, up to the first flag; at least one.
fn dirs(args: &[String]) -> Vec<String> {
    let dirs: Vec<String> = args[1..]
        .iter()
        .take_while(|a| !a.starts_with("--"))
        .cloned()
        .collect();
    assert!(!dirs.is_empty(), "{} DIR...", args[0]);
    dirs
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("speed") => {
            let engine = engines::Engine::parse(args.get(1).map(String::as_str).unwrap_or("ours"));
            speed::run(
                engine,
                flag(&args, "--series", 10_000),
                flag(&args, "--threads", 2),
                args.iter().any(|a| a == "--varied-lengths"),
            );
        }
        Some("parse") => parse::run(
            args.get(1).map(String::as_str).unwrap_or("ours"),
            flag(&args, "--series", 1_000),
            flag(&args, "--points", 10_080),
        ),
        Some("accuracy") => accuracy::run(flag(&args, "--per-cell", 20)),
        Some("impulsive") => {
            let set = args.get(1).map_or("dev", String::as_str);
            let periods = parsed(
                &args,
                "--periods",
                impulsive::Periods::SUITE,
                impulsive::Periods::parse,
            );
            let cycles = parsed(
                &args,
                "--cycles",
                detection::CYCLES.to_vec(),
                detection::parse_cycles,
            );
            detection::run(set, flag(&args, "--per-cell", 40), periods, &cycles);
        }
        Some("profile") => {
            profile::fft_sizes();
            profile::run(flag(&args, "--series", 200))
        }
        Some("calibrate") => profile::calibrate(flag(&args, "--sims", 2000)),
        Some("dump") => {
            let path = args.get(1).expect("dump FILE");
            inputs::dump(path, flag(&args, "--series", 200));
        }
        Some("forecast-eval") => {
            let peer = args
                .iter()
                .position(|a| a == "--peer")
                .and_then(|i| args.get(i + 1));
            fcast_eval::run(
                flag(&args, "--seed", 1) as u64,
                flag(&args, "--per-class", 50),
                peer.map(String::as_str),
                flag(&args, "--threads", 2),
            );
        }
        Some("forecast-fresh") => freshset::run(
            flag(&args, "--seed", 1) as u64,
            flag(&args, "--per-class", 40),
            flag(&args, "--threads", 2),
        ),
        Some("forecast-tenants") => tenants::run(
            flag(&args, "--seed", 1) as u64,
            flag(&args, "--per-class", 50),
            flag(&args, "--threads", 2),
        ),
        Some("forecast-recorded") => {
            recorded::run(&dirs(&args), flag(&args, "--threads", 2));
        }
        Some("periods-recorded") => {
            recorded_periods::run(&dirs(&args), &[6.0, 9.0], flag(&args, "--hold-s", 1))
        }
        Some("forecast-public") => {
            let dir = args.get(1).expect("forecast-public DIR");
            public::run(
                dir,
                flag(&args, "--threads", 2),
                flag(&args, "--history-steps", public::MIN_HISTORY_STEPS),
            );
        }
        Some("forecast-dump") => {
            let path = args.get(1).expect("forecast-dump FILE");
            fcast_eval::dump(
                path,
                flag(&args, "--seed", 1) as u64,
                flag(&args, "--per-class", 50),
            );
        }
        _ => {
            eprintln!("usage: poolprof-analyzer-bench speed ours|augurs [--series N] [--threads T] [--varied-lengths] | parse ours|streamed|tree [--series N] [--points P] | accuracy [--per-cell N] | impulsive dev|report [--per-cell N] [--periods LO-HI] [--cycles A,B,...] | dump FILE [--series N] | forecast-eval [--seed S] [--per-class N] [--peer FILE] | forecast-dump FILE [--seed S] [--per-class N] | forecast-fresh [--seed S] [--per-class N] [--threads T] | forecast-tenants [--seed S] [--per-class N] [--threads T] | forecast-recorded DIR... [--threads T] | periods-recorded DIR... [--hold-s N] | forecast-public DIR [--threads T] [--history-steps N]");
            std::process::exit(2);
        }
    }
}
