//! Kernel counters from libraries run with `POOLPROF_KERNEL_COUNTERS=1`: one profiled
//! launch per kernel, published as gauges of that launch.
//!
//! Series are keyed like the kernel counters (`uuid`, `workload`, `kernel` with the
//! same short name), so they join with `poolprof_kernel_duration_seconds_total`. The
//! latest profiled launch of a kernel wins (another process of the workload may
//! profile it again). Bounded: at most [`MAX_PER_GROUP`] kernels per (`uuid`,
//! `workload`) and [`MAX_TOTAL`] in all; the rest are not kept. They go when the
//! workload's other series expire.

use super::{cached_short_name, ConnId, KernelStore, UnknownDevices, Workload};
use crate::registry::MetricSet;
use poolprof_inject::wire::{Counters, Flops};
use std::collections::{BTreeMap, HashMap};

/// Profiled kernels kept per (`uuid`, `workload`): the library profiles 64 per
/// process by default (1024 at most).
pub const MAX_PER_GROUP: usize = 256;
/// Profiled kernels kept in total.
pub const MAX_TOTAL: usize = 20_000;

#[derive(Debug, Clone, Copy)]
struct Profiled {
    flops: Flops,
    dram_bytes: Option<(u64, u64)>,
    duration_ns: Option<u64>,
}

/// Profiled launches by (`uuid`, `workload`) and kernel.
#[derive(Debug, Default)]
pub(super) struct CounterTable {
    groups: BTreeMap<(String, String), BTreeMap<String, Profiled>>,
    total: usize,
}

impl CounterTable {
    /// Drops the groups of workloads that are gone.
    pub(super) fn retain_workloads(&mut self, workloads: &HashMap<String, Workload>) {
        let mut removed = 0;
        self.groups.retain(|(_, workload), kernels| {
            let keep = workloads.contains_key(workload);
            if !keep {
                removed += kernels.len();
            }
            keep
        });
        self.total -= removed;
    }

    /// Writes `poolprof_kernel_flops`, `poolprof_kernel_dram_bytes` and
    /// `poolprof_kernel_profiled_duration_seconds`.
    pub(super) fn write(&self, out: &mut MetricSet) {
        for ((uuid, workload), kernels) in &self.groups {
            for (kernel, p) in kernels {
                let labels = [
                    ("uuid", uuid.as_str()),
                    ("workload", workload),
                    ("kernel", kernel),
                ];
                write_profiled(out, &labels, p);
            }
        }
    }
}

fn write_profiled(out: &mut MetricSet, labels: &[(&str, &str); 3], p: &Profiled) {
    let f = &p.flops;
    for (precision, value) in [
        ("fp64", f.fp64),
        ("fp32", f.fp32),
        ("fp16", f.fp16),
        ("tensor", f.tensor),
    ] {
        let Some(value) = value else { continue };
        let mut l = labels.to_vec();
        l.push(("precision", precision));
        out.gauge(
            "poolprof_kernel_flops",
            "Floating-point operations of the kernel's profiled launch, by precision (tensor: tensor-core operations), from CUPTI counters.",
            &l,
            value as f64,
        );
    }
    if let Some((read, write)) = p.dram_bytes {
        for (direction, value) in [("read", read), ("write", write)] {
            let mut l = labels.to_vec();
            l.push(("direction", direction));
            out.gauge(
                "poolprof_kernel_dram_bytes",
                "DRAM bytes the kernel's profiled launch read or wrote, from CUPTI counters.",
                &l,
                value as f64,
            );
        }
    }
    if let Some(ns) = p.duration_ns {
        out.gauge(
            "poolprof_kernel_profiled_duration_seconds",
            "GPU time of the kernel's profiled launch (one replay pass), from CUPTI counters.",
            labels,
            ns as f64 * 1e-9,
        );
    }
}

