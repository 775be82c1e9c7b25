//! The workload models: what a GPU (or a MIG instance) is busy with at a time `t`
//! (seconds since the scenario started), as a pure function of the model, a seed and `t`.

use super::noise;

/// Bytes in one GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// GPM-style activity at one moment: ratios 0–1 and link rates in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Activity {
    /// Fraction of time any warp was active on an SM.
    pub sm_active: f64,
    /// Resident warps over the maximum.
    pub sm_occupancy: f64,
    /// Tensor pipes busy (any precision; the simulator's tensor work is half precision).
    pub tensor: f64,
    /// DRAM bandwidth used over peak.
    pub dram: f64,
    /// FP16 pipe.
    pub fp16: f64,
    /// FP32 pipe.
    pub fp32: f64,
    /// FP64 pipe.
    pub fp64: f64,
    /// Integer pipe.
    pub integer: f64,
    /// PCIe bytes per second leaving the GPU.
    pub pcie_tx: f64,
    /// PCIe bytes per second arriving at the GPU.
    pub pcie_rx: f64,
    /// NVLink bytes per second sent, all links.
    pub nvlink_tx: f64,
    /// NVLink bytes per second received, all links.
    pub nvlink_rx: f64,
}

const GB: f64 = 1e9;

/// A training step's forward/backward compute: tensor cores and NVLink all-reduce busy.
const COMPUTE: Activity = Activity {
    sm_active: 0.93,
    sm_occupancy: 0.48,
    tensor: 0.68,
    dram: 0.38,
    fp16: 0.22,
    fp32: 0.12,
    fp64: 0.0,
    integer: 0.08,
    pcie_tx: 0.4 * GB,
    pcie_rx: 1.5 * GB,
    nvlink_tx: 110.0 * GB,
    nvlink_rx: 110.0 * GB,
};

/// Data loading and checkpointing between bursts: SMs mostly idle, PCIe busy.
const DATA_LOADING: Activity = Activity {
    sm_active: 0.06,
    sm_occupancy: 0.05,
    tensor: 0.01,
    dram: 0.04,
    fp16: 0.01,
    fp32: 0.03,
    fp64: 0.0,
    integer: 0.02,
    pcie_tx: 6.0 * GB,
    pcie_rx: 14.0 * GB,
    nvlink_tx: 2.0 * GB,
    nvlink_rx: 2.0 * GB,
};

/// An inference server at its peak: decode is memory-heavy, some tensor work.
const SERVING_PEAK: Activity = Activity {
    sm_active: 0.85,
    sm_occupancy: 0.35,
    tensor: 0.45,
    dram: 0.62,
    fp16: 0.3,
    fp32: 0.1,
    fp64: 0.0,
    integer: 0.12,
    pcie_tx: 0.3 * GB,
    pcie_rx: 0.2 * GB,
    nvlink_tx: 0.0,
    nvlink_rx: 0.0,
};

/// A bandwidth-bound job (embedding lookups, elementwise kernels): DRAM saturated.
const MEMORY_BOUND: Activity = Activity {
    sm_active: 0.72,
    sm_occupancy: 0.62,
    tensor: 0.02,
    dram: 0.88,
    fp16: 0.04,
    fp32: 0.3,
    fp64: 0.0,
    integer: 0.18,
    pcie_tx: 1.0 * GB,
    pcie_rx: 1.0 * GB,
    nvlink_tx: 5.0 * GB,
    nvlink_rx: 5.0 * GB,
};

/// Inference load is decided per episode of this many seconds (burst or quiet)…
const EPISODE_SECONDS: f64 = 10.0;
/// …and jittered per slot of this many seconds.
const SLOT_SECONDS: f64 = 2.0;
/// Relative noise on every ratio (±3%).
const NOISE: f64 = 0.03;

/// Noise channels, so each signal gets its own deterministic sequence.
mod channel {
    /// Whether an inference episode is a burst.
    pub const EPISODE: u64 = 1;
    /// How hard an inference episode runs.
    pub const INTENSITY: u64 = 2;
    /// Inference slot-to-slot jitter.
    pub const JITTER: u64 = 3;
    /// First of the per-field ratio noise channels (one per field after it).
    pub const RATIOS: u64 = 16;
}

