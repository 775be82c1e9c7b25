//! Start-up wiring of the exporter: flags → web config → backend → listeners →
//! collection → serve until SIGTERM or SIGINT. Every start-up failure becomes one
//! [`StartError`] with the exit code DESIGN.md gives it.

use crate::backend::nvml::{NvmlBackend, NvmlInitError};
use crate::backend::sim::{Scenario, ScenarioError, SimBackend};
use crate::backend::Backend;
use crate::cli::{GpuSource, ServeArgs};
use crate::collector::default_collectors;
use crate::collector::runner::Collection;
use crate::registry::SnapshotStore;
use crate::server::listen::ListenError;
use crate::server::routes::Routes;
use crate::server::web_config::{WebConfig, WebConfigError};
use crate::server::{Server, ServerOptions};
use std::sync::Arc;

/// Why the exporter could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `--web.config.file` is unreadable or invalid.
    #[error(transparent)]
    WebConfig(#[from] WebConfigError),
    /// `--scenario` or `--simulate` describes GPUs the simulator cannot build.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// NVML could not be started (no driver, no GPU); the message names `--simulate`.
    #[error(transparent)]
    Nvml(#[from] NvmlInitError),
    /// A listen address is invalid or cannot be bound.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

impl StartError {
    /// 2 for bad input (flags, files), 1 for failures of the machine (driver, port).
    pub fn exit_code(&self) -> u8 {
        match self {
            StartError::WebConfig(_)
            | StartError::Scenario(_)
            | StartError::Listen(ListenError::Invalid { .. }) => 2,
            StartError::Nvml(_) | StartError::Listen(_) | StartError::Runtime(_) => 1,
        }
    }
}

/// Runs the exporter until a termination signal; returns once it has shut down.
pub fn serve(args: &ServeArgs) -> Result<(), StartError> {
    let web_config = args
        .web_config_file
        .as_deref()
        .map(WebConfig::load)
        .transpose()?;
    let store = Arc::new(SnapshotStore::new());
    let routes = Arc::new(Routes::new(store.clone(), args.collect_interval));
    let options = ServerOptions {
        max_requests: args.max_requests as usize,
        web_config,
    };
    let server = Server::new(options, routes)?;
    let backend = open_backend(&args.gpu_source())?;
    let bound = server.bind(&args.listen_addresses)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("poolprof-http")
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;

    let kind = backend.kind();
    let gpus = backend.devices().len();
    let collection = Collection::new(backend, default_collectors());
    // TODO(lead): once the inject helper lands `kernels::KernelListener`, start it here
    // unless `args.no_kernels`, on `args.kernels_socket_path`, and add
    // `collector::kernels::KernelCollector::new(store)` with `collection.add_collector`.
    let collecting = collection.spawn(args.collect_interval, store);
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        backend = kind,
        gpus,
        interval = %humantime::format_duration(args.collect_interval),
        addresses = ?bound.local_addrs(),
        "poolprof-exporter started"
    );
    runtime.block_on(bound.serve(termination()));
    collecting.stop();
    tracing::info!("poolprof-exporter stopped");
    Ok(())
}

/// The backend the flags choose: simulated GPUs, or NVML.
pub fn open_backend(source: &GpuSource) -> Result<Arc<dyn Backend>, StartError> {
    Ok(match source {
        GpuSource::Simulated(n) => Arc::new(SimBackend::with_gpus(*n)?),
        GpuSource::Scenario(file) => {
            Arc::new(SimBackend::from_scenario(Scenario::from_file(file)?))
        }
        GpuSource::Nvml => Arc::new(NvmlBackend::new()?),
    })
}

/// Completes on the first SIGTERM or SIGINT.
async fn termination() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(stream) => stream,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch SIGTERM; stop with SIGINT");
            return std::future::pending::<()>().await;
        }
    };
    let signal = tokio::select! {
        _ = terminate.recv() => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    };
    tracing::info!(signal, "shutting down: finishing in-flight requests");
}
