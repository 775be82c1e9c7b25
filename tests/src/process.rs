//! A child process that cannot outlive its test.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};

/// How many log lines failure messages quote.
pub const LOG_TAIL_LINES: usize = 40;

/// A running child process whose stdout and stderr go to a log file.
///
/// Dropping it kills the process and waits for it, so a failing test leaves nothing
/// running behind.
#[derive(Debug)]
pub struct ChildGuard {
    name: String,
    child: Child,
    log_path: PathBuf,
}

impl ChildGuard {
    /// Spawns `command` with stdin closed and stdout + stderr appended to `log_path`.
    ///
    /// Panics if the program cannot be started, naming it and how to install it.
    pub fn spawn(name: &str, mut command: Command, log_path: &Path) -> ChildGuard {
        let log = File::create(log_path)
            .unwrap_or_else(|e| panic!("cannot create log file {}: {e}", log_path.display()));
        let log_err = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cannot duplicate log file {}: {e}", log_path.display()));
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start {name} ({:?}): {e}; install the test dependencies with `bash tests/run.sh` \
                 or build the workspace with `cargo build --workspace --bins`",
                command.get_program()
            )
        });
        ChildGuard {
            name: name.to_string(),
            child,
            log_path: log_path.to_path_buf(),
        }
    }

    /// The name given at spawn, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The operating-system process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The file holding the process's stdout and stderr.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The whole log so far (lossy UTF-8; empty if unreadable).
    pub fn log(&self) -> String {
        std::fs::read(&self.log_path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default()
    }

    /// The last [`LOG_TAIL_LINES`] lines of the log, for failure messages.
    pub fn log_tail(&self) -> String {
        tail(&self.log(), LOG_TAIL_LINES)
    }

    /// The exit status if the process has exited, without blocking.
    pub fn try_exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits for the process to exit on its own and returns its status.
    pub fn wait(&mut self) -> ExitStatus {
        self.child
            .wait()
            .unwrap_or_else(|e| panic!("cannot wait for {}: {e}", self.name))
    }

    /// Sends SIGTERM (a clean-shutdown request) without waiting.
    pub fn terminate(&self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits in pid_t");
        // SAFETY: kill(2) on our own child with a valid signal touches no memory of ours.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // Errors mean it already exited; either way it must be reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A finished command's stdout followed by its stderr, for assertions and messages.
pub fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 5), "");
    }

    #[test]
    fn captures_output_and_kills_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sh.log");
        let mut command = Command::new("sh");
        command.args(["-c", "echo hello; echo oops >&2; exec sleep 60"]);
        let guard = ChildGuard::spawn("sh", command, &log);
        let pid = guard.pid();
        crate::wait::until(
            "both lines in the log",
            std::time::Duration::from_secs(5),
            || {
                let log = guard.log();
                if log.contains("hello") && log.contains("oops") {
                    Ok(())
                } else {
                    Err(log)
                }
            },
        );
        drop(guard);
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} still exists after drop"
        );
    }

    #[test]
    fn terminate_stops_a_process() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sleep");
        command.arg("60");
        let mut guard = ChildGuard::spawn("sleep", command, &dir.path().join("log"));
        guard.terminate();
        assert!(!guard.wait().success());
    }
}
