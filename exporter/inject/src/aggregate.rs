//! Per-process aggregation of activity records between two sends.
//!
//! Records arrive from CUPTI's buffer-completed callback; each interval the sender
//! takes what accumulated ([`Aggregator::take`]) and turns it into a [`Delta`]. Memory
//! is bounded: at most `max_kernels` distinct (device, kernel) pairs and
//! [`MAX_DEVICES`] devices; launches beyond that are folded into a per-device total
//! (sent as `folded`, shown as `kernel="other"`), records of further devices are
//! counted as dropped.

use crate::wire::{
    truncate_utf8, Delta, DeviceDelta, DeviceId, Geometry, KernelDelta, KernelStats, MemcpyBytes,
    MAX_DEVICES_PER_FRAME, MAX_KERNEL_NAME_BYTES,
};
use std::collections::{BTreeMap, HashMap};

/// Most devices one process aggregates.
pub const MAX_DEVICES: usize = MAX_DEVICES_PER_FRAME;

/// Direction of a memory copy, as the wire protocol groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemcpyDirection {
    /// Host to device.
    HtoD,
    /// Device to host.
    DtoH,
    /// Device to device.
    DtoD,
    /// Peer to peer, arrays, host to host, unknown.
    Other,
}

/// One kernel execution, as read from an activity record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRun<'a> {
    /// CUDA device ordinal.
    pub device: u32,
    /// Kernel name as CUPTI gives it (mangled for C++ kernels).
    pub name: &'a str,
    /// GPU start timestamp, ns.
    pub start_ns: u64,
    /// GPU end timestamp, ns.
    pub end_ns: u64,
    /// Launch geometry and resources.
    pub geometry: Geometry,
}

#[derive(Debug, Default)]
struct DeviceAgg {
    kernels: HashMap<Box<str>, (KernelStats, Geometry)>,
    folded: KernelStats,
    memcpy: MemcpyBytes,
    memset_bytes: u64,
}

/// Activity accumulated since the last [`Aggregator::take`].
#[derive(Debug)]
pub struct Aggregator {
    max_kernels: usize,
    distinct_kernels: usize,
    devices: BTreeMap<u32, DeviceAgg>,
    dropped_records: u64,
}

impl Aggregator {
    /// An empty aggregator keeping at most `max_kernels` distinct (device, kernel) pairs.
    pub fn new(max_kernels: usize) -> Self {
        Self {
            max_kernels,
            distinct_kernels: 0,
            devices: BTreeMap::new(),
            dropped_records: 0,
        }
    }

    /// Adds one kernel execution. A record whose end precedes its start (clock
    /// anomalies) counts with duration 0.
    pub fn record_kernel(&mut self, run: &KernelRun<'_>) {
        let stats = KernelStats::one(run.end_ns.saturating_sub(run.start_ns));
        self.record_kernels(run.device, run.name, &stats, &run.geometry);
    }

    /// Adds several executions of one kernel at once (`geometry` of the last one).
    pub fn record_kernels(
        &mut self,
        device: u32,
        name: &str,
        stats: &KernelStats,
        geometry: &Geometry,
    ) {
        let name = truncate_utf8(name, MAX_KERNEL_NAME_BYTES);
        let name = if name.is_empty() { "<unnamed>" } else { name };
        self.add_kernel(device, name, stats, geometry);
    }

    /// Adds bytes moved by one memory copy.
    pub fn record_memcpy(&mut self, device: u32, direction: MemcpyDirection, bytes: u64) {
        let Some(agg) = self.device(device) else {
            return;
        };
        let mut add = MemcpyBytes::default();
        match direction {
            MemcpyDirection::HtoD => add.htod = bytes,
            MemcpyDirection::DtoH => add.dtoh = bytes,
            MemcpyDirection::DtoD => add.dtod = bytes,
            MemcpyDirection::Other => add.other = bytes,
        }
        agg.memcpy.merge(&add);
    }

    /// Adds bytes written by one memset.
    pub fn record_memset(&mut self, device: u32, bytes: u64) {
        if let Some(agg) = self.device(device) {
            agg.memset_bytes = agg.memset_bytes.saturating_add(bytes);
        }
    }

    /// Counts activity records lost before they reached the aggregator.
    pub fn record_dropped(&mut self, records: u64) {
        self.dropped_records = self.dropped_records.saturating_add(records);
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty() && self.dropped_records == 0
    }

    /// Kernel launches recorded, folded ones included.
    pub fn launches(&self) -> u64 {
        self.devices
            .values()
            .flat_map(|d| d.kernels.values().map(|(k, _)| k).chain([&d.folded]))
            .map(|k| k.launches)
            .sum()
    }

    /// Moves everything recorded out, leaving this aggregator empty.
    pub fn take(&mut self) -> Aggregator {
        std::mem::replace(self, Aggregator::new(self.max_kernels))
    }

