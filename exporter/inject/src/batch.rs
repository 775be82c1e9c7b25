//! Kernel records of one activity buffer, summed before they reach the aggregator.
//!
//! A buffer holds thousands of launches of a few dozen kernels. Reading each record's
//! name (a `strlen`, UTF-8 validation and a string hash of a mangled name that is often
//! hundreds of bytes) costs more than everything else the callback does, and the
//! callback runs on CUPTI's worker thread, which also recycles the device-side
//! timestamp buffers the application's launches need. So records are first summed by
//! (device, CUPTI's name pointer) with a hash of two integers, and each distinct
//! name is read once per buffer when the batch is folded into the [`Aggregator`],
//! under its lock once per buffer rather than for the whole parse.

use crate::aggregate::Aggregator;
use crate::launch_share::LaunchSpans;
use crate::records::{name_of, RawKernel};
use crate::wire::{Geometry, KernelStats};
use std::collections::HashMap;
use std::ffi::c_char;
use std::hash::{BuildHasherDefault, Hasher};

/// Launches of one kernel (one name pointer) on one device within a buffer.
#[derive(Debug)]
struct Entry {
    name: *const c_char,
    stats: KernelStats,
    /// Geometry of the latest launch, as the aggregator keeps it.
    geometry: Geometry,
}

/// Kernel runs of one buffer, keyed by (device, name pointer), and their grid ids.
#[derive(Debug, Default)]
pub struct Batch {
    kernels: HashMap<(u32, usize), Entry, BuildHasherDefault<PointerHasher>>,
    launches: LaunchSpans,
}

impl Batch {
    /// Adds one kernel execution. A record whose end precedes its start counts with
    /// duration 0, as in [`Aggregator::record_kernel`].
    pub fn add(&mut self, run: &RawKernel) {
        let stats = KernelStats::one(run.end_ns.saturating_sub(run.start_ns));
        let entry = self
            .kernels
            .entry((run.device, run.name as usize))
            .or_insert(Entry {
                name: run.name,
                stats: KernelStats::default(),
                geometry: run.geometry,
            });
        entry.stats.merge(&stats);
        entry.geometry = run.geometry;
        self.launches.add(run.context, run.grid_id);
    }

    /// The grid ids of the launches added, for the traced share of launches.
    pub fn launches(&self) -> &LaunchSpans {
        &self.launches
    }

    /// Distinct (device, name pointer) pairs so far.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    /// True when no kernel was added.
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// Adds everything to `agg`, reading each distinct name once.
    ///
    /// # Safety
    /// Every name pointer added must still be null or a live NUL-terminated string
    /// (CUPTI's names live for the process).
    pub unsafe fn fold_into(self, agg: &mut Aggregator) {
        for ((device, _), entry) in self.kernels {
            // SAFETY: the caller guarantees the pointer is null or a live C string.
            let name = unsafe { name_of(entry.name) };
            agg.record_kernels(device, name, &entry.stats, &entry.geometry);
        }
    }
}

/// A multiplicative hash for integer keys (FxHash's constant). The keys are CUPTI's
/// pointers and device ordinals, not input an attacker picks, so no DoS-resistant
/// hash is needed.
#[derive(Debug, Default, Clone, Copy)]
pub struct PointerHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl PointerHasher {
    fn mix(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(SEED);
    }
}

