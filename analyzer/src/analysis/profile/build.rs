//! Building profiles from what Prometheus holds: attributing each GPU's signals to the
//! workload that ran alone on it, step by step.
//!
//! A step belongs to workload W on GPU G when W's process SM utilization there is at
//! least [`BUSY_MIN`] and no other workload's is. GPU-wide signals (utilization, GPM)
//! are averaged over W's steps on the GPU where it has the most of them. Kernel
//! counters are per workload; their increments count on the steps where no other
//! workload on that GPU is busy (a sampled window is reported up to a few seconds after
//! its kernels ran, often after W stopped), and are divided by W's own seconds.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Coverage, KernelStat, Measured, ProfileSignal, Window, WorkloadProfile};
use crate::analysis::classify::{class_by_name, class_from_counters};
use crate::analysis::occupancy::KernelShape;
use crate::analysis::roofline::lookup_or_default;

/// Label sets as the Prometheus client returns them.
pub type Labels = BTreeMap<String, String>;
/// Range-query series by their labels, samples in time order.
pub type Matrix = BTreeMap<Labels, Vec<(f64, f64)>>;

/// Process SM utilization at and above which a workload counts as busy on a step.
pub const BUSY_MIN: f64 = 0.02;
/// Fewest steps alone on a GPU for GPU-wide signals to be attributed.
pub const MIN_STEPS: usize = 3;
/// Kernel names kept per profile; the rest are summed as `other`.
pub const MAX_KERNELS: usize = 50;

/// What the builder reads, fetched by the pipeline over one window.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Seconds between steps of every matrix.
    pub step: f64,
    /// `poolprof_process_sm_utilization_ratio` by `uuid`, `workload`.
    pub process_sm: Matrix,
    /// GPU-wide signals by `uuid`, one matrix per profile signal.
    pub gpu: Vec<(ProfileSignal, Matrix)>,
    /// `poolprof_process_gpu_memory_bytes` by `uuid`, `workload`.
    pub memory: Matrix,
    /// `poolprof_kernel_duration_seconds_total` by `workload`, `kernel`.
    pub kernel_seconds: Matrix,
    /// `poolprof_kernel_launches_total` by `workload`, `kernel`.
    pub kernel_launches: Matrix,
    /// `poolprof_gpu_memory_used_bytes` by `uuid`.
    pub gpu_memory_used: Matrix,
    /// Each kernel's latest launch shape, by (`workload`, `kernel`).
    pub kernel_shapes: HashMap<(String, String), KernelShape>,
    /// What is known of each GPU, by `uuid`.
    pub gpus: HashMap<String, GpuFacts>,
}

/// A GPU's identity facts (`poolprof_gpu_info`, `poolprof_gpu_memory_total_bytes`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuFacts {
    /// The product name, as NVML gives it.
    pub name: Option<String>,
    /// The memory, bytes.
    pub memory_bytes: Option<f64>,
}

/// Step times as integer milliseconds, so samples of different queries line up.
fn key(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

fn label<'a>(labels: &'a Labels, name: &str) -> Option<&'a str> {
    labels.get(name).map(String::as_str)
}

/// Who is busy on each GPU at each step: uuid → step → workloads.
fn busy_map(o: &Observed) -> HashMap<String, BTreeMap<i64, BTreeSet<String>>> {
    let mut busy: HashMap<String, BTreeMap<i64, BTreeSet<String>>> = HashMap::new();
    for (labels, points) in &o.process_sm {
        let (Some(uuid), Some(w)) = (label(labels, "uuid"), label(labels, "workload")) else {
            continue;
        };
        let steps = busy.entry(uuid.to_string()).or_default();
        for &(t, v) in points {
            let set = steps.entry(key(t)).or_default();
            if v >= BUSY_MIN {
                set.insert(w.to_string());
            }
        }
    }
    busy
}

/// The steps on which `w` ran alone, per GPU.
fn alone_steps(
    busy: &HashMap<String, BTreeMap<i64, BTreeSet<String>>>,
) -> BTreeMap<String, BTreeMap<String, Vec<i64>>> {
    let mut alone: BTreeMap<String, BTreeMap<String, Vec<i64>>> = BTreeMap::new();
    for (uuid, steps) in busy {
        for (t, set) in steps {
            if set.len() == 1 {
                let w = set.iter().next().expect("one element");
                alone
                    .entry(w.clone())
                    .or_default()
                    .entry(uuid.clone())
                    .or_default()
                    .push(*t);
            }
        }
    }
    alone
}

