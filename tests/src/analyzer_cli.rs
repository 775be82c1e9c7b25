//! poolprof-analyzer run once, as the tests run it: the command, what it said on
//! standard error, and the files its flags name.

use std::path::Path;
use std::process::{Command, Output};

use crate::bins::workspace_bin;

/// A config for an hour at 15 s with one signal, `sm_active`: the mean SM activity of
/// each GPU (`uuid`) from the exporter's `poolprof_gpu_sm_active_ratio`.
pub const SM_ACTIVE_CONFIG: &str = r#"
[analysis]
lookback = "1h"
step = "15s"
horizons = ["15m"]

[[signals]]
name = "sm_active"
identity = "uuid"
query = "avg by (uuid) (poolprof_gpu_sm_active_ratio)"
"#;

/// Runs the workspace's poolprof-analyzer with `args` to its end.
pub fn analyzer(args: &[&str]) -> Output {
    Command::new(workspace_bin("poolprof-analyzer"))
        .args(args)
        .output()
        .expect("poolprof-analyzer runs")
}

/// `run --once` against the Prometheus at `prometheus`, with `rest` of the flags.
pub fn run_once(prometheus: &str, rest: &[&str]) -> Output {
    analyzer(&[&["run", "--once", "--prometheus", prometheus][..], rest].concat())
}

/// What a run wrote on standard error, as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes `text` to `dir/name` and returns the path as a flag takes it.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}
