//! `poolprof-analyzer`: parses the command line, runs it, and maps failures onto the
//! exit codes of DESIGN.md (0 ok, 1 runtime, 2 usage/input, 3 source, 4 sink).

use clap::Parser;
use poolprof_analyzer::cli::{Cli, Command};
use poolprof_analyzer::commands;
use poolprof_analyzer::error::{Error, ExitCode};
use poolprof_analyzer::kernels_cmd;
use poolprof_analyzer::offline;
use poolprof_analyzer::pipeline::Analyses;
use poolprof_analyzer::workloads_cmd;

fn main() -> std::process::ExitCode {
    // clap exits with 2 on bad usage, as DESIGN.md wants.
    let cli = Cli::parse();
    init_logging();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Runtime(format!("cannot start the async runtime: {e}")))
        .and_then(|rt| {
            let result = rt.block_on(dispatch(cli.command));
            // A run cancelled by a signal may leave an analysis on a blocking thread:
            // its result is discarded, so do not wait for it to exit promptly.
            rt.shutdown_timeout(std::time::Duration::from_millis(500));
            result
        });
    match result {
        Ok(()) => std::process::ExitCode::from(ExitCode::Ok.code() as u8),
        Err(e) => {
            eprintln!("poolprof-analyzer: error: {e}");
            std::process::ExitCode::from(e.exit_code().code() as u8)
        }
    }
}

async fn dispatch(command: Command) -> Result<(), Error> {
    match command {
        Command::Run(args) => commands::run_once(&args, Analyses::default()).await,
        Command::Serve(args) => commands::serve(&args, Analyses::default()).await,
        Command::Report(args) => commands::report(&args, Analyses::default()).await,
        Command::Periods(args) => Ok(offline::run_periods(&args, &mut std::io::stdout().lock())?),
        Command::Forecast(args) => Ok(offline::run_forecast(&args, &mut std::io::stdout().lock())?),
        Command::Profiles(args) => {
            workloads_cmd::run_profiles(&args, &mut std::io::stdout().lock()).await
        }
        Command::Colocate(args) => {
            workloads_cmd::run_colocate(&args, &mut std::io::stdout().lock())
        }
        Command::Kernels(args) => {
            kernels_cmd::run_kernels(&args, &mut std::io::stdout().lock()).await
        }
    }
}

/// Logs to stderr (stdout carries `run --once`'s results); `RUST_LOG` sets the level.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