impl Hasher for PointerHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.mix(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.mix(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.mix(value as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::KernelRun;
    use crate::launch_share::{period_share_ppm, Counted};
    use crate::wire::Delta;
    use std::ffi::CString;

    fn geometry(block: u32) -> Geometry {
        Geometry {
            grid: [4, 1, 1],
            block: [block, 1, 1],
            registers: 32,
            static_shared_bytes: 0,
            dynamic_shared_bytes: 128,
        }
    }

    fn raw(device: u32, name: &CString, start: u64, end: u64, block: u32) -> RawKernel {
        RawKernel {
            device,
            context: 1,
            grid_id: i64::from(block),
            name: name.as_ptr(),
            start_ns: start,
            end_ns: end,
            geometry: geometry(block),
        }
    }

    fn sorted(delta: Delta) -> Vec<(u32, String, KernelStats, Geometry)> {
        let mut out: Vec<_> = delta
            .devices
            .into_iter()
            .flat_map(|d| {
                let ordinal = d.device.ordinal;
                d.kernels
                    .into_iter()
                    .map(move |k| (ordinal, k.name, k.stats, k.geometry))
            })
            .collect();
        out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        out
    }

    #[test]
    fn batched_records_aggregate_exactly_like_single_records() {
        let gemm = CString::new("_Z4gemmPfS_").unwrap();
        // The same name at a second address (another module) must still add up.
        let gemm_again = CString::new("_Z4gemmPfS_").unwrap();
        let relu = CString::new("relu").unwrap();
        let runs = [
            raw(0, &gemm, 100, 400, 128),
            raw(0, &relu, 0, 7, 64),
            raw(0, &gemm, 1_000, 1_050, 256),
            raw(1, &gemm, 10, 20, 128),
            raw(0, &gemm_again, 0, 900, 512),
            raw(0, &relu, 50, 40, 64), // end before start: duration 0
        ];

        let mut direct = Aggregator::new(64);
        for r in &runs {
            // SAFETY: the CStrings above outlive the loop.
            let name = unsafe { name_of(r.name) };
            direct.record_kernel(&KernelRun {
                device: r.device,
                name,
                start_ns: r.start_ns,
                end_ns: r.end_ns,
                geometry: r.geometry,
            });
        }
        let mut batch = Batch::default();
        for r in &runs {
            batch.add(r);
        }
        assert_eq!(batch.len(), 4, "(device, pointer) pairs");
        let mut batched = Aggregator::new(64);
        // SAFETY: the names are alive.
        unsafe { batch.fold_into(&mut batched) };

        let want = sorted(direct.to_delta(0, 1_000_000, |_| None));
        let got = sorted(batched.to_delta(0, 1_000_000, |_| None));
        assert_eq!(got, want);
        let gemm0 = got
            .iter()
            .find(|k| k.0 == 0 && k.1 == "_Z4gemmPfS_")
            .unwrap();
        assert_eq!(gemm0.2.launches, 3);
        assert_eq!(gemm0.2.total_ns, 300 + 50 + 900);
        assert_eq!((gemm0.2.min_ns, gemm0.2.max_ns), (50, 900));
        let relu0 = got.iter().find(|k| k.1 == "relu").unwrap();
        assert_eq!((relu0.2.launches, relu0.2.min_ns), (2, 0));
    }

    #[test]
    fn null_names_and_the_kernel_limit_behave_as_unbatched() {
        let named: Vec<CString> = (0..5)
            .map(|i| CString::new(format!("k{i}")).unwrap())
            .collect();
        let mut batch = Batch::default();
        batch.add(&RawKernel {
            device: 0,
            context: 1,
            grid_id: 1,
            name: std::ptr::null(),
            start_ns: 0,
            end_ns: 10,
            geometry: geometry(32),
        });
        for n in &named {
            batch.add(&raw(0, n, 0, 100, 32));
        }
        let mut agg = Aggregator::new(3);
        // SAFETY: the names are alive; null is allowed.
        unsafe { batch.fold_into(&mut agg) };
        let delta = agg.to_delta(0, 1_000_000, |_| None);
        let dev = &delta.devices[0];
        let named_launches: u64 = dev.kernels.iter().map(|k| k.stats.launches).sum();
        assert_eq!(dev.kernels.len(), 3, "at most max_kernels names");
        assert_eq!(named_launches + dev.folded.launches, 6, "nothing lost");
        let all_names: Vec<_> = dev.kernels.iter().map(|k| k.name.as_str()).collect();
        assert!(all_names
            .iter()
            .all(|n| *n == "<unnamed>" || n.starts_with('k')));
    }

    fn batch_of_one(name: &CString, grid_id: i64) -> Batch {
        let mut batch = Batch::default();
        batch.add(&RawKernel {
            grid_id,
            ..raw(0, name, 0, 5, 32)
        });
        batch
    }

    #[test]
    fn grid_ids_of_every_record_reach_the_launch_spans() {
        let k = CString::new("k").unwrap();
        let mut batch = Batch::default();
        for grid_id in [3, 1, 2] {
            batch.add(&RawKernel {
                grid_id,
                ..raw(0, &k, 0, 5, 32)
            });
        }
        let next = batch_of_one(&k, 11);
        // 3 records of the 10 launches numbered 1..=10, up to the next window.
        assert_eq!(
            period_share_ppm(
                batch.launches(),
                next.launches(),
                1,
                &mut Counted::default()
            ),
            300_000
        );
    }

    #[test]
    fn pointer_hasher_spreads_nearby_pointers() {
        let hash = |v: usize| {
            let mut h = PointerHasher::default();
            h.write_usize(v);
            h.finish()
        };
        let hashes: std::collections::HashSet<u64> =
            (0..1000).map(|i| hash(0x7f00_0000_0000 + i * 16)).collect();
        assert_eq!(hashes.len(), 1000);
        let mut a = PointerHasher::default();
        a.write(&[1, 2, 3]);
        let mut b = PointerHasher::default();
        b.write(&[1, 2, 4]);
        assert_ne!(a.finish(), b.finish());
    }
}
