//! Process exit codes and the top-level error that carries one.
//!
//! Every failure that reaches `main` is an [`Error`]: its message says what failed,
//! where (file, field, URL) and what to do, and [`Error::exit_code`] maps it onto the
//! codes DESIGN.md fixes for scripts and cron.

pub use crate::exit_code::ExitCode;

use crate::config::ConfigError;
use crate::offline::OfflineError;
use crate::sink::pushgateway::PushError;
use crate::source::prometheus::SourceError;

/// A failure of the analyzer as a whole, with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line is wrong.
    #[error("{0}")]
    Usage(String),
    /// The config file is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The source failed (unreachable, rejected the query, or answered garbage).
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The sink did not take the results.
    #[error(transparent)]
    Push(#[from] PushError),
    /// An offline command (`periods`, `forecast`) failed.
    #[error(transparent)]
    Offline(#[from] OfflineError),
    /// Anything else at run time (a listener that cannot bind, an analysis task that panicked).
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    /// The exit code DESIGN.md assigns to this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(_) | Error::Config(_) => ExitCode::Usage,
            Error::Source(e) => e.exit_code(),
            Error::Push(PushError::BadUrl { .. }) => ExitCode::Usage,
            Error::Push(_) => ExitCode::SinkRejected,
            Error::Offline(e) if e.exit_code() == ExitCode::Usage.code() => ExitCode::Usage,
            Error::Offline(_) | Error::Runtime(_) => ExitCode::Runtime,
        }
    }
}
