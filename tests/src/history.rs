//! Simulated history: `poolprof-exporter simulate` written to an OpenMetrics file, for
//! `promtool` to backfill or VictoriaMetrics to import.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bins::workspace_bin;

/// Writes `history` (e.g. `6h`) at `step` ending at `end` (unix seconds) of the GPUs
/// `gpus` selects (`["--simulate", "3"]` or `["--scenario", FILE]`) to `dir/history.om`.
pub fn simulate(dir: &Path, history: &str, step: &str, end: f64, gpus: &[&str]) -> PathBuf {
    let out = dir.join("history.om");
    let status = Command::new(workspace_bin("poolprof-exporter"))
        .args(["simulate", "--history", history, "--step", step])
        .args(gpus)
        .arg("--end")
        .arg(end.to_string())
        .arg("--output")
        .arg(&out)
        .status()
        .expect("poolprof-exporter runs");
    assert!(
        status.success(),
        "poolprof-exporter simulate failed: {status}"
    );
    out
}
