//! Kernel metrics from the CUPTI injection library (`poolprof-inject`): a Unix socket
//! listener ([`listener`]) feeding bounded per-workload counters ([`store`]) with
//! readable kernel names ([`demangle`]). `collector::kernels` publishes them.

pub mod demangle;
pub mod listener;
pub mod store;

pub use listener::{KernelListener, ListenerError};
pub use store::{KernelLimits, KernelStore};

/// Socket path used when `--kernels.socket-path` is not given (the library's default).
pub const DEFAULT_SOCKET_PATH: &str = poolprof_inject::config::DEFAULT_SOCKET;

use crate::collector::kernels::KernelCollector;
use crate::collector::Collector;
use std::path::Path;

/// Starts the listener on `socket_path` and returns it with the collector that
/// publishes its metrics. Keep the listener alive as long as the exporter runs:
/// dropping it closes the socket and removes the file.
pub fn start(
    socket_path: &Path,
    limits: KernelLimits,
) -> Result<(KernelListener, Box<dyn Collector>), ListenerError> {
    let listener = KernelListener::spawn(socket_path, limits)?;
    let collector = Box::new(KernelCollector::new(listener.store()));
    Ok((listener, collector))
}
