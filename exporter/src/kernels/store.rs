//! Kernel counters reported by injected processes, bounded.
//!
//! Series are keyed by (`uuid`, `workload`, `kernel`), the labels the metrics carry,
//! and hold cumulative counters. Processes of one workload add into the same series,
//! so a counter only resets when the whole workload is gone. Bounds:
//!
//! - each (`uuid`, `workload`) keeps at most `top_k` kernel names; a report's kernels
//!   are admitted heaviest first, and launches of kernels that find no room are added
//!   to `kernel="other"`. A named kernel idle for `expiry` gives its slot back.
//! - at most `max_series` named kernels in total;
//! - a workload's series are dropped `expiry` after its last process disconnected.

mod counters;

use super::demangle::{short_name, OTHER};
use crate::registry::MetricSet;
use poolprof_inject::wire::{Delta, Geometry, MemcpyBytes, FULL_DUTY_PPM};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Bounds of the kernel listener and store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelLimits {
    /// Processes connected at once; further connections are refused and counted.
    pub max_processes: usize,
    /// Kernel names kept per (`uuid`, `workload`); the rest are `kernel="other"`.
    pub top_k: usize,
    /// Named kernel series kept in total.
    pub max_series: usize,
    /// Longest `kernel` label value, in bytes.
    pub max_name_len: usize,
    /// How long a workload's series stay after its last process disconnected (and
    /// how long a named kernel may stay idle before giving its slot back).
    pub expiry: Duration,
    /// Time a new connection has to send its hello.
    pub hello_timeout: Duration,
    /// A connection silent for this long is closed (the library reports every
    /// interval, even when idle).
    pub idle_timeout: Duration,
    /// Permissions of the socket file (0o666: any local user may report; 0o660
    /// limits it to the socket's group).
    pub socket_mode: u32,
}

impl Default for KernelLimits {
    fn default() -> Self {
        Self {
            max_processes: 256,
            top_k: 50,
            max_series: 20_000,
            max_name_len: 80,
            expiry: Duration::from_secs(300),
            hello_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            socket_mode: 0o666,
        }
    }
}

/// Identifies one accepted connection.
pub type ConnId = u64;

const NAME_CACHE_LIMIT: usize = 16_384;

#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    launches: f64,
    seconds: f64,
}

impl Totals {
    fn add(&mut self, launches: u64, total_ns: u64, scale: f64) {
        self.launches += launches as f64 * scale;
        self.seconds += total_ns as f64 * 1e-9 * scale;
    }
}

#[derive(Debug)]
struct Named {
    totals: Totals,
    /// The latest launch's geometry; all zero until a launch reported one.
    geometry: Geometry,
    last_update: Instant,
}

impl Named {
    /// Keeps `g` unless it is empty (a report from a library that did not read it).
    fn set_geometry(&mut self, g: &Geometry) {
        if blocks(g) > 0 {
            self.geometry = *g;
        }
    }
}

/// Thread blocks in a grid.
fn blocks(g: &Geometry) -> u64 {
    g.grid.iter().map(|&d| u64::from(d)).product()
}

#[derive(Debug, Default)]
struct Group {
    kernels: HashMap<String, Named>,
    other: Totals,
    memcpy: [f64; 4],
    memset_bytes: f64,
}

#[derive(Debug)]
struct Workload {
    connected: usize,
    dropped_records: f64,
    sampling_ratio: f64,
    last_update: Instant,
}

#[derive(Debug)]
struct Process {
    workload: String,
}

#[derive(Debug, Default)]
struct Inner {
    processes: HashMap<ConnId, Process>,
    workloads: HashMap<String, Workload>,
    groups: BTreeMap<(String, String), Group>,
    named_series: usize,
    rejected: BTreeMap<&'static str, u64>,
    names: HashMap<String, String>,
    next_conn: ConnId,
    /// Profiled launches (`POOLPROF_KERNEL_COUNTERS`), see `counters`.
    profiled: counters::CounterTable,
}

/// What injected processes reported, shared by the listener and the collector.
#[derive(Debug)]
pub struct KernelStore {
    limits: KernelLimits,
    inner: Mutex<Inner>,
}

