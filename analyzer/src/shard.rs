//! `--shard i/N`: which series this analyzer instance owns.
//!
//! N cron jobs share a fleet by each taking the series whose identity hashes to their
//! index. The hash is FNV-1a (64 bit) with a finalizer, fixed here rather than std's
//! randomly seeded hasher, so every process, version and machine agrees on the split.

use std::fmt;
use std::str::FromStr;

/// The most shards accepted; more would only spread a fleet thinner than a cron job.
pub const MAX_SHARDS: u32 = 4096;

/// One shard of N: this instance analyzes the series whose identity hashes to `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// Why a `--shard` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid shard {value:?}: {reason} (expected i/N with 0 <= i < N <= {MAX_SHARDS}, e.g. 0/4)"
)]
pub struct ShardError {
    value: String,
    reason: &'static str,
}

impl Shard {
    /// The whole fleet in one shard.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; `None` unless `index < count <= MAX_SHARDS`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        ((1..=MAX_SHARDS).contains(&count) && index < count).then_some(Shard { index, count })
    }

    /// This shard's index, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many shards share the fleet.
    pub fn count(self) -> u32 {
        self.count
    }

    /// Whether the series with this identity (a workload or GPU uuid) belongs here.
    pub fn owns(self, identity: &str) -> bool {
        self.count == 1
            || shard_hash(identity.as_bytes()) % u64::from(self.count) == u64::from(self.index)
    }

    /// The Pushgateway `instance` value for this shard, e.g. `0-of-4`.
    pub fn instance_label(self) -> String {
        format!("{}-of-{}", self.index, self.count)
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::ALL
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| ShardError {
            value: s.to_string(),
            reason,
        };
        let (i, n) = s.split_once('/').ok_or_else(|| err("missing '/'"))?;
        let index: u32 = i.trim().parse().map_err(|_| err("index is not a number"))?;
        let count: u32 = n.trim().parse().map_err(|_| err("count is not a number"))?;
        Shard::new(index, count).ok_or_else(|| err("index must be below count"))
    }
}

/// The hash shards are cut by: FNV-1a, then a 64-bit finalizer (MurmurHash3's fmix64)
/// because FNV's low bits, which `% N` reads, spread similar ids unevenly.
pub fn shard_hash(bytes: &[u8]) -> u64 {
    let mut h = fnv1a64(bytes);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// FNV-1a, 64 bit: tiny, stable across platforms and releases, and spreads short
/// label values well enough for sharding.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}
