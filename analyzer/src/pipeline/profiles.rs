//! The pipeline's second stage: fetch what profiles need over the run's window and
//! build one [`WorkloadProfile`] per workload seen busy (attribution in
//! [`crate::analysis::profile::build`]).

use std::collections::HashMap;

use crate::analysis::occupancy::KernelShape;
use crate::analysis::profile::build::{self, Observed};
use crate::analysis::profile::{Measured, ProfileSignal, Window, WorkloadProfile};
use crate::config::Identity;
use crate::pipeline::SeriesReport;
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
        "max by (uuid) (poolprof_gpu_tensor_any_active_ratio)",
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
/// Each kernel's latest launch shape: grid blocks, threads per block, registers per
/// thread, shared memory per block (the exporter's gauges, in that order).
pub const KERNEL_SHAPE: [&str; 4] = [
    "poolprof_kernel_grid_blocks",
    "poolprof_kernel_block_threads",
    "poolprof_kernel_registers_per_thread",
    "poolprof_kernel_shared_memory_per_block_bytes",
];
/// Each GPU's memory in use, whoever holds it.
pub const GPU_MEMORY_USED: &str = "max by (uuid) (poolprof_gpu_memory_used_bytes)";
/// How far back a GPU's current load is averaged.
pub const RECENT_SECONDS: f64 = 900.0;
/// Each GPU's product name.
pub const GPU_INFO: &str = "max by (uuid, name) (poolprof_gpu_info)";
/// Each GPU's memory.
pub const GPU_MEMORY: &str = "max by (uuid) (poolprof_gpu_memory_total_bytes)";

/// What the second stage fetched: workloads measured alone, and each GPU's current load.
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// One profile per workload seen running alone.
    pub workloads: Vec<WorkloadProfile>,
    /// One profile per GPU, named by its uuid: what it carries now.
    pub gpus: Vec<WorkloadProfile>,
}

/// Fetches the window's series and builds the profiles.
pub async fn fetch(client: &PrometheusClient, range: QueryRange) -> Result<Fetched, SourceError> {
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
        gpu_memory_used: matrix(GPU_MEMORY_USED).await?,
        kernel_shapes: kernel_shapes(client, range).await?,
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
    Ok(Fetched {
        workloads: build::build(&observed),
        gpus: build::gpu_loads(&observed, RECENT_SECONDS),
    })
}

/// The latest shape of each kernel seen in the window, by (workload, kernel).
async fn kernel_shapes(
    client: &PrometheusClient,
    range: QueryRange,
) -> Result<HashMap<(String, String), KernelShape>, SourceError> {
    let window = format!(
        "{}s",
        (range.end - range.start).max(range.step).ceil() as u64
    );
    let mut fields: HashMap<(String, String), [f64; 4]> = HashMap::new();
    for (i, family) in KERNEL_SHAPE.iter().enumerate() {
        let q = format!("max by (workload, kernel) (last_over_time({family}[{window}]))");
        for (labels, v) in client.query(&q, range.end).await? {
            if let (Some(w), Some(k)) = (labels.get("workload"), labels.get("kernel")) {
                fields.entry((w.clone(), k.clone())).or_default()[i] = v;
            }
        }
    }
    // Gauges are whole numbers the exporter wrote; anything else is not a shape.
    let whole = |v: f64, max: f64| (v.is_finite() && v >= 0.0 && v <= max).then_some(v);
    Ok(fields
        .into_iter()
        .filter_map(|(key, [blocks, threads, regs, shared])| {
            let shape = KernelShape {
                grid_blocks: whole(blocks, 2f64.powi(63))? as u64,
                block_threads: whole(threads, 1024.0)? as u32,
                registers_per_thread: whole(regs, 65_535.0)? as u32,
                shared_bytes_per_block: whole(shared, f64::from(u32::MAX))? as u32,
            };
            (shape.grid_blocks > 0).then_some((key, shape))
        })
        .collect())
}

/// The per-series signal whose periods a profile carries (the duty cycle).
pub const PERIOD_SIGNAL: &str = "utilization";
/// The per-series signal whose forecast bounds a profile's memory.
pub const MEMORY_SIGNAL: &str = "memory_used";

/// Adds what the per-series stage found for the workload: the periods of its duty
/// cycle, and the upper bound of its memory forecast.
pub fn enrich(profile: &mut WorkloadProfile, series: &[SeriesReport]) {
    let own = |signal: &str| {
        series.iter().find(|s| {
            s.identity == Identity::Workload && s.owner == profile.workload && s.signal == signal
        })
    };
    if let Some(s) = own(PERIOD_SIGNAL) {
        profile.periods = s.analysis.periods.clone();
    }
    let Some(s) = own(MEMORY_SIGNAL) else { return };
    let Some(last) = s.analysis.forecasts.last() else {
        return;
    };
    let upper = s
        .analysis
        .forecasts
        .iter()
        .map(|f| f.upper)
        .fold(f64::NEG_INFINITY, f64::max);
    if upper.is_finite() && upper > 0.0 {
        let start = profile
            .signals
            .get(&ProfileSignal::MemoryBytes)
            .map_or(0.0, |m| m.window.end);
        let window = Window {
            start,
            end: start + last.horizon.as_secs_f64(),
        };
        profile.signals.insert(
            ProfileSignal::MemoryForecastPeakBytes,
            Measured {
                value: upper,
                window,
                samples: s.analysis.forecasts.len() as u32,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::colocate::Demand;
    use crate::analysis::periodicity::Period;
    use crate::analysis::profile::Coverage;
    use crate::pipeline::{Analysis, HorizonForecast};
    use std::time::Duration;

    fn series(owner: &str, signal: &str, analysis: Analysis) -> SeriesReport {
        SeriesReport {
            identity: Identity::Workload,
            owner: owner.into(),
            signal: signal.into(),
            analysis,
            recent: Vec::new(),
        }
    }

    #[test]
    fn a_profile_takes_its_duty_cycle_periods_and_its_memory_forecast() {
        let w = Window {
            start: 0.0,
            end: 3600.0,
        };
        let mut p = WorkloadProfile::new("train", Coverage::Kernels).with(
            ProfileSignal::MemoryBytes,
            30e9,
            w,
        );
        let period = Period {
            period_seconds: 300.0,
            strength: 0.8,
            confidence: 0.99,
            last_peak_seconds: Some(1_767_225_560.0),
        };
        let forecast = |h: u64, upper: f64| HorizonForecast {
            horizon: Duration::from_secs(h),
            point: 40e9,
            lower: 35e9,
            upper,
        };
        let found = [
            series(
                "train",
                "utilization",
                Analysis {
                    periods: vec![period],
                    ..Default::default()
                },
            ),
            series(
                "train",
                "memory_used",
                Analysis {
                    forecasts: vec![forecast(1800, 45e9), forecast(3600, 60e9)],
                    ..Default::default()
                },
            ),
            series(
                "other",
                "utilization",
                Analysis {
                    periods: vec![Period {
                        period_seconds: 9.0,
                        ..period
                    }],
                    ..Default::default()
                },
            ),
        ];
        enrich(&mut p, &found);
        assert_eq!(p.periods, vec![period]);
        let m = p.signals[&ProfileSignal::MemoryForecastPeakBytes];
        assert_eq!(
            (m.value, m.window.start, m.window.end),
            (60e9, 3600.0, 7200.0)
        );
        // the model plans for the forecast peak, not the mean
        assert_eq!(Demand::of(&p).memory_bytes, 60e9);
    }
}