/// Builds one profile per workload seen busy, with the window each value came from.
pub fn build(o: &Observed) -> Vec<WorkloadProfile> {
    let busy = busy_map(o);
    let alone = alone_steps(&busy);
    let mut profiles = Vec::new();
    for (workload, by_gpu) in &alone {
        let Some((uuid, steps)) = by_gpu.iter().max_by_key(|(_, s)| s.len()) else {
            continue;
        };
        let mut p = WorkloadProfile::new(workload.clone(), Coverage::NvmlOnly);
        p.uuid = Some(uuid.clone());
        if let Some(facts) = o.gpus.get(uuid) {
            p.gpu_name.clone_from(&facts.name);
            p.gpu_memory_bytes = facts.memory_bytes;
        }
        let at: BTreeSet<i64> = steps.iter().copied().collect();
        if at.len() >= MIN_STEPS {
            for (signal, matrix) in &o.gpu {
                if let Some(m) = summarize(
                    matrix,
                    |l| label(l, "uuid") == Some(uuid),
                    &at,
                    Summary::Mean,
                ) {
                    p.signals.insert(*signal, m);
                }
            }
            if let Some(m) = summarize(
                &o.process_sm,
                |l| owned(l, uuid, workload),
                &at,
                Summary::Mean,
            ) {
                p.signals.insert(ProfileSignal::ProcessSm, m);
            }
        }
        let all: BTreeSet<i64> = o
            .memory
            .iter()
            .filter(|(l, _)| owned(l, uuid, workload))
            .flat_map(|(_, pts)| pts.iter().map(|(t, _)| key(*t)))
            .collect();
        let memory = |s| summarize(&o.memory, |l| owned(l, uuid, workload), &all, s);
        if let (Some(mean), Some(peak)) = (memory(Summary::Mean), memory(Summary::Max)) {
            p.signals.insert(ProfileSignal::MemoryBytes, mean);
            p.signals.insert(ProfileSignal::MemoryPeakBytes, peak);
        }
        add_kernels(&mut p, o, &busy[uuid], &at);
        profiles.push(p);
    }
    profiles
}

/// What each GPU carries now, as a profile named by its uuid: its GPU-wide signals and
/// memory used, averaged over the last `recent_seconds` of the window, whoever runs
/// there. The co-location model reads it as the peer a newcomer would meet.
pub fn gpu_loads(o: &Observed, recent_seconds: f64) -> Vec<WorkloadProfile> {
    let mut loads = Vec::new();
    for (uuid, facts) in &o.gpus {
        let on_gpu = |l: &Labels| label(l, "uuid") == Some(uuid.as_str());
        let steps: BTreeSet<i64> = o
            .gpu_memory_used
            .iter()
            .filter(|(l, _)| on_gpu(l))
            .flat_map(|(_, pts)| pts.iter().map(|(t, _)| key(*t)))
            .collect();
        let Some(&last) = steps.last() else { continue };
        let from = last - (recent_seconds * 1000.0) as i64;
        let recent: BTreeSet<i64> = steps.range(from..).copied().collect();
        let mut p = WorkloadProfile::new(uuid.clone(), Coverage::NvmlOnly);
        p.uuid = Some(uuid.clone());
        p.gpu_name.clone_from(&facts.name);
        p.gpu_memory_bytes = facts.memory_bytes;
        for (signal, matrix) in &o.gpu {
            if let Some(m) = summarize(matrix, on_gpu, &recent, Summary::Mean) {
                p.signals.insert(*signal, m);
            }
        }
        for (signal, how) in [
            (ProfileSignal::MemoryBytes, Summary::Mean),
            (ProfileSignal::MemoryPeakBytes, Summary::Max),
        ] {
            if let Some(m) = summarize(&o.gpu_memory_used, on_gpu, &recent, how) {
                p.signals.insert(signal, m);
            }
        }
        loads.push(p);
    }
    loads.sort_by(|a, b| a.workload.cmp(&b.workload));
    loads
}

fn owned(l: &Labels, uuid: &str, workload: &str) -> bool {
    label(l, "uuid") == Some(uuid) && label(l, "workload") == Some(workload)
}

#[derive(Clone, Copy)]
enum Summary {
    Mean,
    Max,
}