impl KernelStore {
    /// Keeps a process's profiled launches under its workload (bounded; a kernel
    /// profiled again is replaced).
    pub fn apply_counters(&self, conn: ConnId, counters: &Counters) {
        let max_name_len = self.limits.max_name_len;
        let mut guard = self.lock();
        let inner = &mut *guard;
        let Some(process) = inner.processes.get(&conn) else {
            return;
        };
        let workload = process.workload.clone();
        let mut unknown = UnknownDevices::default();
        for k in &counters.kernels {
            let key = (k.device.label(), workload.clone());
            // Only GPUs this exporter sees, as for the sampled counts.
            if !super::admits(inner, &key, &k.device) {
                unknown.add(k.device);
                continue;
            }
            let name = cached_short_name(&mut inner.names, &k.name, max_name_len);
            let table = &mut inner.profiled;
            let group = table.groups.entry(key).or_default();
            let profiled = Profiled {
                flops: k.flops,
                dram_bytes: k.dram_bytes,
                duration_ns: k.duration_ns,
            };
            if let Some(slot) = group.get_mut(&name) {
                *slot = profiled;
            } else if group.len() < MAX_PER_GROUP && table.total < MAX_TOTAL {
                group.insert(name, profiled);
                table.total += 1;
            }
        }
        drop(guard);
        self.discard_unknown(unknown, "the kernel counters", &workload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::value;
    use crate::kernels::KernelLimits;
    use poolprof_inject::wire::{DeviceId, KernelCounters};

    fn profiled(name: &str, tensor: Option<u64>) -> KernelCounters {
        KernelCounters {
            device: DeviceId {
                ordinal: 0,
                uuid: Some([0x11; 16]),
            },
            name: name.into(),
            flops: Flops {
                fp32: Some(1000),
                tensor,
                ..Flops::default()
            },
            dram_bytes: Some((3 << 20, 1 << 20)),
            duration_ns: Some(250_000),
        }
    }

    fn metrics(store: &KernelStore) -> MetricSet {
        let mut set = MetricSet::new();
        store.write_metrics(&mut set);
        set
    }

    const UUID: &str = "GPU-11111111-1111-1111-1111-111111111111";

    #[test]
    fn a_profiled_launch_is_published_per_precision_under_the_short_kernel_name() {
        let store = KernelStore::new(KernelLimits::default());
        let conn = store.connect("train", 0).unwrap();
        let mangled =
            "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_";
        let counters = Counters {
            kernels: vec![
                profiled(mangled, None),
                profiled("gemm_bf16", Some(1 << 40)),
            ],
        };
        store.apply_counters(conn, &counters);
        let set = metrics(&store);
        let kernel = "native::vectorized_elementwise_kernel";
        let at = |name: &str, extra: &[(&str, &str)]| {
            let mut labels = vec![("uuid", UUID), ("workload", "train"), ("kernel", kernel)];
            labels.extend_from_slice(extra);
            value(&set, name, &labels)
        };
        assert_eq!(
            at("poolprof_kernel_flops", &[("precision", "fp32")]),
            Some(1000.0)
        );
        assert_eq!(
            at("poolprof_kernel_flops", &[("precision", "tensor")]),
            None,
            "not measured is not published as 0"
        );
        let read = at("poolprof_kernel_dram_bytes", &[("direction", "read")]);
        assert_eq!(read, Some(3.0 * 1048576.0));
        let seconds = at("poolprof_kernel_profiled_duration_seconds", &[]);
        assert_eq!(seconds, Some(250e-6));
        let labels = [("kernel", "gemm_bf16"), ("precision", "tensor")];
        assert_eq!(
            value(&set, "poolprof_kernel_flops", &labels),
            Some(1099511627776.0)
        );
    }

    #[test]
    fn profiled_launches_on_a_gpu_this_exporter_does_not_see_are_dropped() {
        let store = KernelStore::new(KernelLimits::default());
        store.set_gpus(["GPU-22222222-2222-2222-2222-222222222222".to_string()]);
        let conn = store.connect("train", 0).unwrap();
        let counters = Counters {
            kernels: vec![profiled("gemm_bf16", Some(1 << 40))],
        };
        store.apply_counters(conn, &counters);
        let set = metrics(&store);
        assert!(
            set.get("poolprof_kernel_flops")
                .is_none_or(|f| f.get_metric().is_empty()),
            "a made-up GPU UUID creates no series"
        );
        assert_eq!(
            value(
                &set,
                "poolprof_inject_discarded_reports_total",
                &[("reason", "unknown_gpu")]
            ),
            Some(1.0),
            "and is counted as discarded"
        );
    }

    #[test]
    fn an_evicted_workload_gives_back_its_profiled_slots_at_once() {
        let limits = KernelLimits {
            max_workloads: 1,
            ..KernelLimits::default()
        };
        let store = KernelStore::new(limits);
        let old = store.connect("old", 0).unwrap();
        let counters = Counters {
            kernels: vec![profiled("k0", None), profiled("k1", None)],
        };
        store.apply_counters(old, &counters);
        assert_eq!(store.lock().profiled.total, 2);
        store.disconnect(old);
        let new = store.connect("new", 0).unwrap();
        assert_eq!(store.lock().profiled.total, 0, "before any expiry");
        store.apply_counters(new, &counters);
        assert_eq!(store.lock().profiled.total, 2);
    }

    #[test]
    fn profiled_kernels_are_bounded_replaced_and_expire_with_the_workload() {
        let limits = KernelLimits {
            expiry: std::time::Duration::ZERO,
            ..KernelLimits::default()
        };
        let store = KernelStore::new(limits);
        let conn = store.connect("w", 0).unwrap();
        let many: Vec<_> = (0..MAX_PER_GROUP + 10)
            .map(|i| profiled(&format!("k{i}"), None))
            .collect();
        store.apply_counters(conn, &Counters { kernels: many });
        let mut again = profiled("k0", Some(5));
        again.flops.fp32 = Some(7);
        store.apply_counters(
            conn,
            &Counters {
                kernels: vec![again],
            },
        );
        let set = metrics(&store);
        let family = set.get("poolprof_kernel_flops").unwrap();
        let fp32 = family
            .get_metric()
            .iter()
            .filter(|m| m.get_label().iter().any(|l| l.value() == "fp32"))
            .count();
        assert_eq!(fp32, MAX_PER_GROUP);
        let k0 = [("kernel", "k0"), ("precision", "fp32")];
        assert_eq!(value(&set, "poolprof_kernel_flops", &k0), Some(7.0));
        store.disconnect(conn);
        let set = metrics(&store);
        assert!(
            set.get("poolprof_kernel_flops").is_none(),
            "gone with the workload"
        );
    }

    #[test]
    fn counters_of_an_unknown_connection_are_ignored() {
        let store = KernelStore::new(KernelLimits::default());
        store.apply_counters(
            42,
            &Counters {
                kernels: vec![profiled("k", None)],
            },
        );
        assert!(metrics(&store).get("poolprof_kernel_flops").is_none());
    }
}
