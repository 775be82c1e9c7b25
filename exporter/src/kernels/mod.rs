//! Kernel metrics from the CUPTI injection library (`poolprof-inject`): a Unix socket
//! listener ([`listener`]) feeding bounded per-workload counters ([`store`]) with
//! readable kernel names ([`demangle`]). `collector::kernels` publishes them.

pub mod demangle;
pub mod flags;
pub mod frame;
pub mod listener;
pub mod rejection_log;
pub mod store;

pub use flags::KernelFlags;
pub use listener::{KernelListener, ListenerError};
pub use store::{KernelLimits, KernelStore};

/// Socket path used when `--kernels.socket-path` is not given (the library's default).
pub const DEFAULT_SOCKET_PATH: &str = poolprof_inject::config::DEFAULT_SOCKET;
