//! MIG: each workload gets its own instance, isolated in SMs, memory and bandwidth, so
//! neither slows the other; each runs on its slice only. A layout is a pair of
//! profiles whose compute slices (of 7) and memory slices (of 8) fit the GPU together;
//! the best is the one with the highest score whose instances hold each side's memory.
//!
//! Progress of X on an instance with `g` of 7 compute slices and `m` of 8 memory
//! slices: its GPU time stretches by `max(1, sm_busy · 7 / g, dram_busy · 8 / m)`.
//! Placement rules finer than the slice counts are the driver's; computed and tested
//! with the simulator only (MIG stays off on the lent H100).

use super::{feasible, gib, infeasible, Demand, MigPlan, Mode, ModePrediction};

/// One MIG profile: its name, compute slices of 7, memory slices of 8, memory bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MigProfile {
    /// The profile name, e.g. `3g.40gb`.
    pub name: &'static str,
    /// Compute slices, of 7.
    pub compute_slices: u8,
    /// Memory slices, of 8.
    pub memory_slices: u8,
    /// Memory of the instance, bytes (what CUDA sees, rounded to the profile's name).
    pub memory_bytes: f64,
}

const GB: f64 = 1e9;

/// H100 80GB's profiles (NVIDIA MIG User Guide, "H100 MIG profiles").
pub const H100_80GB: [MigProfile; 6] = [
    MigProfile {
        name: "1g.10gb",
        compute_slices: 1,
        memory_slices: 1,
        memory_bytes: 10.0 * GB,
    },
    MigProfile {
        name: "1g.20gb",
        compute_slices: 1,
        memory_slices: 2,
        memory_bytes: 20.0 * GB,
    },
    MigProfile {
        name: "2g.20gb",
        compute_slices: 2,
        memory_slices: 2,
        memory_bytes: 20.0 * GB,
    },
    MigProfile {
        name: "3g.40gb",
        compute_slices: 3,
        memory_slices: 4,
        memory_bytes: 40.0 * GB,
    },
    MigProfile {
        name: "4g.40gb",
        compute_slices: 4,
        memory_slices: 4,
        memory_bytes: 40.0 * GB,
    },
    MigProfile {
        name: "7g.80gb",
        compute_slices: 7,
        memory_slices: 8,
        memory_bytes: 80.0 * GB,
    },
];

/// X's progress alone on an instance of `profile`, or None when its memory does not fit.
pub fn progress_on(x: &Demand, profile: &MigProfile) -> Option<f64> {
    if x.memory_bytes > profile.memory_bytes * super::MEMORY_HEADROOM {
        return None;
    }
    let compute = x.sm_busy * 7.0 / f64::from(profile.compute_slices);
    let bandwidth = x.dram_busy * 8.0 / f64::from(profile.memory_slices);
    let stretch = compute.max(bandwidth).max(1.0);
    Some(1.0 / ((1.0 - x.duty) + x.duty * stretch))
}

/// The best layout for `a` and `b` on a GPU offering `profiles`.
pub fn best_layout(a: &Demand, b: &Demand, profiles: &[MigProfile]) -> Option<(MigPlan, f64, f64)> {
    let mut best: Option<(MigPlan, f64, f64)> = None;
    for pa in profiles {
        for pb in profiles {
            if pa.compute_slices + pb.compute_slices > 7 || pa.memory_slices + pb.memory_slices > 8
            {
                continue;
            }
            let (Some(sa), Some(sb)) = (progress_on(a, pa), progress_on(b, pb)) else {
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|(_, x, y)| sa + sb > x + y + 1e-12)
            {
                let plan = MigPlan {
                    a_profile: pa.name.to_string(),
                    b_profile: pb.name.to_string(),
                };
                best = Some((plan, sa, sb));
            }
        }
    }
    best
}

/// The MIG prediction for a GPU named `gpu_name`, or why it cannot run.
pub fn predict(a: &Demand, b: &Demand, gpu_name: Option<&str>) -> ModePrediction {
    let profiles = profiles_for(gpu_name);
    if profiles.is_empty() {
        return infeasible(
            Mode::Mig,
            format!("{} has no MIG", gpu_name.unwrap_or("this GPU")),
        );
    }
    match best_layout(a, b, profiles) {
        Some((plan, sa, sb)) => {
            let reason = format!(
                "isolated instances {} and {}: neither slows the other, each runs on its slice",
                plan.a_profile, plan.b_profile
            );
            let mut p = feasible(Mode::Mig, sa, sb, reason);
            p.mig = Some(plan);
            p
        }
        None => infeasible(
            Mode::Mig,
            format!(
                "no pair of MIG instances holds {} and {}",
                gib(a.memory_bytes),
                gib(b.memory_bytes)
            ),
        ),
    }
}

/// The MIG profiles of the GPU named `name` (NVML's product name); H100 80GB's when unknown.
pub fn profiles_for(name: Option<&str>) -> &'static [MigProfile] {
    match name {
        Some(n) if n.contains("L4") || n.contains("L40") => &[],
        _ => &H100_80GB,
    }
}
