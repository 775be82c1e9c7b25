//! Compute processes on each GPU, labelled with their workload (see `workload.rs`).
//!
//! Metrics (labels `gpu`, `uuid`, `pid`, `workload`, plus `gpu_instance` for a process
//! in a MIG instance; with `--no-collector.process.pid-label` there is no `pid` and the
//! processes of one workload are summed, so a restarting job does not leave a trail of
//! series behind):
//! - `poolprof_process_gpu_memory_bytes`
//! - `poolprof_process_sm_utilization_ratio`
//! - `poolprof_process_memory_utilization_ratio` (memory controller)

use super::{CollectError, Collector, Gpu, Readings};
use crate::backend::ProcessUsage;
use crate::registry::MetricSet;
use crate::workload::WorkloadResolver;
use std::collections::BTreeMap;

const NAME: &str = "process";

/// Reads `Device::processes` and resolves each pid's workload.
#[derive(Debug)]
pub struct ProcessCollector {
    readings: Readings,
    workloads: WorkloadResolver,
    pid_label: bool,
}

impl Default for ProcessCollector {
    fn default() -> Self {
        Self::with_resolver(WorkloadResolver::default())
    }
}

impl ProcessCollector {
    /// A collector resolving workloads with `workloads` (tests use a fake procfs).
    pub fn with_resolver(workloads: WorkloadResolver) -> Self {
        Self {
            readings: Readings::default(),
            workloads,
            pid_label: true,
        }
    }

    /// With `false`, series carry no `pid` and a workload's processes are summed.
    pub fn pid_label(mut self, on: bool) -> Self {
        self.pid_label = on;
        self
    }

    fn workload(&mut self, p: &ProcessUsage) -> String {
        // The backend's name wins: the simulator knows its synthetic workloads.
        match &p.workload {
            Some(name) => name.clone(),
            None => self.workloads.resolve(p.pid),
        }
    }

    fn write(&self, gpu: &Gpu, p: &ProcessUsage, workload: &str, out: &mut MetricSet) {
        let pid = p.pid.to_string();
        let instance = p.gpu_instance_id.map(|id| id.to_string());
        let mut labels = gpu.labels_with(&[("workload", workload)]);
        if self.pid_label {
            labels.insert(2, ("pid", &pid));
        }
        if let Some(instance) = &instance {
            labels.push(("gpu_instance", instance));
        }
        if let Some(bytes) = p.used_memory_bytes {
            out.gauge(
                "poolprof_process_gpu_memory_bytes",
                "Device memory the process holds, in bytes.",
                &labels,
                bytes as f64,
            );
        }
        if let Some(r) = p.sm_ratio {
            out.gauge(
                "poolprof_process_sm_utilization_ratio",
                "Fraction of the time since the previous read (at most --collector.process.sample-interval, 5 s by default; the driver's last sample period for a lone process) the SMs ran this process's kernels.",
                &labels,
                r,
            );
        }
        if let Some(r) = p.memory_ratio {
            out.gauge(
                "poolprof_process_memory_utilization_ratio",
                "Fraction of the time since the previous read (at most --collector.process.sample-interval, 5 s by default; the driver's last sample period for a lone process) the memory controller served this process.",
                &labels,
                r,
            );
        }
    }
}

impl Collector for ProcessCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(processes) = self.readings.take(gpu, "processes", gpu.device.processes())
            else {
                continue;
            };
            let named: Vec<(String, ProcessUsage)> = processes
                .into_iter()
                .map(|p| (self.workload(&p), p))
                .collect();
            let named = if self.pid_label {
                named
            } else {
                sum_by_workload(named)
            };
            for (workload, p) in &named {
                self.write(gpu, p, workload, out);
            }
        }
        self.readings.finish(NAME)
    }
}