    /// Adds everything `other` recorded (for data that could not be sent yet); the
    /// bounds of `self` apply.
    pub fn absorb(&mut self, other: Aggregator) {
        self.record_dropped(other.dropped_records);
        for (ordinal, dev) in other.devices {
            let Some(mine) = self.device(ordinal) else {
                continue;
            };
            mine.folded.merge(&dev.folded);
            mine.memcpy.merge(&dev.memcpy);
            mine.memset_bytes = mine.memset_bytes.saturating_add(dev.memset_bytes);
            for (name, (stats, geometry)) in dev.kernels {
                self.add_kernel(ordinal, &name, &stats, &geometry);
            }
        }
    }

    /// The recorded activity as a delta; `uuid` maps ordinals to device UUIDs.
    pub fn to_delta(
        &self,
        seq: u64,
        kernel_duty_ppm: u32,
        uuid: impl Fn(u32) -> Option<[u8; 16]>,
    ) -> Delta {
        let devices = self
            .devices
            .iter()
            .map(|(&ordinal, dev)| {
                let mut kernels: Vec<KernelDelta> = dev
                    .kernels
                    .iter()
                    .map(|(name, (stats, geometry))| KernelDelta {
                        name: name.to_string(),
                        stats: *stats,
                        geometry: *geometry,
                    })
                    .collect();
                // Heaviest first, so a reader that keeps only some keeps the ones that matter.
                kernels.sort_by_key(|k| std::cmp::Reverse(k.stats.total_ns));
                DeviceDelta {
                    device: DeviceId {
                        ordinal,
                        uuid: uuid(ordinal),
                    },
                    kernels,
                    folded: dev.folded,
                    memcpy: dev.memcpy,
                    memset_bytes: dev.memset_bytes,
                }
            })
            .collect();
        Delta {
            seq,
            dropped_records: self.dropped_records,
            kernel_duty_ppm,
            devices,
        }
    }

    fn device(&mut self, ordinal: u32) -> Option<&mut DeviceAgg> {
        if !self.devices.contains_key(&ordinal) && self.devices.len() >= MAX_DEVICES {
            self.dropped_records = self.dropped_records.saturating_add(1);
            return None;
        }
        Some(self.devices.entry(ordinal).or_default())
    }

    fn add_kernel(&mut self, ordinal: u32, name: &str, stats: &KernelStats, geometry: &Geometry) {
        let room = self.distinct_kernels < self.max_kernels;
        let Some(dev) = self.device(ordinal) else {
            return;
        };
        if let Some((mine, last)) = dev.kernels.get_mut(name) {
            mine.merge(stats);
            *last = *geometry;
        } else if room {
            dev.kernels.insert(name.into(), (*stats, *geometry));
            self.distinct_kernels += 1;
        } else {
            dev.folded.merge(stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(device: u32, name: &str, start: u64, end: u64) -> KernelRun<'_> {
        KernelRun {
            device,
            name,
            start_ns: start,
            end_ns: end,
            geometry: Geometry {
                grid: [1, 1, 1],
                block: [32, 1, 1],
                registers: 16,
                static_shared_bytes: 0,
                dynamic_shared_bytes: 0,
            },
        }
    }

    fn kernel<'d>(delta: &'d Delta, device: u32, name: &str) -> &'d KernelDelta {
        delta
            .devices
            .iter()
            .find(|d| d.device.ordinal == device)
            .and_then(|d| d.kernels.iter().find(|k| k.name == name))
            .unwrap_or_else(|| panic!("kernel {name} on device {device} missing"))
    }

    #[test]
    fn counts_and_durations_per_device_and_kernel() {
        let mut agg = Aggregator::new(100);
        agg.record_kernel(&run(0, "gemm", 100, 400));
        agg.record_kernel(&run(0, "gemm", 1000, 1100));
        agg.record_kernel(&run(1, "gemm", 0, 50));
        agg.record_kernel(&run(0, "relu", 0, 7));
        let d = agg.to_delta(1, 1_000_000, |_| None);
        let g0 = kernel(&d, 0, "gemm").stats;
        assert_eq!(
            g0,
            KernelStats {
                launches: 2,
                total_ns: 400,
                min_ns: 100,
                max_ns: 300
            }
        );
        assert_eq!(kernel(&d, 1, "gemm").stats.launches, 1);
        assert_eq!(kernel(&d, 0, "relu").stats.total_ns, 7);
        assert_eq!(d.devices[0].kernels[0].name, "gemm", "heaviest first");
    }

    #[test]
    fn last_geometry_wins() {
        let mut agg = Aggregator::new(10);
        let mut r = run(0, "k", 0, 1);
        agg.record_kernel(&r);
        r.geometry.grid = [7, 8, 9];
        r.geometry.dynamic_shared_bytes = 4096;
        agg.record_kernel(&r);
        let d = agg.to_delta(0, 1_000_000, |_| None);
        assert_eq!(kernel(&d, 0, "k").geometry, r.geometry);
    }

