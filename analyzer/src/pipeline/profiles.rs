//! The pipeline's second stage: fetch what profiles need over the run's window and
//! build one [`WorkloadProfile`] per workload seen busy (attribution in
//! [`crate::analysis::profile::build`]).

use std::collections::HashMap;

use crate::analysis::occupancy::KernelShape;
use crate::analysis::profile::build::{self, Observed};
use crate::analysis::profile::{Measured, ProfileSignal, ProfiledLaunch, Window, WorkloadProfile};
use crate::config::Identity;
use crate::pipeline::SeriesReport;
use crate::source::prometheus::response::Labels;
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
/// A profiled launch's counters (`POOLPROF_KERNEL_COUNTERS`): FLOPs by `precision`,
/// DRAM bytes by `direction`, GPU time; gauges of one launch per kernel.
pub const KERNEL_COUNTERS: [&str; 3] = [
    "poolprof_kernel_flops",
    "poolprof_kernel_dram_bytes",
    "poolprof_kernel_profiled_duration_seconds",
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
    let mut workloads = build::build(&observed);
    attach_counters(&mut workloads, &kernel_counters(client, range).await?);
    Ok(Fetched {
        workloads,
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

/// The latest profiled launch of each kernel seen in the window, by (workload,
/// kernel): FLOPs by precision, DRAM bytes read plus written, GPU time (the largest
/// where GPUs differ).
async fn kernel_counters(
    client: &PrometheusClient,
    range: QueryRange,
) -> Result<HashMap<(String, String), ProfiledLaunch>, SourceError> {
    let window = format!(
        "{}s",
        (range.end - range.start).max(range.step).ceil() as u64
    );
    let [flops, bytes, seconds] = KERNEL_COUNTERS;
    let last =
        |by: &str, family: &str| format!("max by ({by}) (last_over_time({family}[{window}]))");
    let flops = client
        .query(&last("workload, kernel, precision", flops), range.end)
        .await?;
    let bytes = format!(
        "sum by (workload, kernel) ({})",
        last("workload, kernel, direction", bytes)
    );
    let bytes = client.query(&bytes, range.end).await?;
    let seconds = client
        .query(&last("workload, kernel", seconds), range.end)
        .await?;
    Ok(assemble_counters(&flops, &bytes, &seconds))
}

/// Joins the three counter queries by (workload, kernel); a kernel needs its time,
/// its bytes and at least one FLOP count, each a finite value not below 0.
pub fn assemble_counters(
    flops: &[(Labels, f64)],
    bytes: &[(Labels, f64)],
    seconds: &[(Labels, f64)],
) -> HashMap<(String, String), ProfiledLaunch> {
    let key = |l: &Labels| Some((l.get("workload")?.clone(), l.get("kernel")?.clone()));
    let valid = |v: f64| v.is_finite() && v >= 0.0;
    let by_key = |rows: &[(Labels, f64)]| -> HashMap<(String, String), f64> {
        rows.iter()
            .filter(|(_, v)| valid(*v))
            .filter_map(|(l, v)| Some((key(l)?, *v)))
            .collect()
    };
    let (bytes, seconds) = (by_key(bytes), by_key(seconds));
    let mut out: HashMap<(String, String), ProfiledLaunch> = HashMap::new();
    for (labels, value) in flops.iter().filter(|(_, v)| valid(*v)) {
        let (Some(k), Some(precision)) = (key(labels), labels.get("precision")) else {
            continue;
        };
        let (Some(&b), Some(&s)) = (bytes.get(&k), seconds.get(&k)) else {
            continue;
        };
        out.entry(k)
            .or_insert_with(|| ProfiledLaunch {
                flops: Default::default(),
                dram_bytes: b,
                seconds: s,
            })
            .flops
            .insert(precision.clone(), *value);
    }
    out
}

/// Gives each profile's kernels their profiled launch, where one was published.
pub fn attach_counters(
    profiles: &mut [WorkloadProfile],
    counters: &HashMap<(String, String), ProfiledLaunch>,
) {
    for p in profiles {
        for k in &mut p.kernels {
            if let Some(c) = counters.get(&(p.workload.clone(), k.name.clone())) {
                k.counters = Some(c.clone());
            }
        }
        p.kernel_time_by_class = build::time_by_class(&p.kernels, p.gpu_name.as_deref());
    }
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

    fn row(pairs: &[(&str, &str)], v: f64) -> (Labels, f64) {
        let labels = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        (labels, v)
    }

    #[test]
    fn profiled_launches_join_by_workload_and_kernel_and_reach_the_profile() {
        let gemm = [("workload", "train"), ("kernel", "gemm")];
        let with = |extra: (&'static str, &'static str)| {
            let mut l = gemm.to_vec();
            l.push(extra);
            l
        };
        let flops = [
            row(&with(("precision", "tensor")), 1.1e12),
            row(&with(("precision", "fp32")), 2e6),
            row(
                &[
                    ("workload", "train"),
                    ("kernel", "add"),
                    ("precision", "fp32"),
                ],
                2.6e8,
            ),
            row(
                &[
                    ("workload", "infer"),
                    ("kernel", "gemm"),
                    ("precision", "fp64"),
                ],
                f64::NAN,
            ),
        ];
        let bytes = [
            row(&gemm, 4e8),
            row(&[("workload", "infer"), ("kernel", "gemm")], 1e6),
        ];
        let seconds = [
            row(&gemm, 1.6e-3),
            row(&[("workload", "train"), ("kernel", "add")], 1e-3),
            row(&[("workload", "infer"), ("kernel", "gemm")], 1e-3),
        ];
        let counters = assemble_counters(&flops, &bytes, &seconds);
        assert_eq!(
            counters.len(),
            1,
            "add lacks bytes, infer's FLOPs are not a number"
        );
        let c = &counters[&("train".to_string(), "gemm".to_string())];
        assert_eq!((c.flops["tensor"], c.flops["fp32"]), (1.1e12, 2e6));
        assert_eq!((c.dram_bytes, c.seconds), (4e8, 1.6e-3));

        let stat = |name: &str| crate::analysis::profile::KernelStat {
            name: name.into(),
            launches_per_second: 10.0,
            busy: 0.1,
            shape: None,
            counters: None,
        };
        let mut train = WorkloadProfile::new("train", Coverage::Kernels);
        train.kernels = vec![stat("gemm"), stat("add")];
        let mut infer = WorkloadProfile::new("infer", Coverage::Kernels);
        infer.kernels = vec![stat("gemm")];
        let mut profiles = [train, infer];
        attach_counters(&mut profiles, &counters);
        assert_eq!(profiles[0].kernels[0].counters.as_ref(), Some(c));
        assert_eq!(profiles[0].kernels[1].counters, None);
        assert_eq!(
            profiles[1].kernels[0].counters, None,
            "kernels join within a workload"
        );
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
