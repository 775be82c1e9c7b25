//! `poolprof-exporter`: parses flags, sets up logging, runs the exporter and turns
//! any start-up failure into one line on standard error and an exit code.

use clap::Parser;
use poolprof_exporter::cli::Cli;
use poolprof_exporter::{app, logging};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log.level, cli.log.format);
    match app::serve(&cli.serve) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