/// The sum of two readings, either one where the other is absent.
fn add<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// One usage per workload and MIG instance: memory and ratios summed (a value stays
/// absent only when no process of the workload has it).
fn sum_by_workload(named: Vec<(String, ProcessUsage)>) -> Vec<(String, ProcessUsage)> {
    let mut sums: BTreeMap<(String, Option<u32>), ProcessUsage> = BTreeMap::new();
    for (workload, p) in named {
        match sums.entry((workload, p.gpu_instance_id)) {
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(p);
            }
            std::collections::btree_map::Entry::Occupied(mut slot) => {
                let sum = slot.get_mut();
                sum.used_memory_bytes = add(sum.used_memory_bytes, p.used_memory_bytes);
                sum.sm_ratio = add(sum.sm_ratio, p.sm_ratio);
                sum.memory_ratio = add(sum.memory_ratio, p.memory_ratio);
            }
        }
    }
    sums.into_iter()
        .map(|((workload, _), usage)| (workload, usage))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ProcessUsage;
    use crate::collector::test_device::{count, run, value, TestDevice};
    use std::time::Duration;

    fn usage(pid: u32, workload: Option<&str>) -> ProcessUsage {
        ProcessUsage {
            pid,
            used_memory_bytes: Some(1 << 30),
            sm_ratio: None,
            memory_ratio: Some(0.1),
            gpu_instance_id: Some(3),
            workload: workload.map(str::to_string),
        }
    }

    #[test]
    fn publishes_usage_with_backend_workload() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut ProcessCollector::default(), &[device.gpu()]);
        result.unwrap();
        let labels = [
            ("uuid", "GPU-test-0"),
            ("pid", "4242"),
            ("workload", "train"),
        ];
        assert_eq!(
            value(&set, "poolprof_process_gpu_memory_bytes", &labels),
            Some((10u64 << 30) as f64)
        );
        assert_eq!(
            value(&set, "poolprof_process_sm_utilization_ratio", &labels),
            Some(0.6)
        );
        assert_eq!(
            value(&set, "poolprof_process_memory_utilization_ratio", &labels),
            Some(0.3)
        );
    }

    #[test]
    fn resolves_workload_from_proc_and_skips_unsampled_ratios() {
        let proc = tempfile::tempdir().unwrap();
        let dir = proc.path().join("77");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("environ"), b"POOLPROF_WORKLOAD=bert\0").unwrap();
        let device = TestDevice::healthy(0);
        device.set(|f| f.processes = Ok(vec![usage(77, None)]));
        let resolver = WorkloadResolver::new(proc.path(), Duration::from_secs(60));
        let (set, result) = run(
            &mut ProcessCollector::with_resolver(resolver),
            &[device.gpu()],
        );
        result.unwrap();
        let labels = [("pid", "77"), ("workload", "bert"), ("gpu_instance", "3")];
        assert_eq!(
            value(&set, "poolprof_process_gpu_memory_bytes", &labels),
            Some((1u64 << 30) as f64)
        );
        assert_eq!(count(&set, "poolprof_process_sm_utilization_ratio"), 0);
    }

    #[test]
    fn without_pid_a_workloads_processes_are_summed() {
        let device = TestDevice::healthy(0);
        device.set(|f| {
            f.processes = Ok(vec![
                usage(1, Some("train")),
                usage(2, Some("train")),
                usage(3, Some("serve")),
            ])
        });
        let mut collector = ProcessCollector::default().pid_label(false);
        let (set, result) = run(&mut collector, &[device.gpu()]);
        result.unwrap();
        assert_eq!(count(&set, "poolprof_process_gpu_memory_bytes"), 2);
        let train = [("workload", "train"), ("gpu_instance", "3")];
        assert_eq!(
            value(&set, "poolprof_process_gpu_memory_bytes", &train),
            Some((2u64 << 30) as f64)
        );
        assert_eq!(
            value(&set, "poolprof_process_memory_utilization_ratio", &train),
            Some(0.2)
        );
        let family = set.get("poolprof_process_gpu_memory_bytes").unwrap();
        assert!(family
            .get_metric()
            .iter()
            .all(|m| m.get_label().iter().all(|l| l.name() != "pid")));
    }
}