/// The mean (or max) over `at` of the series `keep` selects, summed across series
/// per step (a signal split by label, e.g. per process of one workload).
fn summarize(
    m: &Matrix,
    keep: impl Fn(&Labels) -> bool,
    at: &BTreeSet<i64>,
    how: Summary,
) -> Option<Measured> {
    let mut per_step: BTreeMap<i64, f64> = BTreeMap::new();
    for (_, points) in m.iter().filter(|(l, _)| keep(l)) {
        for &(t, v) in points {
            if at.contains(&key(t)) {
                *per_step.entry(key(t)).or_default() += v;
            }
        }
    }
    let (first, last) = (*per_step.keys().next()?, *per_step.keys().next_back()?);
    let values = per_step.values();
    let value = match how {
        Summary::Mean => values.clone().sum::<f64>() / per_step.len() as f64,
        Summary::Max => values.clone().fold(f64::NEG_INFINITY, |a, b| a.max(*b)),
    };
    Some(Measured {
        value,
        window: Window {
            start: first as f64 / 1000.0,
            end: last as f64 / 1000.0,
        },
        samples: per_step.len() as u32,
    })
}

/// Counter increments per step (a drop is a restart: the new value is the increment).
fn increments(points: &[(f64, f64)]) -> Vec<(i64, f64)> {
    points
        .windows(2)
        .map(|w| {
            let d = w[1].1 - w[0].1;
            (key(w[1].0), if d >= 0.0 { d } else { w[1].1 })
        })
        .collect()
}

/// Adds launch rate, kernel time and per-kernel shares from the injection library's
/// counters, when the workload has them.
fn add_kernels(
    p: &mut WorkloadProfile,
    o: &Observed,
    gpu_busy: &BTreeMap<i64, BTreeSet<String>>,
    at: &BTreeSet<i64>,
) {
    let workload = p.workload.clone();
    let quiet = |t: &i64| {
        gpu_busy
            .get(t)
            .is_none_or(|s| s.iter().all(|w| *w == workload))
    };
    let per_kernel = |m: &Matrix| -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (l, pts) in m
            .iter()
            .filter(|(l, _)| label(l, "workload") == Some(&workload))
        {
            let total: f64 = increments(pts)
                .iter()
                .filter(|(t, _)| quiet(t))
                .map(|(_, d)| d)
                .sum();
            *out.entry(label(l, "kernel").unwrap_or("other").to_string())
                .or_default() += total;
        }
        out
    };
    let (seconds, launches) = (
        per_kernel(&o.kernel_seconds),
        per_kernel(&o.kernel_launches),
    );
    let wall = at.len() as f64 * o.step;
    let (busy, count): (f64, f64) = (seconds.values().sum(), launches.values().sum());
    if seconds.is_empty() || count <= 0.0 || wall <= 0.0 {
        return;
    }
    p.coverage = Coverage::Kernels;
    let window = Window {
        start: *at.first().expect("wall > 0") as f64 / 1000.0,
        end: *at.last().expect("wall > 0") as f64 / 1000.0,
    };
    let put = |p: &mut WorkloadProfile, s, value| {
        p.signals.insert(
            s,
            Measured {
                value,
                window,
                samples: at.len() as u32,
            },
        );
    };
    put(p, ProfileSignal::KernelBusy, busy / wall);
    put(p, ProfileSignal::LaunchRate, count / wall);
    put(p, ProfileSignal::MeanKernelSeconds, busy / count);
    let weighted: f64 = seconds
        .iter()
        .filter_map(|(k, s)| launches.get(k).filter(|n| **n > 0.0).map(|n| s * s / n))
        .sum();
    if busy > 0.0 {
        put(p, ProfileSignal::ResidualKernelSeconds, weighted / busy);
    }
    let mut kernels: Vec<KernelStat> = seconds
        .iter()
        .map(|(name, s)| KernelStat {
            name: name.clone(),
            launches_per_second: launches.get(name).copied().unwrap_or(0.0) / wall,
            busy: s / wall,
            shape: o
                .kernel_shapes
                .get(&(workload.clone(), name.clone()))
                .copied(),
            counters: None,
        })
        .collect();
    kernels.sort_by(|a, b| b.busy.total_cmp(&a.busy));
    kernels.truncate(MAX_KERNELS);
    p.kernels = kernels;
    p.kernel_time_by_class = time_by_class(&p.kernels, p.gpu_name.as_deref());
    if let Some(fill) = sm_fill(&p.kernels, p.gpu_name.as_deref()) {
        put(p, ProfileSignal::SmFill, fill);
    }
}

