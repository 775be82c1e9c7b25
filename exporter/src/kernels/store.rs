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
//! - at most `max_workloads` workloads, `max_workloads_per_user` of them first
//!   reported by one user (uid); at the limit the workload gone longest (no process
//!   connected) makes room, else the new process is refused;
//! - only GPUs this exporter sees (their UUIDs, or an ordinal below their number);
//!   reports of other devices are discarded and counted;
//! - a workload's series are dropped `expiry` after its last process disconnected, and
//!   a (`uuid`, `workload`) pair's `expiry` after its last report.

mod counters;

use super::demangle::{short_name, OTHER};
use super::rejection_log::RejectionLog;
use crate::registry::MetricSet;
use poolprof_inject::wire::{Delta, DeviceId, Geometry, MemcpyBytes, FULL_DUTY_PPM};
use std::collections::{BTreeMap, HashMap, HashSet};
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
    /// Connections one user (uid) may hold at once.
    pub max_processes_per_user: usize,
    /// Workloads kept at once (connected or within `expiry` of leaving).
    pub max_workloads: usize,
    /// Workloads one user (the uid of the connecting process) may add.
    pub max_workloads_per_user: usize,
    /// Time a frame has from its first byte to its last.
    pub frame_timeout: Duration,
    /// Memory all connections together may hold in frames still arriving.
    pub max_buffered_bytes: usize,
    /// Each kind of refusal is logged at most once per this interval.
    pub log_interval: Duration,
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
            max_processes_per_user: 128,
            max_workloads: 256,
            max_workloads_per_user: 64,
            frame_timeout: Duration::from_secs(10),
            max_buffered_bytes: 32 << 20,
            log_interval: Duration::from_secs(60),
        }
    }
}

/// Identifies one accepted connection.
pub type ConnId = u64;

const NAME_CACHE_LIMIT: usize = 16_384;

/// Devices one workload may report when the exporter does not know its GPUs.
const UNCHECKED_DEVICES_PER_WORKLOAD: usize = 16;

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

#[derive(Debug)]
struct Group {
    kernels: HashMap<String, Named>,
    other: Totals,
    memcpy: [f64; 4],
    memset_bytes: f64,
    last_update: Instant,
}

impl Group {
    fn new(now: Instant) -> Self {
        Self {
            kernels: HashMap::new(),
            other: Totals::default(),
            memcpy: [0.0; 4],
            memset_bytes: 0.0,
            last_update: now,
        }
    }
}

#[derive(Debug)]
struct Workload {
    connected: usize,
    /// The user whose process first reported it (its `max_workloads_per_user` slot).
    owner: u32,
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
    discarded: BTreeMap<&'static str, u64>,
    evicted_workloads: u64,
    pending: usize,
    names: HashMap<String, String>,
    next_conn: ConnId,
    /// The UUIDs (lowercase) of the GPUs the exporter sees; `None` until known.
    gpus: Option<HashSet<String>>,
    /// Profiled launches (`POOLPROF_KERNEL_COUNTERS`), see `counters`.
    profiled: counters::CounterTable,
}

/// What injected processes reported, shared by the listener and the collector.
#[derive(Debug)]
pub struct KernelStore {
    limits: KernelLimits,
    inner: Mutex<Inner>,
    log: Mutex<RejectionLog>,
}

impl KernelStore {
    /// An empty store with these bounds.
    pub fn new(limits: KernelLimits) -> Self {
        // Published at 0 from the start, so increase() sees the first discard.
        let discarded = BTreeMap::from([("unknown_gpu", 0)]);
        Self {
            log: Mutex::new(RejectionLog::new(limits.log_interval)),
            limits,
            inner: Mutex::new(Inner {
                discarded,
                ..Inner::default()
            }),
        }
    }

