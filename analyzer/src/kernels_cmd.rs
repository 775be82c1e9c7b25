//! `kernels`: one workload's kernels for kernel-level schedulers, from Prometheus or
//! from a profiles file.

use std::io::Write;
use std::path::PathBuf;

use crate::analysis::kernel_table::KernelTable;
use crate::cli::CommonArgs;
use crate::error::Error;
use crate::workloads_cmd::{fetch_profiles, read_profiles, write_json};

/// How `kernels` writes its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelsFormat {
    /// Every field, as JSON.
    Json,
    /// Orion's kernel profile CSV (`Name,Profile,Memory_footprint,SM_usage,Duration`).
    Orion,
}

/// `poolprof-analyzer kernels`: per kernel its class, SMs needed and duration.
#[derive(Debug, clap::Args)]
pub struct KernelsArgs {
    /// The workload (its `workload` label).
    #[arg(long, value_name = "ID")]
    pub workload: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    pub format: KernelsFormat,
    /// Read the profile from this file (`poolprof-analyzer profiles` output) instead of Prometheus.
    #[arg(long, value_name = "FILE", conflicts_with = "prometheus")]
    pub input: Option<PathBuf>,
    /// Source and window, when reading from Prometheus.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Finds the workload's profile and writes its kernel table.
pub async fn run_kernels(args: &KernelsArgs, out: &mut impl Write) -> Result<(), Error> {
    let (profiles, from) = match &args.input {
        Some(path) => (read_profiles(path)?, path.display().to_string()),
        None => (
            fetch_profiles(&args.common).await?,
            "Prometheus".to_string(),
        ),
    };
    let Some(profile) = profiles.iter().find(|p| p.workload == args.workload) else {
        let mut names: Vec<&str> = profiles.iter().map(|p| p.workload.as_str()).collect();
        names.sort_unstable();
        names.truncate(20);
        return Err(Error::Usage(format!(
            "--workload {:?}: no profile in {from} (a workload needs steps alone on a GPU); it has: {names:?}",
            args.workload
        )));
    };
    if profile.kernels.is_empty() {
        return Err(Error::Usage(format!(
            "--workload {:?} has no kernel records: run it with the injection library \
             (CUDA_INJECTION64_PATH, docs/kernels.md)",
            args.workload
        )));
    }
    let table = KernelTable::of(profile);
    match args.format {
        KernelsFormat::Json => write_json(out, &table),
        KernelsFormat::Orion => table
            .write_orion(out)
            .map_err(|e| Error::Runtime(format!("cannot write the result: {e}"))),
    }
}