/// Shares of kernel time by the class each kernel's name suggests.
/// Each class's share of kernel time: a kernel's class from its profiled launch's
/// hardware counters where it has one (`POOLPROF_KERNEL_COUNTERS`), else from its name.
pub fn time_by_class(kernels: &[KernelStat], gpu_name: Option<&str>) -> BTreeMap<String, f64> {
    let (spec, _) = lookup_or_default(gpu_name);
    let total: f64 = kernels.iter().map(|k| k.busy).sum();
    let mut out = BTreeMap::new();
    if total <= 0.0 {
        return out;
    }
    for k in kernels {
        let measured = k
            .counters
            .as_ref()
            .and_then(|c| class_from_counters(&k.name, c, spec));
        let class = measured
            .or_else(|| class_by_name(&k.name))
            .map_or("unknown", |c| c.label());
        *out.entry(class.to_string()).or_default() += k.busy / total;
    }
    out
}

/// Kernel time-weighted SM fill over the kernels whose shape is known.
fn sm_fill(kernels: &[KernelStat], gpu_name: Option<&str>) -> Option<f64> {
    let (spec, _) = lookup_or_default(gpu_name);
    let (mut weighted, mut time) = (0.0, 0.0);
    for k in kernels {
        if let Some(shape) = &k.shape {
            weighted += k.busy * shape.sm_fill(spec);
            time += k.busy;
        }
    }
    (time > 0.0).then(|| weighted / time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_time_by_class_trusts_a_profiled_launch_over_the_name() {
        use crate::analysis::profile::ProfiledLaunch;
        let stat = |name: &str, counters: Option<ProfiledLaunch>| KernelStat {
            name: name.into(),
            launches_per_second: 10.0,
            busy: 0.25,
            shape: None,
            counters,
        };
        // 12 bytes and 1 FLOP per element over 1 ms: a memory-bound kernel the name
        // cannot tell.
        let streamed = ProfiledLaunch {
            flops: [("fp32".to_string(), 2.7e8)].into(),
            dram_bytes: 3.2e9,
            seconds: 1e-3,
        };
        let kernels = [
            stat("my_custom_kernel", Some(streamed)),
            stat("my_other_kernel", None),
        ];
        let shares = time_by_class(&kernels, Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(shares.get("memory_bound"), Some(&0.5), "{shares:?}");
        assert_eq!(shares.get("unknown"), Some(&0.5), "{shares:?}");
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn series(values: &[f64]) -> Vec<(f64, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (100.0 + i as f64, *v))
            .collect()
    }

    /// Two workloads take turns on one GPU (steps 0-3 `a`, 4-5 both, 6-7 `b`, then none); the GPU's
    /// SM activity is 0.8 under `a`, 1.0 under both and 0.3 under `b`.
    fn observed() -> Observed {
        let mut o = Observed {
            step: 1.0,
            ..Default::default()
        };
        let (a, b) = (
            [0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.4, 0.4, 0.0, 0.0],
        );
        o.process_sm
            .insert(labels(&[("uuid", "G"), ("workload", "a")]), series(&a));
        o.process_sm
            .insert(labels(&[("uuid", "G"), ("workload", "b")]), series(&b));
        let sm = [0.8, 0.8, 0.8, 0.8, 1.0, 1.0, 0.3, 0.3, 0.0, 0.0];
        o.gpu.push((
            ProfileSignal::SmActive,
            [(labels(&[("uuid", "G")]), series(&sm))]
                .into_iter()
                .collect(),
        ));
        o.memory.insert(
            labels(&[("uuid", "G"), ("workload", "a")]),
            series(&[4e9, 5e9, 6e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9, 5e9]),
        );
        // a's kernel counters: 100 launches and 0.5 s a step while it runs, and one
        // sampled window reported late, at step 7 (b busy: not counted) and step 9 (counted)
        let launches = [
            0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 500.0, 600.0, 600.0, 700.0,
        ];
        let seconds: Vec<f64> = launches.iter().map(|l| l * 0.005).collect();
        o.kernel_launches.insert(
            labels(&[("workload", "a"), ("kernel", "gemm")]),
            series(&launches),
        );
        o.kernel_seconds.insert(
            labels(&[("workload", "a"), ("kernel", "gemm")]),
            series(&seconds),
        );
        o.gpus.insert(
            "G".into(),
            GpuFacts {
                name: Some("NVIDIA H100 80GB HBM3".into()),
                memory_bytes: Some(80e9),
            },
        );
        o
    }

    #[test]
    fn gpu_signals_count_only_where_the_workload_ran_alone() {
        let profiles = build(&observed());
        let a = profiles.iter().find(|p| p.workload == "a").unwrap();
        let b = profiles.iter().find(|p| p.workload == "b").unwrap();
        assert_eq!(a.get(ProfileSignal::SmActive), Some(0.8));
        // b ran alone for 2 steps only, fewer than MIN_STEPS: no GPU-wide signal is its
        assert_eq!(b.get(ProfileSignal::SmActive), None);
        let m = a.signals[&ProfileSignal::SmActive];
        assert_eq!((m.samples, m.window.start, m.window.end), (4, 100.0, 103.0));
        assert_eq!(a.get(ProfileSignal::MemoryPeakBytes), Some(6e9));
        assert_eq!(a.gpu_name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(b.coverage, Coverage::NvmlOnly);
    }

    #[test]
    fn kernel_counters_count_on_quiet_steps_over_the_workloads_own_seconds() {
        let a = build(&observed())
            .into_iter()
            .find(|p| p.workload == "a")
            .unwrap();
        assert_eq!(a.coverage, Coverage::Kernels);
        // increments at steps 1-3 (300) and 9 (100) count; 4-5 (shared) and 7 (b busy) do not;
        // 4 seconds alone
        assert!((a.get(ProfileSignal::LaunchRate).unwrap() - 100.0).abs() < 1e-9);
        assert!((a.get(ProfileSignal::MeanKernelSeconds).unwrap() - 0.005).abs() < 1e-12);
        assert!((a.get(ProfileSignal::ResidualKernelSeconds).unwrap() - 0.005).abs() < 1e-12);
        assert_eq!(a.kernels[0].name, "gemm");
    }

    #[test]
    fn launch_shapes_give_the_sm_fill_and_names_the_time_by_class() {
        let mut o = observed();
        // a second kernel of a, an elementwise one, a quarter of gemm's time
        let launches = [
            0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 500.0, 600.0, 600.0, 700.0,
        ];
        let seconds: Vec<f64> = launches.iter().map(|l| l * 0.00125).collect();
        let ew = labels(&[("workload", "a"), ("kernel", "native::elementwise_kernel")]);
        o.kernel_launches.insert(ew.clone(), series(&launches));
        o.kernel_seconds.insert(ew, series(&seconds));
        // gemm: one 200 KB block per SM, 66 blocks = half the H100's SMs; the
        // elementwise kernel: a huge grid that fills all of them
        let shape = |grid_blocks, block_threads, shared_bytes_per_block| KernelShape {
            grid_blocks,
            block_threads,
            registers_per_thread: 128,
            shared_bytes_per_block,
        };
        o.kernel_shapes
            .insert(("a".into(), "gemm".into()), shape(66, 256, 200 * 1024));
        o.kernel_shapes.insert(
            ("a".into(), "native::elementwise_kernel".into()),
            shape(100_000, 128, 0),
        );
        let a = build(&o).into_iter().find(|p| p.workload == "a").unwrap();
        assert_eq!(a.kernels[0].shape.unwrap().grid_blocks, 66);
        // time-weighted: gemm 4/5 of the kernel time at 0.5, elementwise 1/5 at 1.0
        let fill = a.get(ProfileSignal::SmFill).unwrap();
        assert!((fill - (0.8 * 0.5 + 0.2 * 1.0)).abs() < 1e-9, "{fill}");
        let share = |c: &str| a.kernel_time_by_class.get(c).copied().unwrap_or(0.0);
        assert!((share("compute_bound") - 0.8).abs() < 1e-9);
        assert!((share("memory_bound") - 0.2).abs() < 1e-9);
        // without shapes there is no SM fill
        let plain = build(&observed())
            .into_iter()
            .find(|p| p.workload == "a")
            .unwrap();
        assert_eq!(plain.get(ProfileSignal::SmFill), None);
    }

    #[test]
    fn a_gpu_load_is_its_recent_activity_whoever_runs_there() {
        let mut o = observed();
        let used = [1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 2e9, 2e9, 4e9, 4e9];
        o.gpu_memory_used
            .insert(labels(&[("uuid", "G")]), series(&used));
        // the last 3 seconds: steps 6-9 (SM 0.3, 0.3, 0, 0; memory 2, 2, 4, 4 GB)
        let loads = gpu_loads(&o, 3.0);
        assert_eq!(loads.len(), 1);
        let g = &loads[0];
        assert_eq!((g.workload.as_str(), g.coverage), ("G", Coverage::NvmlOnly));
        assert!((g.get(ProfileSignal::SmActive).unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(g.get(ProfileSignal::MemoryBytes), Some(3e9));
        assert_eq!(g.get(ProfileSignal::MemoryPeakBytes), Some(4e9));
    }

    #[test]
    fn a_counter_reset_counts_the_new_value() {
        assert_eq!(
            increments(&[(0.0, 5.0), (1.0, 7.0), (2.0, 3.0)]),
            vec![(1000, 2.0), (2000, 3.0)]
        );
    }
}
