//! MIG instances: memory and GPM per GPU instance, when MIG mode is on.
//!
//! Metrics (labels `gpu`, `uuid`, `gpu_instance`, `mig_profile`, and `mig_uuid`, the
//! instance's `MIG-…` UUID, which is the `uuid` that `poolprof_gpu_pod_info` gives a
//! container holding a MIG device; join with
//! `label_replace(poolprof_gpu_pod_info, "mig_uuid", "$1", "uuid", "(MIG-.*)")`):
//! - `poolprof_mig_memory_total_bytes`, `poolprof_mig_memory_used_bytes`,
//!   `poolprof_mig_memory_free_bytes`, `poolprof_mig_memory_reserved_bytes`
//! - `poolprof_mig_sm_active_ratio`, `poolprof_mig_sm_occupancy_ratio`,
//!   `poolprof_mig_graphics_engine_active_ratio`, `poolprof_mig_tensor_any_active_ratio`,
//!   `poolprof_mig_tensor_active_ratio{kind}`,
//!   `poolprof_mig_dram_active_ratio`, `poolprof_mig_pipe_active_ratio{pipe}`,
//!   `poolprof_mig_pcie_bytes_per_second{direction}`,
//!   `poolprof_mig_nvlink_bytes_per_second{direction}`
//!
//! They are named `poolprof_mig_…` rather than `poolprof_gpu_…` with more labels so that
//! summing a `poolprof_gpu_…` metric by `uuid` never counts a GPU twice.

use super::gpm::write_gpm;
use super::memory::write_memory;
use super::scope::Scope;
use super::{CollectError, Collector, Gpu, Readings};
use crate::registry::MetricSet;

const NAME: &str = "mig";

/// Reads `Device::mig_instances`.
#[derive(Debug, Default)]
pub struct MigCollector {
    readings: Readings,
}

impl Collector for MigCollector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn collect(&mut self, gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        for gpu in gpus {
            let Some(instances) =
                self.readings
                    .take(gpu, "mig_instances", gpu.device.mig_instances())
            else {
                continue;
            };
            for instance in instances {
                let id = instance.gpu_instance_id.to_string();
                let mut labels =
                    gpu.labels_with(&[("gpu_instance", &id), ("mig_profile", &instance.profile)]);
                if let Some(uuid) = &instance.uuid {
                    labels.push(("mig_uuid", uuid));
                }
                if let Some(memory) = &instance.memory {
                    write_memory(out, Scope::MigInstance, &labels, memory);
                }
                if let Some(gpm) = &instance.gpm {
                    write_gpm(out, Scope::MigInstance, &labels, gpm);
                }
            }
        }
        self.readings.finish(NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{GpmMetrics, Memory, MigInstance};
    use crate::collector::test_device::{count, run, value, TestDevice};

    #[test]
    fn publishes_memory_and_gpm_per_instance() {
        let device = TestDevice::healthy(0);
        let memory = Memory {
            total_bytes: 10 << 30,
            used_bytes: 4 << 30,
            free_bytes: 6 << 30,
            reserved_bytes: None,
        };
        let gpm = GpmMetrics {
            sm_active: Some(0.5),
            dram_active: Some(0.25),
            ..GpmMetrics::default()
        };
        device.set(|f| {
            f.mig = Ok(vec![
                MigInstance {
                    gpu_instance_id: 1,
                    profile: "1g.10gb".into(),
                    uuid: Some("MIG-aaaa".into()),
                    memory: Some(memory),
                    gpm: Some(gpm),
                },
                MigInstance {
                    gpu_instance_id: 2,
                    profile: "3g.40gb".into(),
                    uuid: None,
                    memory: None,
                    gpm: None,
                },
            ])
        });
        let (set, result) = run(&mut MigCollector::default(), &[device.gpu()]);
        result.unwrap();
        let first = [
            ("uuid", "GPU-test-0"),
            ("gpu_instance", "1"),
            ("mig_profile", "1g.10gb"),
            ("mig_uuid", "MIG-aaaa"),
        ];
        assert_eq!(
            value(&set, "poolprof_mig_memory_used_bytes", &first),
            Some((4u64 << 30) as f64)
        );
        assert_eq!(
            value(&set, "poolprof_mig_sm_active_ratio", &first),
            Some(0.5)
        );
        assert_eq!(
            value(&set, "poolprof_mig_dram_active_ratio", &first),
            Some(0.25)
        );
        assert_eq!(count(&set, "poolprof_mig_memory_used_bytes"), 1);
        assert_eq!(count(&set, "poolprof_mig_tensor_active_ratio"), 0);
        assert!(set.get("poolprof_gpu_sm_active_ratio").is_none());
        let help = set.get("poolprof_mig_memory_used_bytes").unwrap().help();
        assert!(help.contains("MIG instance"), "{help}");
    }

    #[test]
    fn mig_off_writes_nothing() {
        let device = TestDevice::healthy(0);
        let (set, result) = run(&mut MigCollector::default(), &[device.gpu()]);
        result.unwrap();
        assert_eq!(set.sample_count(), 0);
    }
}
