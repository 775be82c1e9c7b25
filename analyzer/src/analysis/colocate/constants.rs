//! The model's fitted constants, and where their values come from.

use serde::{Deserialize, Serialize};

/// The four constants the co-location model fits; everything else is measured.
///
/// Fitted by least squares on the calibration suite (`bench/workloads/`, every pair
/// under each mode on H100s; `docs/validation/colocation-h100.md` has the runs and
/// `bench/colocation` refits them): both pairs on runs 2 and 3 (56 pairs per mode).
/// The time-slicing pair after run 1's (0.0099, 1.025) was scored on both; the MPS
/// pair for the fixed-point form of `mps.rs` (the peer's busy fraction beside the
/// workload, not alone), scored held out on run 4 and run 5.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Constants {
    /// Time-slicing: the share of a peer's kernel a launch that finds it running
    /// waits for, per launch (0 = no wait, 1 = the whole residual).
    pub ts_launch_wait: f64,
    /// Time-slicing: how much of a peer's busy time stretches a workload's own GPU
    /// time (1 = processor sharing: both busy, each at half speed).
    pub ts_sharing: f64,
    /// MPS: the occupancy while busy above which a peer's kernels fill the SMs, so that
    /// a launch waits for the whole residual of the running kernel.
    pub mps_fill_threshold: f64,
    /// MPS: how much a workload's kernels stretch per unit of the peer's busy fraction
    /// times the peer's occupancy while busy (warps that share issue slots, caches and
    /// DRAM).
    pub mps_sharing: f64,
}

impl Default for Constants {
    fn default() -> Self {
        Constants {
            ts_launch_wait: 0.0,
            ts_sharing: 1.324,
            mps_fill_threshold: 0.5188,
            mps_sharing: 1.2779,
        }
    }
}

impl Constants {
    /// The constants fitted on run 1 alone, frozen before runs 2 and 3 were measured
    /// (the MPS pair belongs to the earlier MPS form, which read the peer's duty alone).
    pub const RUN1: Constants = Constants {
        ts_launch_wait: 0.0099,
        ts_sharing: 1.025,
        mps_fill_threshold: 0.3925,
        mps_sharing: 0.2953,
    };

    /// The constants' names, in the order [`Constants::to_vec`] gives them.
    pub const NAMES: [&'static str; 4] = [
        "ts_launch_wait",
        "ts_sharing",
        "mps_fill_threshold",
        "mps_sharing",
    ];

    /// The constants as a vector, for fitting.
    pub fn to_vec(self) -> [f64; 4] {
        [
            self.ts_launch_wait,
            self.ts_sharing,
            self.mps_fill_threshold,
            self.mps_sharing,
        ]
    }

    /// Constants from a vector in [`Constants::NAMES`] order.
    pub fn from_vec(v: [f64; 4]) -> Constants {
        Constants {
            ts_launch_wait: v[0],
            ts_sharing: v[1],
            mps_fill_threshold: v[2],
            mps_sharing: v[3],
        }
    }
}