    #[test]
    fn memcpy_by_direction_and_memset() {
        let mut agg = Aggregator::new(10);
        agg.record_memcpy(0, MemcpyDirection::HtoD, 100);
        agg.record_memcpy(0, MemcpyDirection::HtoD, 28);
        agg.record_memcpy(0, MemcpyDirection::DtoH, 5);
        agg.record_memcpy(0, MemcpyDirection::Other, 9);
        agg.record_memset(0, 64);
        let d = agg.to_delta(0, 1_000_000, |_| None);
        let dev = &d.devices[0];
        assert_eq!(
            dev.memcpy,
            MemcpyBytes {
                htod: 128,
                dtoh: 5,
                dtod: 0,
                other: 9
            }
        );
        assert_eq!(dev.memset_bytes, 64);
    }

    #[test]
    fn distinct_kernels_beyond_the_bound_are_folded_not_lost() {
        let mut agg = Aggregator::new(3);
        for i in 0..10u64 {
            agg.record_kernel(&run(0, &format!("k{i}"), 0, 10 + i));
        }
        agg.record_kernel(&run(0, "k0", 0, 1)); // known names still aggregate
        let d = agg.to_delta(0, 1_000_000, |_| None);
        let dev = &d.devices[0];
        assert_eq!(dev.kernels.len(), 3);
        assert_eq!(kernel(&d, 0, "k0").stats.launches, 2);
        assert_eq!(dev.folded.launches, 7);
        assert_eq!(dev.folded.total_ns, (13..20).sum::<u64>());
        assert_eq!(dev.folded.min_ns, 13);
        assert_eq!(dev.folded.max_ns, 19);
    }

    #[test]
    fn devices_beyond_the_bound_count_as_dropped() {
        let mut agg = Aggregator::new(1000);
        for device in 0..(MAX_DEVICES as u32 + 5) {
            agg.record_kernel(&run(device, "k", 0, 1));
        }
        let d = agg.to_delta(0, 1_000_000, |_| None);
        assert_eq!(d.devices.len(), MAX_DEVICES);
        assert_eq!(d.dropped_records, 5);
    }

    #[test]
    fn take_resets_and_absorb_restores() {
        let mut agg = Aggregator::new(10);
        agg.record_kernel(&run(0, "k", 0, 10));
        agg.record_dropped(2);
        let first = agg.take();
        assert!(agg.is_empty());
        agg.record_kernel(&run(0, "k", 0, 5));
        agg.absorb(first);
        let d = agg.to_delta(0, 1_000_000, |_| None);
        assert_eq!(kernel(&d, 0, "k").stats.launches, 2);
        assert_eq!(kernel(&d, 0, "k").stats.total_ns, 15);
        assert_eq!(d.dropped_records, 2);
    }

    #[test]
    fn absorb_respects_the_bound_of_the_receiver() {
        let mut small = Aggregator::new(1);
        small.record_kernel(&run(0, "a", 0, 1));
        let mut other = Aggregator::new(10);
        other.record_kernel(&run(0, "b", 0, 4));
        small.absorb(other);
        let d = small.to_delta(0, 1_000_000, |_| None);
        assert_eq!(d.devices[0].kernels.len(), 1);
        assert_eq!(d.devices[0].folded.total_ns, 4);
    }

    #[test]
    fn names_are_truncated_and_empty_names_named() {
        let mut agg = Aggregator::new(10);
        let long = "x".repeat(MAX_KERNEL_NAME_BYTES + 50);
        agg.record_kernel(&run(0, &long, 0, 1));
        agg.record_kernel(&run(0, "", 0, 1));
        let d = agg.to_delta(0, 1_000_000, |_| None);
        assert!(d.devices[0]
            .kernels
            .iter()
            .any(|k| k.name.len() == MAX_KERNEL_NAME_BYTES));
        assert_eq!(kernel(&d, 0, "<unnamed>").stats.launches, 1);
    }

    #[test]
    fn reversed_timestamps_count_as_zero_duration() {
        let mut agg = Aggregator::new(10);
        agg.record_kernel(&run(0, "k", 500, 100));
        let d = agg.to_delta(0, 1_000_000, |_| None);
        assert_eq!(kernel(&d, 0, "k").stats.total_ns, 0);
    }

    #[test]
    fn delta_carries_uuids_and_encodes() {
        let mut agg = Aggregator::new(10);
        agg.record_kernel(&run(2, "k", 0, 1));
        let d = agg.to_delta(4, 500_000, |o| (o == 2).then_some([7; 16]));
        assert_eq!(d.devices[0].device.uuid, Some([7; 16]));
        let frames = crate::wire::encode_delta(&d);
        let (back, _) = crate::wire::decode(&frames[0]).expect("decodes");
        assert_eq!(back, crate::wire::Message::Delta(d));
    }
}
