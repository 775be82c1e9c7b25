//! The process exit codes of DESIGN.md, in a module of their own so that every layer
//! (source, sinks, commands) can name them without depending on the top-level error.

/// The process exit codes shared by every poolprof program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything worked (empty results included).
    Ok = 0,
    /// A runtime failure not caused by the input or a peer.
    Runtime = 1,
    /// Bad usage or input: flags, config, PromQL.
    Usage = 2,
    /// A source (Prometheus, VictoriaMetrics) could not be reached.
    SourceUnreachable = 3,
    /// A sink (Pushgateway) rejected or did not take the results.
    SinkRejected = 4,
}

impl ExitCode {
    /// The numeric code for `std::process::exit`.
    pub fn code(self) -> i32 {
        self as i32
    }
}
