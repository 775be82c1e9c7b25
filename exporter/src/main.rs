//! `poolprof-exporter`: parses flags, sets up logging, runs the exporter and turns
//! any start-up failure into one line on standard error and an exit code.

use clap::Parser;
use poolprof_exporter::cli::{Cli, Command};
use poolprof_exporter::{app, logging, simulate};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log.level, cli.log.format);
    let outcome = match &cli.command {
        Some(Command::Simulate(args)) => simulate::run(args).map(drop).map_err(|e| {
            let code = u8::try_from(e.exit_code()).unwrap_or(1);
            (e.to_string(), code)
        }),
        None => app::serve(&cli.serve).map_err(|e| (e.to_string(), e.exit_code())),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err((message, code)) => {
            eprintln!("error: {message}");
            ExitCode::from(code)
        }
    }
}
