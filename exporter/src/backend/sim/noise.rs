//! Deterministic noise: a hash of (seed, channel, slot), so a value is a pure function of
//! the scenario, the GPU and the time, with no global random state.

/// SplitMix64's finalizer: a fast, well-mixed 64-bit hash.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A uniform value in [0, 1) for one (seed, channel, slot).
pub fn unit(seed: u64, channel: u64, slot: i64) -> f64 {
    let h = mix(mix(seed ^ mix(channel)) ^ slot as u64);
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform value in [-1, 1) for one (seed, channel, slot).
pub fn signed(seed: u64, channel: u64, slot: i64) -> f64 {
    unit(seed, channel, slot) * 2.0 - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_inputs_give_same_value_and_slots_differ() {
        assert_eq!(unit(7, 1, 42), unit(7, 1, 42));
        let values: Vec<f64> = (0..1000).map(|slot| unit(7, 1, slot)).collect();
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "mean {mean}");
        assert_ne!(unit(7, 1, 1), unit(8, 1, 1));
        assert_ne!(unit(7, 1, 1), unit(7, 2, 1));
    }
}
