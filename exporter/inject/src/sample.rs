//! Aggregated records together with the share of the activity they sample.
//!
//! Each duty-cycle window is scaled by its own period's share, and windows that wait
//! for the sender (the exporter is away, or a slow interval) are merged; one delta
//! carries one share, so merging keeps the quantity that matters exact: the scaled
//! launch count, the sum of each part's launches over its share.

use crate::aggregate::Aggregator;
use crate::wire::{share_ppm, FULL_DUTY_PPM};

/// Records and the share, in ppm, of the activity they are a sample of.
#[derive(Debug)]
pub struct Sample {
    /// The records.
    pub records: Aggregator,
    /// Their share of the activity, 1..=[`FULL_DUTY_PPM`].
    share_ppm: u32,
}

impl Sample {
    /// `records` that are a `share_ppm` sample (clamped to 1..=[`FULL_DUTY_PPM`]).
    pub fn new(records: Aggregator, share_ppm: u32) -> Self {
        Self {
            records,
            share_ppm: share_ppm.clamp(1, FULL_DUTY_PPM),
        }
    }

    /// The share the records sample, in ppm.
    pub fn share_ppm(&self) -> u32 {
        self.share_ppm
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Moves the records out; what is left is empty and keeps the share, so an idle
    /// interval still reports the latest share.
    pub fn take(&mut self) -> Sample {
        Sample::new(self.records.take(), self.share_ppm)
    }

    /// Adds `other`'s records. The share becomes the one that scales the launches of
    /// both to the sum of their scaled launches; when neither holds a launch (only
    /// memcpy and memset bytes, or nothing), the newer share (`other`'s) is kept.
    pub fn absorb(&mut self, other: Sample) {
        let (mine, theirs) = (self.records.launches(), other.records.launches());
        self.share_ppm = if self.is_empty() || mine + theirs == 0 {
            other.share_ppm
        } else {
            let scaled = |launches: u64, share: u32| {
                u128::from(launches) * u128::from(FULL_DUTY_PPM) / u128::from(share)
            };
            share_ppm(
                u128::from(mine + theirs),
                scaled(mine, self.share_ppm) + scaled(theirs, other.share_ppm),
            )
        };
        self.records.absorb(other.records);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::KernelRun;
    use crate::wire::Geometry;

    fn sample(launches: u64, share_ppm: u32) -> Sample {
        let mut records = Aggregator::new(64);
        for _ in 0..launches {
            records.record_kernel(&KernelRun {
                device: 0,
                name: "k",
                start_ns: 0,
                end_ns: 10,
                geometry: Geometry::default(),
            });
        }
        Sample::new(records, share_ppm)
    }

    fn scaled(s: &Sample) -> f64 {
        s.records.launches() as f64 * f64::from(FULL_DUTY_PPM) / f64::from(s.share_ppm())
    }

    #[test]
    fn merged_samples_scale_to_the_sum_of_their_scaled_launches() {
        // 100 launches at 5% (2000) and 300 at 10% (3000): 400 stand for 5000.
        let mut a = sample(100, 50_000);
        a.absorb(sample(300, 100_000));
        assert_eq!(a.records.launches(), 400);
        assert_eq!(a.share_ppm(), 80_000);
        assert!((scaled(&a) - 5000.0).abs() < 1e-6);
    }

    #[test]
    fn an_empty_side_takes_the_other_share() {
        let mut idle = Sample::new(Aggregator::new(64), 50_000);
        idle.absorb(sample(10, 40_000));
        assert_eq!(idle.share_ppm(), 40_000);
        let mut busy = sample(10, 40_000);
        busy.absorb(Sample::new(Aggregator::new(64), 70_000));
        assert_eq!(busy.share_ppm(), 40_000, "the records keep their share");
        let mut copies = Sample::new(Aggregator::new(64), 50_000);
        copies.records.record_memset(0, 4096);
        let mut newer = Sample::new(Aggregator::new(64), 45_000);
        newer.records.record_memset(0, 4096);
        copies.absorb(newer);
        assert_eq!(
            copies.share_ppm(),
            45_000,
            "no launches on either side: the newer"
        );
    }

    #[test]
    fn take_leaves_an_empty_sample_with_the_same_share() {
        let mut s = sample(5, 40_000);
        let taken = s.take();
        assert_eq!((taken.records.launches(), taken.share_ppm()), (5, 40_000));
        assert!(s.is_empty());
        assert_eq!(s.share_ppm(), 40_000);
        assert_eq!(
            Sample::new(Aggregator::new(1), 0).share_ppm(),
            1,
            "never zero"
        );
    }
}
