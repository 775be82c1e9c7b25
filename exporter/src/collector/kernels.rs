//! Kernel launches, kernel time, memory copies and the injection library's own
//! health, as reported by injected processes (see `kernels/`).
//!
//! Metrics: `poolprof_kernel_launches_total` and
//! `poolprof_kernel_duration_seconds_total` (`uuid`, `workload`, `kernel`: the top-K
//! names per workload and GPU, the rest as `kernel="other"`),
//! the latest launch's shape per named kernel (`poolprof_kernel_grid_blocks`,
//! `poolprof_kernel_block_threads`, `poolprof_kernel_registers_per_thread`,
//! `poolprof_kernel_shared_memory_per_block_bytes`),
//! `poolprof_memcpy_bytes_total{uuid,workload,direction}`,
//! `poolprof_memset_bytes_total{uuid,workload}`,
//! `poolprof_inject_dropped_records_total{workload}`,
//! `poolprof_inject_kernel_sampling_ratio{workload}` (below 1 when the duty cycle
//! samples; the counters are already scaled up),
//! `poolprof_inject_connected_processes` and
//! `poolprof_inject_rejected_connections_total{reason}`; the socket's bounds:
//! `poolprof_inject_pending_connections`, `poolprof_inject_workloads`,
//! `poolprof_inject_evicted_workloads_total`,
//! `poolprof_inject_discarded_reports_total{reason}`.

use super::{CollectError, Collector, Gpu};
use crate::kernels::KernelStore;
use crate::registry::MetricSet;
use std::sync::Arc;

/// Publishes what the kernel listener's store holds.
pub struct KernelCollector {
    store: Arc<KernelStore>,
}

impl KernelCollector {
    /// A collector reading `store` (from `KernelListener::store`).
    pub fn new(store: Arc<KernelStore>) -> Self {
        Self { store }
    }
}

impl Collector for KernelCollector {
    fn name(&self) -> &'static str {
        "kernels"
    }

    fn collect(&mut self, _gpus: &[Gpu], out: &mut MetricSet) -> Result<(), CollectError> {
        self.store.write_metrics(out);
        Ok(())
    }
}

/// Every metric name the kernel collector can publish (tests and docs check them).
pub const KERNEL_METRICS: &[&str] = &[
    "poolprof_kernel_launches_total",
    "poolprof_kernel_duration_seconds_total",
    "poolprof_kernel_grid_blocks",
    "poolprof_kernel_block_threads",
    "poolprof_kernel_registers_per_thread",
    "poolprof_kernel_shared_memory_per_block_bytes",
    "poolprof_memcpy_bytes_total",
    "poolprof_memset_bytes_total",
    "poolprof_inject_dropped_records_total",
    "poolprof_inject_kernel_sampling_ratio",
    "poolprof_inject_connected_processes",
    "poolprof_inject_rejected_connections_total",
    "poolprof_inject_pending_connections",
    "poolprof_inject_workloads",
    "poolprof_inject_evicted_workloads_total",
    "poolprof_inject_discarded_reports_total",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::KernelLimits;
    use poolprof_inject::wire::{
        Delta, DeviceDelta, DeviceId, Geometry, KernelDelta, KernelStats, MemcpyBytes,
    };

    #[test]
    fn publishes_every_documented_metric_and_passes_promtool_naming() {
        let store = Arc::new(KernelStore::new(KernelLimits {
            top_k: 1,
            ..Default::default()
        }));
        let conn = store.connect("train", 0).unwrap();
        let kernel = |name: &str| KernelDelta {
            name: name.into(),
            stats: KernelStats::one(1000),
            geometry: Geometry {
                grid: [4, 1, 1],
                block: [128, 1, 1],
                ..Geometry::default()
            },
        };
        store.apply(
            conn,
            &Delta {
                seq: 0,
                dropped_records: 1,
                kernel_duty_ppm: 500_000,
                devices: vec![DeviceDelta {
                    device: DeviceId {
                        ordinal: 0,
                        uuid: None,
                    },
                    kernels: vec![kernel("a"), kernel("b")],
                    folded: KernelStats::default(),
                    memcpy: MemcpyBytes::default(),
                    memset_bytes: 8,
                }],
            },
        );
        store.reject("bad_magic");
        let mut out = MetricSet::new();
        KernelCollector::new(store).collect(&[], &mut out).unwrap();
        for name in KERNEL_METRICS {
            assert!(out.get(name).is_some(), "{name} missing");
        }
        let names: Vec<&str> = out.families().map(|(_, f)| f.name()).collect();
        assert_eq!(names.len(), KERNEL_METRICS.len(), "{names:?}");
    }
}