impl KernelStore {
    /// An empty store with these bounds.
    pub fn new(limits: KernelLimits) -> Self {
        Self {
            limits,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The bounds in force.
    pub fn limits(&self) -> &KernelLimits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a process that said hello; its reports go to `workload`.
    pub fn connect(&self, workload: &str) -> ConnId {
        let mut inner = self.lock();
        let id = inner.next_conn;
        inner.next_conn += 1;
        inner.processes.insert(
            id,
            Process {
                workload: workload.to_string(),
            },
        );
        let w = inner
            .workloads
            .entry(workload.to_string())
            .or_insert_with(|| Workload {
                connected: 0,
                dropped_records: 0.0,
                sampling_ratio: 1.0,
                last_update: Instant::now(),
            });
        w.connected += 1;
        w.last_update = Instant::now();
        id
    }

    /// Records that a process went away; its series expire later.
    pub fn disconnect(&self, conn: ConnId) {
        let mut inner = self.lock();
        if let Some(p) = inner.processes.remove(&conn) {
            if let Some(w) = inner.workloads.get_mut(&p.workload) {
                w.connected = w.connected.saturating_sub(1);
                w.last_update = Instant::now();
            }
        }
    }

    /// Counts a connection refused or closed for `reason`.
    pub fn reject(&self, reason: &'static str) {
        *self.lock().rejected.entry(reason).or_insert(0) += 1;
    }

    /// Processes connected now.
    pub fn connected(&self) -> usize {
        self.lock().processes.len()
    }

    /// Adds a process's report, scaled up when it was sampled: launches, kernel time
    /// and memory bytes alike, since the library toggles every record kind together.
    pub fn apply(&self, conn: ConnId, delta: &Delta) {
        let now = Instant::now();
        let limits = &self.limits;
        let mut guard = self.lock();
        let inner = &mut *guard;
        let Some(process) = inner.processes.get(&conn) else {
            return;
        };
        let workload = process.workload.clone();
        let duty = f64::from(delta.kernel_duty_ppm.clamp(1, FULL_DUTY_PPM));
        let scale = f64::from(FULL_DUTY_PPM) / duty;
        if let Some(w) = inner.workloads.get_mut(&workload) {
            w.dropped_records += delta.dropped_records as f64;
            w.sampling_ratio = duty / f64::from(FULL_DUTY_PPM);
            w.last_update = now;
        }
        for device in &delta.devices {
            let key = (device.device.label(), workload.clone());
            let group = inner.groups.entry(key).or_default();
            add_memory(group, &device.memcpy, device.memset_bytes, scale);
            group
                .other
                .add(device.folded.launches, device.folded.total_ns, scale);
            let mut kernels: Vec<_> = device.kernels.iter().collect();
            kernels.sort_by_key(|k| std::cmp::Reverse(k.stats.total_ns));
            for k in kernels {
                let name = cached_short_name(&mut inner.names, &k.name, limits.max_name_len);
                if let Some(named) = group.kernels.get_mut(&name) {
                    named.totals.add(k.stats.launches, k.stats.total_ns, scale);
                    named.set_geometry(&k.geometry);
                    named.last_update = now;
                } else if group.kernels.len() < limits.top_k
                    && inner.named_series < limits.max_series
                {
                    let mut named = Named {
                        totals: Totals::default(),
                        geometry: Geometry::default(),
                        last_update: now,
                    };
                    named.totals.add(k.stats.launches, k.stats.total_ns, scale);
                    named.set_geometry(&k.geometry);
                    group.kernels.insert(name, named);
                    inner.named_series += 1;
                } else {
                    group.other.add(k.stats.launches, k.stats.total_ns, scale);
                }
            }
        }
    }

    /// Drops what expired: workloads gone for `expiry`, named kernels idle for `expiry`.
    pub fn expire(&self, now: Instant) {
        let expiry = self.limits.expiry;
        let mut guard = self.lock();
        let inner = &mut *guard;
        let stale = |at: Instant| now.saturating_duration_since(at) >= expiry;
        let gone: Vec<String> = inner
            .workloads
            .iter()
            .filter(|(_, w)| w.connected == 0 && stale(w.last_update))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &gone {
            inner.workloads.remove(name);
        }
        let mut removed = 0;
        inner.groups.retain(|(_, workload), group| {
            if !inner.workloads.contains_key(workload) {
                removed += group.kernels.len();
                return false;
            }
            let before = group.kernels.len();
            group.kernels.retain(|_, k| !stale(k.last_update));
            removed += before - group.kernels.len();
            true
        });
        inner.named_series -= removed;
        inner.profiled.retain_workloads(&inner.workloads);
    }

    /// Writes every series (after expiring old ones).
    pub fn write_metrics(&self, out: &mut MetricSet) {
        self.expire(Instant::now());
        let inner = self.lock();
        inner.profiled.write(out);
        for ((uuid, workload), group) in &inner.groups {
            for (name, named) in &group.kernels {
                write_kernel(out, uuid, workload, name, &named.totals);
                write_geometry(out, uuid, workload, name, &named.geometry);
            }
            if group.other.launches > 0.0 {
                write_kernel(out, uuid, workload, OTHER, &group.other);
            }
            for (direction, bytes) in ["htod", "dtoh", "dtod", "other"].iter().zip(group.memcpy) {
                out.counter(
                    "poolprof_memcpy_bytes_total",
                    "Bytes copied by CUDA memory copies of the workload, by direction (scaled up when sampled).",
                    &[
                        ("uuid", uuid),
                        ("workload", workload),
                        ("direction", direction),
                    ],
                    bytes,
                );
            }
            out.counter(
                "poolprof_memset_bytes_total",
                "Bytes written by CUDA memsets of the workload (scaled up when sampled).",
                &[("uuid", uuid), ("workload", workload)],
                group.memset_bytes,
            );
        }
        for (workload, w) in &inner.workloads {
            out.counter(
                "poolprof_inject_dropped_records_total",
                "CUPTI activity records the injected library lost (buffers full).",
                &[("workload", workload)],
                w.dropped_records,
            );
            out.gauge(
                "poolprof_inject_kernel_sampling_ratio",
                "Share of the activity the latest report traced (of kernel launches, from grid ids; of time for memcpy and memset alone; 1 = all); counters are scaled up by its inverse.",
                &[("workload", workload)],
                w.sampling_ratio,
            );
        }
        out.gauge(
            "poolprof_inject_connected_processes",
            "Processes connected to the kernel listener.",
            &[],
            inner.processes.len() as f64,
        );
        for (reason, count) in &inner.rejected {
            out.counter(
                "poolprof_inject_rejected_connections_total",
                "Injection connections refused or closed for misbehaving, by reason.",
                &[("reason", reason)],
                *count as f64,
            );
        }
    }
}

fn add_memory(group: &mut Group, memcpy: &MemcpyBytes, memset: u64, scale: f64) {
    let add = [memcpy.htod, memcpy.dtoh, memcpy.dtod, memcpy.other];
    for (total, bytes) in group.memcpy.iter_mut().zip(add) {
        *total += bytes as f64 * scale;
    }
    group.memset_bytes += memset as f64 * scale;
}

fn cached_short_name(cache: &mut HashMap<String, String>, raw: &str, max_len: usize) -> String {
    if let Some(short) = cache.get(raw) {
        return short.clone();
    }
    if cache.len() >= NAME_CACHE_LIMIT {
        cache.clear();
    }
    let short = short_name(raw, max_len);
    cache.insert(raw.to_string(), short.clone());
    short
}

fn write_kernel(out: &mut MetricSet, uuid: &str, workload: &str, kernel: &str, t: &Totals) {
    let labels = [("uuid", uuid), ("workload", workload), ("kernel", kernel)];
    out.counter(
        "poolprof_kernel_launches_total",
        "CUDA kernel launches of the workload (scaled up when sampled).",
        &labels,
        t.launches,
    );
    out.counter(
        "poolprof_kernel_duration_seconds_total",
        "GPU time spent in the workload's kernels (scaled up when sampled).",
        &labels,
        t.seconds,
    );
}

/// The latest launch's shape: what a kernel-level scheduler needs to tell how many SMs
/// one launch can hold (with the GPU's per-SM limits). Nothing before a launch reported it.
fn write_geometry(out: &mut MetricSet, uuid: &str, workload: &str, kernel: &str, g: &Geometry) {
    let grid_blocks = blocks(g);
    if grid_blocks == 0 {
        return;
    }
    let labels = [("uuid", uuid), ("workload", workload), ("kernel", kernel)];
    let threads: u64 = g.block.iter().map(|&d| u64::from(d)).product();
    out.gauge(
        "poolprof_kernel_grid_blocks",
        "Thread blocks in the grid of the kernel's latest launch.",
        &labels,
        grid_blocks as f64,
    );
    out.gauge(
        "poolprof_kernel_block_threads",
        "Threads per block of the kernel's latest launch.",
        &labels,
        threads as f64,
    );
    out.gauge(
        "poolprof_kernel_registers_per_thread",
        "Registers per thread of the kernel's latest launch.",
        &labels,
        f64::from(g.registers),
    );
    out.gauge(
        "poolprof_kernel_shared_memory_per_block_bytes",
        "Shared memory per block (static plus dynamic) of the kernel's latest launch, bytes.",
        &labels,
        (u64::from(g.static_shared_bytes) + u64::from(g.dynamic_shared_bytes)) as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::value;
    use poolprof_inject::wire::{DeviceDelta, DeviceId, Geometry, KernelDelta, KernelStats};

    fn kernel(name: &str, launches: u64, total_ns: u64) -> KernelDelta {
        KernelDelta {
            name: name.to_string(),
            stats: KernelStats {
                launches,
                total_ns,
                min_ns: total_ns / launches,
                max_ns: total_ns / launches,
            },
            geometry: Geometry::default(),
        }
    }

    fn delta(ppm: u32, kernels: Vec<KernelDelta>) -> Delta {
        Delta {
            seq: 0,
            dropped_records: 2,
            kernel_duty_ppm: ppm,
            devices: vec![DeviceDelta {
                device: DeviceId {
                    ordinal: 0,
                    uuid: Some([0x11; 16]),
                },
                kernels,
                folded: KernelStats::default(),
                memcpy: MemcpyBytes {
                    htod: 100,
                    ..Default::default()
                },
                memset_bytes: 0,
            }],
        }
    }

    fn metrics(store: &KernelStore) -> MetricSet {
        let mut set = MetricSet::new();
        store.write_metrics(&mut set);
        set
    }

    #[test]
    fn the_latest_launch_shape_is_published_per_named_kernel() {
        let store = KernelStore::new(KernelLimits::default());
        let conn = store.connect("train");
        let shaped = |grid: [u32; 3], block: [u32; 3]| {
            let mut k = kernel("gemm", 1, 1_000);
            k.geometry = Geometry {
                grid,
                block,
                registers: 96,
                static_shared_bytes: 1024,
                dynamic_shared_bytes: 65_536,
            };
            k
        };
        store.apply(conn, &delta(FULL_DUTY_PPM, vec![kernel("fill", 1, 10)]));
        store.apply(
            conn,
            &delta(FULL_DUTY_PPM, vec![shaped([8, 4, 2], [32, 4, 1])]),
        );
        let set = metrics(&store);
        let gemm = [("kernel", "gemm")];
        assert_eq!(
            value(&set, "poolprof_kernel_grid_blocks", &gemm),
            Some(64.0)
        );
        assert_eq!(
            value(&set, "poolprof_kernel_block_threads", &gemm),
            Some(128.0)
        );
        assert_eq!(
            value(&set, "poolprof_kernel_registers_per_thread", &gemm),
            Some(96.0)
        );
        assert_eq!(
            value(&set, "poolprof_kernel_shared_memory_per_block_bytes", &gemm),
            Some(66_560.0)
        );
        // a kernel no report gave a shape has none (not a zero that reads as "no blocks")
        let fill = [("kernel", "fill")];
        assert_eq!(value(&set, "poolprof_kernel_grid_blocks", &fill), None);
        // an empty shape later does not erase the known one; a new one replaces it
        store.apply(conn, &delta(FULL_DUTY_PPM, vec![kernel("gemm", 1, 1_000)]));
        assert_eq!(
            value(&metrics(&store), "poolprof_kernel_grid_blocks", &gemm),
            Some(64.0)
        );
        store.apply(
            conn,
            &delta(FULL_DUTY_PPM, vec![shaped([132, 1, 1], [256, 1, 1])]),
        );
        assert_eq!(
            value(&metrics(&store), "poolprof_kernel_grid_blocks", &gemm),
            Some(132.0)
        );
    }

    #[test]
    fn processes_of_one_workload_add_up() {
        let store = KernelStore::new(KernelLimits::default());
        let a = store.connect("train");
        let b = store.connect("train");
        store.apply(
            a,
            &delta(FULL_DUTY_PPM, vec![kernel("gemm", 10, 1_000_000_000)]),
        );
        store.apply(
            b,
            &delta(FULL_DUTY_PPM, vec![kernel("gemm", 5, 500_000_000)]),
        );
        let set = metrics(&store);
        let labels = [("workload", "train"), ("kernel", "gemm")];
        assert_eq!(
            value(&set, "poolprof_kernel_launches_total", &labels),
            Some(15.0)
        );
        assert_eq!(
            value(&set, "poolprof_kernel_duration_seconds_total", &labels),
            Some(1.5)
        );
        assert_eq!(
            value(
                &set,
                "poolprof_memcpy_bytes_total",
                &[("direction", "htod")]
            ),
            Some(200.0)
        );
        assert_eq!(
            value(&set, "poolprof_inject_dropped_records_total", &[]),
            Some(4.0)
        );
        assert_eq!(
            value(&set, "poolprof_inject_connected_processes", &[]),
            Some(2.0)
        );
        let uuid = [("uuid", "GPU-11111111-1111-1111-1111-111111111111")];
        assert!(value(&set, "poolprof_kernel_launches_total", &uuid).is_some());
    }

    #[test]
    fn sampled_reports_are_scaled_up_and_marked() {
        let store = KernelStore::new(KernelLimits::default());
        let c = store.connect("infer");
        store.apply(c, &delta(250_000, vec![kernel("k", 3, 3_000)]));
        let set = metrics(&store);
        assert_eq!(
            value(&set, "poolprof_kernel_launches_total", &[("kernel", "k")]),
            Some(12.0)
        );
        assert_eq!(
            value(
                &set,
                "poolprof_inject_kernel_sampling_ratio",
                &[("workload", "infer")]
            ),
            Some(0.25)
        );
    }

    #[test]
    fn sampled_memory_bytes_are_scaled_up_like_kernels() {
        let store = KernelStore::new(KernelLimits::default());
        let exact = store.connect("exact");
        let sampled = store.connect("sampled");
        let mut report = delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]);
        report.devices[0].memcpy = MemcpyBytes {
            htod: 1_000,
            dtoh: 30,
            dtod: 7,
            other: 1,
        };
        report.devices[0].memset_bytes = 64;
        store.apply(exact, &report);
        // Ratio 0.05: the default duty cycle, 200 ms of every 4 s.
        report.kernel_duty_ppm = 50_000;
        store.apply(sampled, &report);
        let set = metrics(&store);
        for (direction, bytes) in [
            ("htod", 1_000.0),
            ("dtoh", 30.0),
            ("dtod", 7.0),
            ("other", 1.0),
        ] {
            let of = |workload| {
                value(
                    &set,
                    "poolprof_memcpy_bytes_total",
                    &[("workload", workload), ("direction", direction)],
                )
                .unwrap()
            };
            assert_eq!(of("exact"), bytes, "{direction}");
            let scaled = of("sampled");
            assert!(
                (scaled - bytes / 0.05).abs() < 1e-9,
                "{direction}: {scaled}"
            );
        }
        let memset = |workload| {
            value(
                &set,
                "poolprof_memset_bytes_total",
                &[("workload", workload)],
            )
            .unwrap()
        };
        assert_eq!(memset("exact"), 64.0);
        assert!((memset("sampled") - 64.0 / 0.05).abs() < 1e-9);
        assert_eq!(
            value(
                &set,
                "poolprof_inject_kernel_sampling_ratio",
                &[("workload", "sampled")]
            ),
            Some(0.05)
        );
    }

    #[test]
    fn beyond_top_k_kernels_fold_into_other_heaviest_kept() {
        let limits = KernelLimits {
            top_k: 3,
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        let c = store.connect("w");
        let kernels = (1..=10)
            .map(|i| kernel(&format!("k{i}"), 1, i * 100))
            .collect();
        store.apply(c, &delta(FULL_DUTY_PPM, kernels));
        let set = metrics(&store);
        let family = set.get("poolprof_kernel_launches_total").unwrap();
        assert_eq!(family.get_metric().len(), 4, "3 named + other");
        for kept in ["k10", "k9", "k8"] {
            assert!(value(&set, "poolprof_kernel_launches_total", &[("kernel", kept)]).is_some());
        }
        assert_eq!(
            value(
                &set,
                "poolprof_kernel_launches_total",
                &[("kernel", "other")]
            ),
            Some(7.0)
        );
        let other_ns: u64 = (1..=7).map(|i| i * 100).sum();
        let other_s = value(
            &set,
            "poolprof_kernel_duration_seconds_total",
            &[("kernel", "other")],
        );
        assert!((other_s.unwrap() - other_ns as f64 * 1e-9).abs() < 1e-15);
    }

    #[test]
    fn names_are_shortened_and_raw_variants_merge() {
        let store = KernelStore::new(KernelLimits::default());
        let c = store.connect("w");
        store.apply(
            c,
            &delta(
                FULL_DUTY_PPM,
                vec![
                    kernel("_ZN2at6native4gemmIfEEvPT_", 1, 10),
                    kernel("_ZN2at6native4gemmIdEEvPT_", 2, 10),
                ],
            ),
        );
        let set = metrics(&store);
        assert_eq!(
            value(
                &set,
                "poolprof_kernel_launches_total",
                &[("kernel", "native::gemm")]
            ),
            Some(3.0)
        );
    }

    #[test]
    fn global_series_bound_holds() {
        let limits = KernelLimits {
            top_k: 100,
            max_series: 5,
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        for w in 0..4 {
            let c = store.connect(&format!("w{w}"));
            let kernels = (0..10).map(|i| kernel(&format!("k{i}"), 1, 10)).collect();
            store.apply(c, &delta(FULL_DUTY_PPM, kernels));
        }
        let set = metrics(&store);
        let named = set
            .get("poolprof_kernel_launches_total")
            .unwrap()
            .get_metric()
            .iter()
            .filter(|m| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == "kernel" && l.value() != "other")
            })
            .count();
        assert_eq!(named, 5);
    }

    #[test]
    fn series_expire_after_the_last_process_leaves() {
        let limits = KernelLimits {
            expiry: Duration::from_millis(50),
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        let a = store.connect("gone");
        let b = store.connect("stays");
        store.apply(a, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        store.apply(b, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        store.disconnect(a);
        let set = metrics(&store);
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("workload", "gone")]
        )
        .is_some());
        std::thread::sleep(Duration::from_millis(80));
        store.apply(b, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        let set = metrics(&store);
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("workload", "gone")]
        )
        .is_none());
        assert!(value(
            &set,
            "poolprof_inject_dropped_records_total",
            &[("workload", "gone")]
        )
        .is_none());
        assert_eq!(
            value(
                &set,
                "poolprof_kernel_launches_total",
                &[("workload", "stays")]
            ),
            Some(2.0)
        );
    }

    #[test]
    fn idle_named_kernels_give_their_slot_back() {
        let limits = KernelLimits {
            top_k: 1,
            expiry: Duration::from_millis(50),
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        let c = store.connect("w");
        store.apply(c, &delta(FULL_DUTY_PPM, vec![kernel("warmup", 1, 10)]));
        std::thread::sleep(Duration::from_millis(80));
        store.expire(Instant::now());
        store.apply(c, &delta(FULL_DUTY_PPM, vec![kernel("steady", 1, 10)]));
        let set = metrics(&store);
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("kernel", "steady")]
        )
        .is_some());
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("kernel", "warmup")]
        )
        .is_none());
    }

    #[test]
    fn rejections_are_counted_by_reason() {
        let store = KernelStore::new(KernelLimits::default());
        store.reject("bad_magic");
        store.reject("bad_magic");
        store.reject("oversized");
        let set = metrics(&store);
        assert_eq!(
            value(
                &set,
                "poolprof_inject_rejected_connections_total",
                &[("reason", "bad_magic")]
            ),
            Some(2.0)
        );
    }

    #[test]
    fn reports_after_disconnect_are_ignored() {
        let store = KernelStore::new(KernelLimits::default());
        let c = store.connect("w");
        store.disconnect(c);
        store.apply(c, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        assert!(metrics(&store)
            .get("poolprof_kernel_launches_total")
            .is_none());
    }
}
