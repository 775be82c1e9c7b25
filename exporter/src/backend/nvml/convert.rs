//! NVML's units to the base units the exporter publishes (DESIGN.md: bytes, watts,
//! joules, hertz, ratios 0–1).

/// NVML's "KB" is a kibibyte, as its "MB" memory sizes are mebibytes.
const KIB: f64 = 1024.0;
/// GPM reports PCIe and NVLink rates in MiB/s.
const MIB: f64 = 1024.0 * 1024.0;

/// Milliwatts to watts (power usage and limits).
pub fn milliwatts_to_watts(mw: u32) -> f64 {
    f64::from(mw) / 1000.0
}

/// Millijoules to joules (the total energy counter).
pub fn millijoules_to_joules(mj: u64) -> f64 {
    mj as f64 / 1000.0
}

/// Megahertz to hertz (clocks).
pub fn mhz_to_hz(mhz: u32) -> f64 {
    f64::from(mhz) * 1e6
}

/// KiB/s to bytes/s (`nvmlDeviceGetPcieThroughput`).
pub fn kib_per_second_to_bytes(kib: u32) -> f64 {
    f64::from(kib) * KIB
}

/// KiB to bytes (NVLink throughput counters).
pub fn kib_to_bytes(kib: u64) -> u64 {
    kib.saturating_mul(1024)
}

/// MiB/s to bytes/s (GPM PCIe and NVLink rates).
pub fn mib_per_second_to_bytes(mib: f64) -> Option<f64> {
    (mib.is_finite() && mib >= 0.0).then_some(mib * MIB)
}

/// A percentage (0–100) to a ratio (0–1). GPM's floating-point percentages can
/// overshoot 100 by rounding, so the result is clamped; NaN has no meaning and
/// becomes `None`.
pub fn percent_to_ratio(percent: f64) -> Option<f64> {
    (!percent.is_nan()).then(|| (percent / 100.0).clamp(0.0, 1.0))
}

/// An integer percentage from NVML's utilization queries to a ratio.
pub fn percent_u32_to_ratio(percent: u32) -> f64 {
    (f64::from(percent) / 100.0).min(1.0)
}

/// NVML's CUDA driver version integer (e.g. 13000) as `major.minor` ("13.0").
pub fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_energy_and_clocks_reach_base_units() {
        assert_eq!(milliwatts_to_watts(70_250), 70.25);
        assert_eq!(millijoules_to_joules(1_234_567), 1234.567);
        assert_eq!(mhz_to_hz(1980), 1.98e9);
    }

    #[test]
    fn throughput_uses_binary_prefixes() {
        assert_eq!(kib_per_second_to_bytes(2), 2048.0);
        assert_eq!(kib_to_bytes(3), 3072);
        assert_eq!(kib_to_bytes(u64::MAX), u64::MAX);
        assert_eq!(mib_per_second_to_bytes(1.5), Some(1_572_864.0));
        assert_eq!(mib_per_second_to_bytes(-1.0), None);
        assert_eq!(mib_per_second_to_bytes(f64::NAN), None);
    }

    #[test]
    fn percentages_become_clamped_ratios() {
        assert_eq!(percent_to_ratio(42.0), Some(0.42));
        assert_eq!(percent_to_ratio(100.3), Some(1.0));
        assert_eq!(percent_to_ratio(-0.1), Some(0.0));
        assert_eq!(percent_to_ratio(f64::NAN), None);
        assert_eq!(percent_u32_to_ratio(37), 0.37);
        assert_eq!(percent_u32_to_ratio(250), 1.0);
    }

    #[test]
    fn cuda_version_is_major_dot_minor() {
        assert_eq!(cuda_version(13000), "13.0");
        assert_eq!(cuda_version(12040), "12.4");
        assert_eq!(cuda_version(11080), "11.8");
    }
}