/// What runs: one of the known behaviours.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// A training job: a compute burst for `duty` of every `period_seconds`, then a dip.
    Training {
        /// Seconds between the starts of two compute bursts.
        period_seconds: f64,
        /// Fraction of the period spent in the compute burst (0–1, exclusive).
        duty: f64,
    },
    /// An inference service with aperiodic bursts drawn from the seed.
    Inference {
        /// Fraction of episodes that are bursts (0–1).
        burst_ratio: f64,
    },
    /// Nothing runs.
    Idle,
    /// A steady DRAM-bound job with little tensor work.
    MemoryBound,
}

impl Load {
    /// The activity at `t` seconds since the scenario started.
    pub fn activity(&self, seed: u64, t: f64) -> Activity {
        let t = t.max(0.0);
        match *self {
            Self::Training {
                period_seconds,
                duty,
            } => training(seed, t, period_seconds, duty),
            Self::Inference { burst_ratio } => inference(seed, t, burst_ratio),
            Self::Idle => Activity::default(),
            Self::MemoryBound => jittered(MEMORY_BOUND, seed, t.floor() as i64),
        }
    }

    /// The scenario-file name of this load.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Training { .. } => "training",
            Self::Inference { .. } => "inference",
            Self::Idle => "idle",
            Self::MemoryBound => "memory_bound",
        }
    }
}

/// Periodic: the noise slot is the second within the period, so `t` and `t + period`
/// give identical values, as a real training loop's iterations repeat.
fn training(seed: u64, t: f64, period: f64, duty: f64) -> Activity {
    let phase = t % period;
    let base = if phase < duty * period {
        COMPUTE
    } else {
        DATA_LOADING
    };
    jittered(base, seed, phase.floor() as i64)
}

fn inference(seed: u64, t: f64, burst_ratio: f64) -> Activity {
    let episode = (t / EPISODE_SECONDS).floor() as i64;
    let slot = (t / SLOT_SECONDS).floor() as i64;
    let intensity = if noise::unit(seed, channel::EPISODE, episode) < burst_ratio {
        0.45 + 0.5 * noise::unit(seed, channel::INTENSITY, episode)
    } else {
        0.03 + 0.09 * noise::unit(seed, channel::INTENSITY, episode)
    };
    let intensity =
        (intensity * (1.0 + 0.15 * noise::signed(seed, channel::JITTER, slot))).clamp(0.0, 1.0);
    jittered(scale(SERVING_PEAK, intensity), seed, slot)
}

fn scale(a: Activity, k: f64) -> Activity {
    map(a, |_, v| v * k)
}

/// Small multiplicative noise on every field, ratios kept in 0–1.
fn jittered(a: Activity, seed: u64, slot: i64) -> Activity {
    map(a, |i, v| {
        let factor = 1.0 + NOISE * noise::signed(seed, channel::RATIOS + i, slot);
        v * factor
    })
    .clamped()
}

/// Applies `f(field_number, value)` to every field.
fn map(a: Activity, f: impl Fn(u64, f64) -> f64) -> Activity {
    Activity {
        sm_active: f(0, a.sm_active),
        sm_occupancy: f(1, a.sm_occupancy),
        tensor: f(2, a.tensor),
        dram: f(3, a.dram),
        fp16: f(4, a.fp16),
        fp32: f(5, a.fp32),
        fp64: f(6, a.fp64),
        integer: f(7, a.integer),
        pcie_tx: f(8, a.pcie_tx),
        pcie_rx: f(9, a.pcie_rx),
        nvlink_tx: f(10, a.nvlink_tx),
        nvlink_rx: f(11, a.nvlink_rx),
    }
}

impl Activity {
    /// Ratios clamped to 0–1 and rounded to 4 decimals (GPM's useful precision, and
    /// shorter history files), rates to whole bytes per second ≥ 0.
    fn clamped(self) -> Self {
        let ratio = |v: f64| (v.clamp(0.0, 1.0) * 1e4).round() / 1e4;
        let rate = |v: f64| v.max(0.0).round();
        Self {
            sm_active: ratio(self.sm_active),
            sm_occupancy: ratio(self.sm_occupancy),
            tensor: ratio(self.tensor),
            dram: ratio(self.dram),
            fp16: ratio(self.fp16),
            fp32: ratio(self.fp32),
            fp64: ratio(self.fp64),
            integer: ratio(self.integer),
            pcie_tx: rate(self.pcie_tx),
            pcie_rx: rate(self.pcie_rx),
            nvlink_tx: rate(self.nvlink_tx),
            nvlink_rx: rate(self.nvlink_rx),
        }
    }

