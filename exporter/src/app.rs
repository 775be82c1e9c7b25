//! Start-up wiring of the exporter: flags → web config → backend → listeners →
//! collection → serve until SIGTERM or SIGINT. Every start-up failure becomes one
//! [`StartError`] with the exit code DESIGN.md gives it.

use crate::backend::nvml::{NvmlBackend, NvmlInitError};
use crate::backend::sim::{Scenario, ScenarioError, SimBackend};
use crate::backend::Backend;
use crate::cli::{GpuSource, ServeArgs};
use crate::collector::kernels::KernelCollector;
use crate::collector::pods::{PodsCollector, CALL_TIMEOUT};
use crate::collector::runner::Collection;
use crate::collector::selected_collectors;
use crate::kernels::{KernelListener, ListenerError, DEFAULT_SOCKET_PATH};
use crate::kubelet::{self, PodResourcesClient, SocketChoice, SocketPathError};
use crate::registry::SnapshotStore;
use crate::server::listen::ListenError;
use crate::server::routes::Routes;
use crate::server::web_config::{WebConfig, WebConfigError};
use crate::server::{Server, ServerOptions};
use std::sync::Arc;
use std::time::Duration;

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
    /// `--kernels.socket-path` was given and cannot be listened on.
    #[error(transparent)]
    Kernels(#[from] ListenerError),
    /// `--kubelet.pod-resources-socket` names no socket.
    #[error(transparent)]
    Kubelet(#[from] SocketPathError),
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
            | StartError::Kernels(ListenerError::BadPath { .. })
            | StartError::Kubelet(_)
            | StartError::Listen(ListenError::Invalid { .. }) => 2,
            StartError::Nvml(_)
            | StartError::Kernels(_)
            | StartError::Listen(_)
            | StartError::Runtime(_) => 1,
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
        ..ServerOptions::default()
    };
    let server = Server::new(options, routes)?;
    let kubelet = kubelet_socket(args)?;
    let backend = open_backend(&args.gpu_source(), args.collectors.process_sample_interval)?;
    let bound = server.bind(&args.listen_addresses)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("poolprof-http")
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;

    let kind = backend.kind();
    let gpus = backend.devices().len();
    let uuids = gpu_uuids(&backend);
    let chosen = &args.collectors;
    let mut collection = Collection::new(
        backend,
        selected_collectors(&chosen.selection, chosen.pid_label),
    );
    let kernels = kernel_listener(args)?;
    if let Some(listener) = &kernels {
        listener.store().set_gpus(uuids);
        collection.add_collector(Box::new(KernelCollector::new(listener.store())));
    }
    let kubelet_socket = match kubelet {
        Some(SocketChoice::Use(socket)) => {
            let client = PodResourcesClient::new(&socket, CALL_TIMEOUT);
            let collector = PodsCollector::new(client, args.kubelet_interval);
            collection.add_collector(Box::new(collector));
            Some(socket.display().to_string())
        }
        Some(SocketChoice::Absent(socket)) => {
            tracing::info!(
                socket = %socket.display(),
                "pod info is off: no kubelet pod-resources socket (not a Kubernetes node, or the directory is not mounted)"
            );
            None
        }
        None => None,
    };
    let collecting = collection.spawn(args.collect_interval, store);
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        backend = kind,
        gpus,
        interval = %humantime::format_duration(args.collect_interval),
        addresses = ?bound.local_addrs(),
        kernels_socket = %kernels
            .as_ref()
            .map_or_else(|| "off".to_string(), |k| k.path().display().to_string()),
        kubelet_socket = %kubelet_socket.as_deref().unwrap_or("off"),
        collectors = %chosen.selection.describe(),
        "poolprof-exporter started"
    );
    runtime.block_on(bound.serve(termination()));
    collecting.stop();
    drop(kernels);
    tracing::info!("poolprof-exporter stopped");
    Ok(())
}

/// The backend the flags choose: simulated GPUs, or NVML reading per-process
/// utilization every `process_sample_interval`.
pub fn open_backend(
    source: &GpuSource,
    process_sample_interval: Duration,
) -> Result<Arc<dyn Backend>, StartError> {
    Ok(match source {
        GpuSource::Simulated(n) => Arc::new(SimBackend::with_gpus(*n)?),
        GpuSource::Scenario(file) => {
            Arc::new(SimBackend::from_scenario(Scenario::from_file(file)?))
        }
        GpuSource::Nvml => Arc::new(NvmlBackend::new(process_sample_interval)?),
    })
}

/// The kernel statistics listener, unless `--no-kernels` or `--no-collector.kernels`. The default path needs
/// root (`/run`); when it cannot be used the exporter runs on without kernel
/// metrics, but a path the operator chose must work.
fn kernel_listener(args: &ServeArgs) -> Result<Option<KernelListener>, StartError> {
    if args.no_kernels || !args.collectors.selection.enabled("kernels") {
        return Ok(None);
    }
    match KernelListener::spawn(&args.kernels_socket_path, args.kernels.limits()) {
        Ok(listener) => Ok(Some(listener)),
        Err(e) if args.kernels_socket_path.as_os_str() == DEFAULT_SOCKET_PATH => {
            tracing::warn!(
                error = %e,
                "kernel metrics are off: run as root, set --kernels.socket-path to a writable path, or pass --no-kernels"
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// UUIDs of the GPUs the backend sees, and of their MIG instances (a process on a
/// MIG instance reports the instance's `MIG-…` UUID): injected processes may report
/// only these. Read at start; a MIG layout changed later needs a restart.
fn gpu_uuids(backend: &Arc<dyn Backend>) -> Vec<String> {
    let devices = backend.devices();
    let gpus = devices
        .iter()
        .filter_map(|d| d.identity().ok())
        .map(|id| id.uuid);
    let migs = devices
        .iter()
        .filter_map(|d| d.mig_instances().ok())
        .flatten()
        .filter_map(|m| m.uuid);
    gpus.chain(migs).collect()
}

/// The kubelet socket for the pods collector, unless `--no-kubelet` or
/// `--no-collector.pods`. Checked before
/// anything starts, so a bad `--kubelet.pod-resources-socket` is a usage error.
fn kubelet_socket(args: &ServeArgs) -> Result<Option<SocketChoice>, StartError> {
    if args.no_kubelet || !args.collectors.selection.enabled("pods") {
        return Ok(None);
    }
    let default = std::path::Path::new(kubelet::DEFAULT_SOCKET_PATH);
    Ok(Some(kubelet::choose_socket(
        args.kubelet_socket.as_deref(),
        default,
    )?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_may_report_for_every_gpu_and_every_mig_instance() {
        // The built-in six: the sixth GPU is partitioned into MIG instances.
        let backend: Arc<dyn Backend> = Arc::new(SimBackend::with_gpus(6).unwrap());
        let uuids = gpu_uuids(&backend);
        let gpus = uuids.iter().filter(|u| u.starts_with("GPU-")).count();
        let migs = uuids.iter().filter(|u| u.starts_with("MIG-")).count();
        assert_eq!(gpus, 6, "{uuids:?}");
        assert!(migs >= 2, "every MIG instance's UUID: {uuids:?}");
    }
}
