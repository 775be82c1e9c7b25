//! The pipeline's second stage: fetch what profiles need over the run's window and
//! build one [`WorkloadProfile`] per workload seen busy (attribution in
//! [`crate::analysis::profile::build`]).

use std::collections::HashMap;

use crate::analysis::profile::build::{self, Observed};
use crate::analysis::profile::{ProfileSignal, WorkloadProfile};
use crate::source::prometheus::{PrometheusClient, QueryRange, SourceError};

/// The GPU-wide signals a profile takes, each with the PromQL that gives one series per GPU.
pub const GPU_SIGNALS: [(ProfileSignal, &str); 13] = [
    (
        ProfileSignal::Busy,
        "max by (uuid) (poolprof_gpu_utilization_ratio)",
    ),
    (
        ProfileSignal::SmActive,
        "max by (uuid) (poolprof_gpu_sm_active_ratio)",
    ),
    (
        ProfileSignal::SmOccupancy,
        "max by (uuid) (poolprof_gpu_sm_occupancy_ratio)",
    ),
    (
        ProfileSignal::TensorActive,
        r#"max by (uuid) (poolprof_gpu_tensor_active_ratio{kind="any"})"#,
    ),
    (
        ProfileSignal::TensorHmma,
        r#"max by (uuid) (poolprof_gpu_tensor_active_ratio{kind="hmma"})"#,
    ),
    (
        ProfileSignal::TensorImma,
        r#"max by (uuid) (poolprof_gpu_tensor_active_ratio{kind="imma"})"#,
    ),
    (
        ProfileSignal::TensorDfma,
        r#"max by (uuid) (poolprof_gpu_tensor_active_ratio{kind="dfma"})"#,
    ),
    (
        ProfileSignal::DramActive,
        "max by (uuid) (poolprof_gpu_dram_active_ratio)",
    ),
    (
        ProfileSignal::PipeFp64,
        r#"max by (uuid) (poolprof_gpu_pipe_active_ratio{pipe="fp64"})"#,
    ),
    (
        ProfileSignal::PipeFp32,
        r#"max by (uuid) (poolprof_gpu_pipe_active_ratio{pipe="fp32"})"#,
    ),
    (
        ProfileSignal::PipeFp16,
        r#"max by (uuid) (poolprof_gpu_pipe_active_ratio{pipe="fp16"})"#,
    ),
    (
        ProfileSignal::PipeInteger,
        r#"max by (uuid) (poolprof_gpu_pipe_active_ratio{pipe="integer"})"#,
    ),
    (
        ProfileSignal::PcieBytesPerSecond,
        "sum by (uuid) (poolprof_gpu_pcie_bytes_per_second)",
    ),
];
/// Who is busy on each GPU.
pub const PROCESS_SM: &str = "max by (uuid, workload) (poolprof_process_sm_utilization_ratio)";
/// Each workload's memory on each GPU.
pub const MEMORY: &str = "sum by (uuid, workload) (poolprof_process_gpu_memory_bytes)";
/// Kernel seconds by workload and kernel name (the injection library's counters).
pub const KERNEL_SECONDS: &str =
    "sum by (workload, kernel) (poolprof_kernel_duration_seconds_total)";
/// Kernel launches by workload and kernel name.
pub const KERNEL_LAUNCHES: &str = "sum by (workload, kernel) (poolprof_kernel_launches_total)";
/// Each GPU's product name.
pub const GPU_INFO: &str = "max by (uuid, name) (poolprof_gpu_info)";
/// Each GPU's memory.
pub const GPU_MEMORY: &str = "max by (uuid) (poolprof_gpu_memory_total_bytes)";

/// Fetches the window's series and builds the profiles.
pub async fn fetch(
    client: &PrometheusClient,
    range: QueryRange,
) -> Result<Vec<WorkloadProfile>, SourceError> {
    let matrix = |q: &'static str| async move {
        client
            .query_range(q, range, |_| true)
            .await
            .map(|r| r.series)
    };
    let mut gpu = Vec::new();
    for (signal, query) in GPU_SIGNALS {
        gpu.push((signal, matrix(query).await?));
    }
    let mut observed = Observed {
        step: range.step,
        process_sm: matrix(PROCESS_SM).await?,
        gpu,
        memory: matrix(MEMORY).await?,
        kernel_seconds: matrix(KERNEL_SECONDS).await?,
        kernel_launches: matrix(KERNEL_LAUNCHES).await?,
        gpus: HashMap::new(),
    };
    for (labels, bytes) in client.query(GPU_MEMORY, range.end).await? {
        if let Some(uuid) = labels.get("uuid") {
            observed.gpus.entry(uuid.clone()).or_default().memory_bytes = Some(bytes);
        }
    }
    for (labels, _) in client.query(GPU_INFO, range.end).await? {
        if let (Some(uuid), Some(name)) = (labels.get("uuid"), labels.get("name")) {
            observed.gpus.entry(uuid.clone()).or_default().name = Some(name.clone());
        }
    }
    Ok(build::build(&observed))
}
