//! Compute processes on each GPU, labelled with their workload (see `workload.rs`).
//!
//! Metrics (labels `gpu`, `uuid`, `pid`, `workload`, plus `gpu_instance` for a process
//! in a MIG instance):
//! - `poolprof_process_gpu_memory_bytes`
//! - `poolprof_process_sm_utilization_ratio`
//! - `poolprof_process_memory_utilization_ratio` (memory controller)

use super::{CollectError, Collector, Gpu, Readings};
use crate::backend::ProcessUsage;
use crate::registry::MetricSet;
use crate::workload::WorkloadResolver;

const NAME: &str = "process";

/// Reads `Device::processes` and resolves each pid's workload.
#[derive(Debug, Default)]
pub struct ProcessCollector {
    readings: Readings,
    workloads: WorkloadResolver,
}

impl ProcessCollector {
    /// A collector resolving workloads with `workloads` (tests use a fake procfs).
    pub fn with_resolver(workloads: WorkloadResolver) -> Self {
        Self {
            readings: Readings::default(),
            workloads,
        }
    }

    fn write(&mut self, gpu: &Gpu, p: &ProcessUsage, out: &mut MetricSet) {
        // The backend's name wins: the simulator knows its synthetic workloads.
        let workload = match &p.workload {
            Some(name) => name.clone(),
            None => self.workloads.resolve(p.pid),
        };
        let pid = p.pid.to_string();
        let instance = p.gpu_instance_id.map(|id| id.to_string());
        let mut labels = gpu.labels_with(&[("pid", &pid), ("workload", &workload)]);
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
                "Fraction of the last sample period the SMs ran this process's kernels.",
                &labels,
                r,
            );
        }
        if let Some(r) = p.memory_ratio {
            out.gauge(
                "poolprof_process_memory_utilization_ratio",
                "Fraction of the last sample period the memory controller served this process.",
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
            for p in &processes {
                self.write(gpu, p, out);
            }
        }
        self.readings.finish(NAME)
    }
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
}
