//! The fixed specifications of the simulated GPU, an H100 80GB HBM3, and its MIG profiles.

/// Product name as NVML reports it.
pub const NAME: &str = "NVIDIA H100 80GB HBM3";
/// Frame-buffer memory in GiB.
pub const MEMORY_GIB: f64 = 80.0;
/// Memory the driver keeps for itself, in GiB.
pub const RESERVED_GIB: f64 = 0.5;
/// Board power limit in watts.
pub const POWER_LIMIT_WATTS: f64 = 700.0;
/// Board power when nothing runs, in watts.
pub const IDLE_WATTS: f64 = 70.0;
/// SM clock when idle, in Hz.
pub const SM_CLOCK_IDLE_HZ: f64 = 345e6;
/// SM clock under load, in Hz.
pub const SM_CLOCK_BUSY_HZ: f64 = 1980e6;
/// SM clock while power-capped, in Hz.
pub const SM_CLOCK_CAPPED_HZ: f64 = 1755e6;
/// HBM3 memory clock, in Hz.
pub const MEMORY_CLOCK_HZ: f64 = 2619e6;
/// Video clock idle and busy, in Hz.
pub const VIDEO_CLOCK_HZ: (f64, f64) = (765e6, 1305e6);
/// NVLink links (NVLink 4).
pub const NVLINKS: u32 = 18;
/// PCIe generation and width.
pub const PCIE: (u32, u32) = (5, 16);

/// MIG compute slices (the `7` of `7g.80gb`).
pub const MIG_SLICES: u32 = 7;

/// A GPU-instance profile the H100 80GB offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigProfile {
    /// NVML's name, e.g. `3g.40gb` (the `mig_profile` label).
    pub name: &'static str,
    /// Compute slices (out of 7).
    pub slices: u32,
    /// Memory in GiB.
    pub memory_gib: u32,
}

/// The H100 80GB profiles.
pub const MIG_PROFILES: [MigProfile; 6] = [
    MigProfile {
        name: "1g.10gb",
        slices: 1,
        memory_gib: 10,
    },
    MigProfile {
        name: "1g.20gb",
        slices: 1,
        memory_gib: 20,
    },
    MigProfile {
        name: "2g.20gb",
        slices: 2,
        memory_gib: 20,
    },
    MigProfile {
        name: "3g.40gb",
        slices: 3,
        memory_gib: 40,
    },
    MigProfile {
        name: "4g.40gb",
        slices: 4,
        memory_gib: 40,
    },
    MigProfile {
        name: "7g.80gb",
        slices: 7,
        memory_gib: 80,
    },
];

impl MigProfile {
    /// Looks a profile up by its NVML name.
    pub fn by_name(name: &str) -> Option<MigProfile> {
        MIG_PROFILES.into_iter().find(|p| p.name == name)
    }

    /// The names of all profiles, for error messages.
    pub fn names() -> String {
        MIG_PROFILES.map(|p| p.name).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_found_by_name_and_match_their_names() {
        let p = MigProfile::by_name("3g.40gb").expect("3g.40gb exists");
        assert_eq!((p.slices, p.memory_gib), (3, 40));
        assert_eq!(MigProfile::by_name("3g.41gb"), None);
        for p in MIG_PROFILES {
            assert_eq!(p.name, format!("{}g.{}gb", p.slices, p.memory_gib));
            assert!(p.slices <= MIG_SLICES && f64::from(p.memory_gib) <= MEMORY_GIB);
        }
    }
}
