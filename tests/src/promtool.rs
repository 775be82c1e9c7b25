//! `promtool`: linting expositions and backfilling history.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary that comes with Debian's `prometheus` package, found on `PATH`.
pub const PROMTOOL_BIN: &str = "promtool";

/// What `promtool check metrics` said about an exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// Exit code (0 clean, 3 lint problems, 1 unparsable).
    pub exit_code: i32,
    /// stdout and stderr together: empty when the exposition is clean.
    pub output: String,
}

impl CheckOutcome {
    /// True when promtool found nothing to say.
    pub fn is_clean(&self) -> bool {
        self.exit_code == 0 && self.output.trim().is_empty()
    }
}

/// Runs `promtool check metrics` on `exposition` (fed on stdin).
pub fn check_metrics(exposition: &str) -> CheckOutcome {
    let mut child = Command::new(PROMTOOL_BIN)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {PROMTOOL_BIN}: {e}; install it with `bash tests/run.sh`")
        });
    // Writing from a thread: promtool may answer before reading everything.
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = exposition.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{PROMTOOL_BIN} check metrics: {e}"));
    let _ = writer.join();
    CheckOutcome {
        exit_code: output.status.code().unwrap_or(-1),
        output: combined(&output),
    }
}

/// Backfills an OpenMetrics file (with timestamps) into TSDB blocks under `data_dir`,
/// via `promtool tsdb create-blocks-from openmetrics`; panics with promtool's output on failure.
pub fn backfill_openmetrics(input: &Path, data_dir: &Path) -> String {
    let output = Command::new(PROMTOOL_BIN)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(input)
        .arg(data_dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {PROMTOOL_BIN}: {e}; install it with `bash tests/run.sh`")
        });
    let text = combined(&output);
    assert!(
        output.status.success(),
        "promtool tsdb create-blocks-from openmetrics {} {} failed ({}):\n{text}",
        input.display(),
        data_dir.display(),
        output.status
    );
    text
}

fn combined(output: &Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_exposition_is_clean() {
        let outcome = check_metrics("# HELP a_total A.\n# TYPE a_total counter\na_total 1\n");
        assert!(outcome.is_clean(), "{outcome:?}");
    }

    #[test]
    fn lint_problems_are_reported() {
        let outcome = check_metrics("a_total 1\n");
        assert!(!outcome.is_clean());
        assert!(outcome.output.contains("no help text"), "{outcome:?}");
        let outcome = check_metrics("bad{ 1\n");
        assert_ne!(outcome.exit_code, 0);
    }

    #[test]
    fn backfill_writes_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("history.om");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        std::fs::write(
            &input,
            format!("# TYPE a gauge\na 1 {}\na 2 {now}\n# EOF\n", now - 3600),
        )
        .unwrap();
        let data = dir.path().join("data");
        backfill_openmetrics(&input, &data);
        let blocks = std::fs::read_dir(&data).unwrap().count();
        assert!(blocks >= 1, "no block written under {}", data.display());
    }

    #[test]
    #[should_panic(expected = "create-blocks-from openmetrics")]
    fn backfill_of_garbage_fails_loudly() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("bad.om");
        std::fs::write(&input, "not openmetrics{\n").unwrap();
        backfill_openmetrics(&input, &dir.path().join("data"));
    }
}