    /// Accepts reports only for these GPUs and MIG instances (NVML's `GPU-…` and
    /// `MIG-…` UUIDs) and for CUDA ordinals below their number; every other device's
    /// report is discarded.
    pub fn set_gpus(&self, uuids: impl IntoIterator<Item = String>) {
        let set = uuids.into_iter().map(|u| uuid_key(&u)).collect();
        self.lock().gpus = Some(set);
    }

    /// The bounds in force.
    pub fn limits(&self) -> &KernelLimits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a process of user `uid` that said hello; its reports go to
    /// `workload`. A new workload beyond the limits is refused with the reason to count
    /// (after the workload gone longest, if any, made room).
    pub fn connect(&self, workload: &str, uid: u32) -> Result<ConnId, &'static str> {
        let now = Instant::now();
        let mut guard = self.lock();
        let inner = &mut *guard;
        if !inner.workloads.contains_key(workload) {
            self.make_room(inner, uid)?;
            inner.workloads.insert(
                workload.to_string(),
                Workload {
                    connected: 0,
                    owner: uid,
                    dropped_records: 0.0,
                    sampling_ratio: 1.0,
                    last_update: now,
                },
            );
        }
        let w = inner.workloads.get_mut(workload).expect("inserted above");
        w.connected += 1;
        w.last_update = now;
        let id = inner.next_conn;
        inner.next_conn += 1;
        inner.processes.insert(
            id,
            Process {
                workload: workload.to_string(),
            },
        );
        Ok(id)
    }

    /// Frees a workload slot for a new workload of `uid`: over the per-user limit the
    /// user's own workload gone longest goes, over the total limit anyone's.
    fn make_room(&self, inner: &mut Inner, uid: u32) -> Result<(), &'static str> {
        let owned = inner.workloads.values().filter(|w| w.owner == uid).count();
        if owned >= self.limits.max_workloads_per_user {
            evict_oldest_gone(inner, |w| w.owner == uid).ok_or("too_many_user_workloads")?;
        } else if inner.workloads.len() >= self.limits.max_workloads {
            evict_oldest_gone(inner, |_| true).ok_or("too_many_workloads")?;
        }
        Ok(())
    }

    /// Counts an accepted connection that has not said hello yet (`+1`) or is no
    /// longer waiting for it (`-1`).
    pub fn pending(&self, delta: isize) {
        let mut inner = self.lock();
        inner.pending = inner.pending.saturating_add_signed(delta);
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

    /// Counts a connection refused or closed for `reason`, and logs it (one line per
    /// reason per `log_interval`).
    pub fn reject(&self, reason: &'static str) {
        *self.lock().rejected.entry(reason).or_insert(0) += 1;
        let what = format!(
            "refused or closed an injection connection: {}",
            rejection_hint(reason)
        );
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .log(reason, &what);
    }

    fn discard(&self, reason: &'static str, count: u64, what: &str) {
        *self.lock().discarded.entry(reason).or_insert(0) += count;
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .log(reason, what);
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
        let mut unknown = UnknownDevices::default();
        for device in &delta.devices {
            let key = (device.device.label(), workload.clone());
            if !admits(inner, &key, &device.device) {
                unknown.add(device.device);
                continue;
            }
            let group = inner.groups.entry(key).or_insert_with(|| Group::new(now));
            group.last_update = now;
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
        drop(guard);
        self.discard_unknown(unknown, "the report", &workload);
    }

    /// Counts and logs the parts of `what` of `workload` dropped for naming a device this
    /// exporter does not see.
    fn discard_unknown(&self, unknown: UnknownDevices, what: &str, workload: &str) {
        if let Some(device) = unknown.first {
            self.discard(
                "unknown_gpu",
                unknown.count,
                &format!("discarded {what} of workload {workload:?} for device {device}: not a GPU this exporter sees (counted in poolprof_inject_discarded_reports_total)"),
            );
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
        prune(inner, stale);
    }

    /// Writes every series (after expiring old ones, and logging refusals suppressed
    /// in an interval now over).
    pub fn write_metrics(&self, out: &mut MetricSet) {
        self.expire(Instant::now());
        self.log.lock().unwrap_or_else(|p| p.into_inner()).flush();
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
        out.gauge(
            "poolprof_inject_pending_connections",
            "Connections to the kernel listener that have not sent their hello yet (they hold a process slot).",
            &[],
            inner.pending as f64,
        );
        out.gauge(
            "poolprof_inject_workloads",
            "Workloads the kernel listener keeps series for (connected, or left less than the expiry ago).",
            &[],
            inner.workloads.len() as f64,
        );
        out.counter(
            "poolprof_inject_evicted_workloads_total",
            "Workloads whose series were dropped before their expiry to make room for a new workload.",
            &[],
            inner.evicted_workloads as f64,
        );
        for (reason, count) in &inner.discarded {
            out.counter(
                "poolprof_inject_discarded_reports_total",
                "Per-device parts of injection reports discarded, by reason (unknown_gpu: a device this exporter does not see).",
                &[("reason", reason)],
                *count as f64,
            );
        }
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

/// Whether the (device, workload) pair `key` may have series: it has some already, or
/// it may get new ones ([`device_allowed`]).
fn admits(inner: &Inner, key: &(String, String), device: &DeviceId) -> bool {
    inner.groups.contains_key(key) || device_allowed(inner, device, key)
}

/// Whether a new (device, workload) pair, keyed by the device's label, may get series:
/// a GPU the exporter sees, or, while it knows none, one of the workload's first few
/// devices.
fn device_allowed(inner: &Inner, device: &DeviceId, (label, workload): &(String, String)) -> bool {
    match &inner.gpus {
        Some(gpus) => match device.uuid {
            Some(_) => gpus.contains(&uuid_key(label)),
            None => (device.ordinal as usize) < gpus.len(),
        },
        None => {
            inner.groups.keys().filter(|(_, w)| w == workload).count()
                < UNCHECKED_DEVICES_PER_WORKLOAD
        }
    }
}

/// A UUID without its `GPU-` or `MIG-` prefix, lowercase: CUDA reports a MIG
/// instance's UUID where NVML names it `MIG-…`, and the library labels every CUDA
/// UUID `GPU-…`, so only the hex digits can be compared.
fn uuid_key(uuid: &str) -> String {
    let hex = ["GPU-", "MIG-"]
        .iter()
        .find_map(|p| {
            uuid.get(..4)
                .filter(|head| head.eq_ignore_ascii_case(p))
                .map(|_| &uuid[4..])
        })
        .unwrap_or(uuid);
    hex.to_ascii_lowercase()
}

/// The parts of one report dropped because their device is not a GPU this exporter
/// sees: how many, and the first device, for the log line.
#[derive(Default)]
struct UnknownDevices {
    first: Option<DeviceId>,
    count: u64,
}

impl UnknownDevices {
    fn add(&mut self, device: DeviceId) {
        self.first.get_or_insert(device);
        self.count += 1;
    }
}

/// Drops the workload matching `which` that has no process connected and was updated
/// longest ago; `None` when there is none.
fn evict_oldest_gone(inner: &mut Inner, which: impl Fn(&Workload) -> bool) -> Option<()> {
    let name = inner
        .workloads
        .iter()
        .filter(|(_, w)| w.connected == 0 && which(w))
        .min_by_key(|(_, w)| w.last_update)
        .map(|(name, _)| name.clone())?;
    inner.workloads.remove(&name);
    prune(inner, |_| false);
    inner.evicted_workloads += 1;
    Some(())
}

/// Drops the groups, and the profiled counters, of workloads no longer in the table,
/// and groups or named kernels last updated when `stale` says; keeps `named_series`
/// in step.
fn prune(inner: &mut Inner, stale: impl Fn(Instant) -> bool) {
    let mut removed = 0;
    inner.groups.retain(|(_, workload), group| {
        if !inner.workloads.contains_key(workload) || stale(group.last_update) {
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

/// What a rejection reason means, for the log line.
fn rejection_hint(reason: &str) -> &'static str {
    match reason {
        "too_many_processes" => "all process slots are taken (--kernels.max-processes)",
        "too_many_user_processes" => "this user's processes hold all the slots one user may (--kernels.max-processes-per-user)",
        "too_many_workloads" => "the workload limit is reached (--kernels.max-workloads) and every workload has a process connected",
        "too_many_user_workloads" => "this user's workload limit is reached (--kernels.max-workloads-per-user) and each of them has a process connected",
        "timeout" => "the peer sent no hello in time (--kernels.hello-timeout) or fell silent (--kernels.idle-timeout)",
        "frame_timeout" => "a frame did not arrive whole in time (--kernels.frame-timeout)",
        "busy" => "no memory left for the frame in time (--kernels.max-buffered-bytes)",
        "wrong_version" => "the peer speaks another protocol version; run the library and the exporter from the same release",
        "bad_magic" => "the peer does not speak the poolprof-inject protocol",
        "oversized" => "the peer announced a frame larger than allowed",
        "no_hello" | "second_hello" => "the peer broke the protocol's order (hello first, once)",
        _ => "the peer sent malformed data or the socket failed",
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
        let conn = store.connect("train", 0).unwrap();
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
        let a = store.connect("train", 0).unwrap();
        let b = store.connect("train", 0).unwrap();
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
        let c = store.connect("infer", 0).unwrap();
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
        let exact = store.connect("exact", 0).unwrap();
        let sampled = store.connect("sampled", 0).unwrap();
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
        let c = store.connect("w", 0).unwrap();
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
        let c = store.connect("w", 0).unwrap();
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
            let c = store.connect(&format!("w{w}"), 0).unwrap();
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
        let a = store.connect("gone", 0).unwrap();
        let b = store.connect("stays", 0).unwrap();
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
        let c = store.connect("w", 0).unwrap();
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
        let c = store.connect("w", 0).unwrap();
        store.disconnect(c);
        store.apply(c, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        assert!(metrics(&store)
            .get("poolprof_kernel_launches_total")
            .is_none());
    }

    fn on_device(uuid: Option<[u8; 16]>, ordinal: u32) -> Delta {
        let mut d = delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]);
        d.devices[0].device = DeviceId { ordinal, uuid };
        d
    }

    fn series(set: &MetricSet, name: &str) -> usize {
        set.get(name).map_or(0, |f| f.get_metric().len())
    }

    #[test]
    fn reports_for_gpus_this_exporter_does_not_see_are_discarded_and_counted() {
        let store = KernelStore::new(KernelLimits::default());
        store.set_gpus(["GPU-11111111-1111-1111-1111-111111111111".to_string()]);
        let c = store.connect("w", 0).unwrap();
        store.apply(c, &on_device(Some([0x11; 16]), 0));
        for i in 0..1000u32 {
            let mut made_up = [0u8; 16];
            made_up[..4].copy_from_slice(&i.to_le_bytes());
            store.apply(c, &on_device(Some(made_up), 0));
        }
        // an ordinal only counts when below the number of GPUs
        store.apply(c, &on_device(None, 0));
        store.apply(c, &on_device(None, 7));
        let set = metrics(&store);
        assert_eq!(
            series(&set, "poolprof_memset_bytes_total"),
            2,
            "the GPU and cuda:0"
        );
        assert_eq!(series(&set, "poolprof_memcpy_bytes_total"), 8);
        assert_eq!(
            value(
                &set,
                "poolprof_inject_discarded_reports_total",
                &[("reason", "unknown_gpu")]
            ),
            Some(1001.0)
        );
    }

    #[test]
    fn a_mig_instance_the_exporter_sees_is_accepted_by_its_uuid() {
        let store = KernelStore::new(KernelLimits::default());
        store.set_gpus([
            "GPU-11111111-1111-1111-1111-111111111111".to_string(),
            "MIG-33333333-3333-3333-3333-333333333333".to_string(),
        ]);
        let c = store.connect("w", 0).unwrap();
        store.apply(c, &on_device(Some([0x33; 16]), 0));
        store.apply(c, &on_device(Some([0x44; 16]), 0));
        let set = metrics(&store);
        assert_eq!(
            series(&set, "poolprof_memset_bytes_total"),
            1,
            "the MIG instance"
        );
        assert_eq!(
            value(
                &set,
                "poolprof_inject_discarded_reports_total",
                &[("reason", "unknown_gpu")]
            ),
            Some(1.0)
        );
    }

    #[test]
    fn without_known_gpus_a_workload_keeps_a_few_devices() {
        let store = KernelStore::new(KernelLimits::default());
        let c = store.connect("w", 0).unwrap();
        for i in 0..100u8 {
            store.apply(c, &on_device(Some([i; 16]), 0));
        }
        let set = metrics(&store);
        assert_eq!(
            series(&set, "poolprof_memset_bytes_total"),
            UNCHECKED_DEVICES_PER_WORKLOAD
        );
    }

    #[test]
    fn workloads_are_bounded_in_total_and_per_user() {
        let limits = KernelLimits {
            max_workloads: 4,
            max_workloads_per_user: 2,
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        let a1 = store.connect("a1", 1000).unwrap();
        let _a2 = store.connect("a2", 1000).unwrap();
        assert_eq!(store.connect("a3", 1000), Err("too_many_user_workloads"));
        // another process of a known workload is no new workload
        assert!(store.connect("a1", 1000).is_ok());
        let _b1 = store.connect("b1", 2000).unwrap();
        let _b2 = store.connect("b2", 2000).unwrap();
        assert_eq!(store.connect("c1", 3000), Err("too_many_workloads"));
        // once a workload is gone (no process left) it makes room before its expiry
        store.apply(a1, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        store.disconnect(a1);
        assert!(
            store.connect("c1", 3000).is_err(),
            "a1 has a second process"
        );
        let set = metrics(&store);
        assert_eq!(value(&set, "poolprof_inject_workloads", &[]), Some(4.0));
        assert_eq!(
            value(&set, "poolprof_inject_evicted_workloads_total", &[]),
            Some(0.0)
        );
    }

    #[test]
    fn a_gone_workload_makes_room_for_a_new_one() {
        let limits = KernelLimits {
            max_workloads: 2,
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        let old = store.connect("old", 0).unwrap();
        store.apply(old, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        let _stays = store.connect("stays", 0).unwrap();
        store.disconnect(old);
        let new = store.connect("new", 0).unwrap();
        store.apply(new, &delta(FULL_DUTY_PPM, vec![kernel("k", 1, 10)]));
        let set = metrics(&store);
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("workload", "old")]
        )
        .is_none());
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("workload", "new")]
        )
        .is_some());
        assert_eq!(
            value(&set, "poolprof_inject_evicted_workloads_total", &[]),
            Some(1.0)
        );
        // the evicted workload's named series gave their global slots back
        assert_eq!(store.lock().named_series, 1);
    }

    #[test]
    fn a_gpu_idle_for_the_expiry_loses_its_series_while_the_process_stays() {
        let limits = KernelLimits {
            expiry: Duration::from_millis(50),
            ..Default::default()
        };
        let store = KernelStore::new(limits);
        let c = store.connect("w", 0).unwrap();
        store.apply(c, &on_device(Some([1; 16]), 0));
        std::thread::sleep(Duration::from_millis(80));
        store.apply(c, &on_device(Some([2; 16]), 1));
        let set = metrics(&store);
        assert_eq!(series(&set, "poolprof_memset_bytes_total"), 1);
        assert!(value(
            &set,
            "poolprof_memset_bytes_total",
            &[("uuid", "GPU-02020202-0202-0202-0202-020202020202")]
        )
        .is_some());
    }
}