    /// The weighted sum of parts (MIG instances weighted by their compute slices).
    pub fn weighted(parts: &[(f64, Activity)]) -> Activity {
        let total: f64 = parts.iter().map(|(w, _)| w).sum();
        if total <= 0.0 {
            return Activity::default();
        }
        parts
            .iter()
            .fold(Activity::default(), |acc, (w, a)| {
                let k = w / total;
                Activity {
                    sm_active: acc.sm_active + k * a.sm_active,
                    sm_occupancy: acc.sm_occupancy + k * a.sm_occupancy,
                    tensor: acc.tensor + k * a.tensor,
                    dram: acc.dram + k * a.dram,
                    fp16: acc.fp16 + k * a.fp16,
                    fp32: acc.fp32 + k * a.fp32,
                    fp64: acc.fp64 + k * a.fp64,
                    integer: acc.integer + k * a.integer,
                    pcie_tx: acc.pcie_tx + k * a.pcie_tx,
                    pcie_rx: acc.pcie_rx + k * a.pcie_rx,
                    nvlink_tx: acc.nvlink_tx + k * a.nvlink_tx,
                    nvlink_rx: acc.nvlink_rx + k * a.nvlink_rx,
                }
            })
            .clamped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRAINING: Load = Load::Training {
        period_seconds: 300.0,
        duty: 0.8,
    };

    #[test]
    fn training_repeats_every_period_and_dips_after_the_burst() {
        for t in [0.0, 15.0, 100.5, 239.0, 250.0, 299.0] {
            assert_eq!(TRAINING.activity(3, t), TRAINING.activity(3, t + 300.0));
            assert_eq!(TRAINING.activity(3, t), TRAINING.activity(3, t + 3000.0));
        }
        let compute = TRAINING.activity(3, 100.0);
        let dip = TRAINING.activity(3, 250.0);
        assert!(
            compute.tensor > 0.6 && compute.sm_active > 0.85,
            "{compute:?}"
        );
        assert!(dip.tensor < 0.05 && dip.sm_active < 0.1, "{dip:?}");
        assert!(dip.pcie_rx > compute.pcie_rx);
    }

    #[test]
    fn inference_is_bursty_and_not_periodic() {
        let load = Load::Inference { burst_ratio: 0.35 };
        let sm: Vec<f64> = (0..3600)
            .map(|t| load.activity(9, t as f64).sm_active)
            .collect();
        let busy = sm.iter().filter(|v| **v > 0.35).count() as f64 / sm.len() as f64;
        assert!((0.2..0.5).contains(&busy), "busy fraction {busy}");
        assert!(sm.iter().any(|v| *v < 0.12) && sm.iter().any(|v| *v > 0.6));
        // No lag between 10 s and 20 min makes the series repeat itself.
        for lag in (10..1200).step_by(10) {
            let same = (0..sm.len() - lag).all(|i| sm[i] == sm[i + lag]);
            assert!(!same, "inference repeats with lag {lag}");
        }
        assert_ne!(load.activity(9, 500.0), load.activity(10, 500.0));
    }

    #[test]
    fn memory_bound_has_dram_high_and_tensor_low() {
        let a = Load::MemoryBound.activity(1, 42.0);
        assert!(a.dram > 0.8 && a.tensor < 0.05, "{a:?}");
        assert_eq!(Load::Idle.activity(1, 42.0), Activity::default());
    }

    #[test]
    fn every_ratio_stays_within_zero_and_one() {
        let loads = [
            TRAINING,
            Load::Inference { burst_ratio: 1.0 },
            Load::MemoryBound,
        ];
        for load in loads {
            for t in 0..2000 {
                let a = load.activity(5, t as f64 * 0.7);
                for v in [
                    a.sm_active,
                    a.sm_occupancy,
                    a.tensor,
                    a.dram,
                    a.fp16,
                    a.fp32,
                ] {
                    assert!((0.0..=1.0).contains(&v), "{load:?} at {t}: {a:?}");
                }
            }
        }
    }
}
