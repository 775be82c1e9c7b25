//! Step choice, chunk math and the shard hash.

use std::time::Duration;

use poolprof_analyzer::shard::{fnv1a64, shard_hash, Shard};
use poolprof_analyzer::source::prometheus::range::{POINTS_PER_CHUNK, PROMETHEUS_MAX_POINTS};
use poolprof_analyzer::source::prometheus::{choose_step, QueryRange};

const H: u64 = 3600;
const PINNED: u64 = 13_810_393_684_565_826_226;

#[test]
fn step_is_chosen_from_the_range_and_never_below_15s() {
    assert_eq!(
        choose_step(Duration::from_secs(6 * H)),
        Duration::from_secs(15)
    );
    assert_eq!(
        choose_step(Duration::from_secs(60)),
        Duration::from_secs(15)
    );
    // A week at one minute is the design point: 10,080 points.
    assert_eq!(
        choose_step(Duration::from_secs(7 * 24 * H)),
        Duration::from_secs(60)
    );
    // 30 days / 10,080 = 257 s, rounded up to the next nice step.
    assert_eq!(
        choose_step(Duration::from_secs(30 * 24 * H)),
        Duration::from_secs(300)
    );
    for days in [1u64, 3, 7, 14, 30, 90, 365] {
        let lookback = Duration::from_secs(days * 24 * H);
        let step = choose_step(lookback);
        let points = lookback.as_secs() / step.as_secs();
        assert!(
            points <= 10_080,
            "{days}d at {step:?} gives {points} points"
        );
        assert!(step >= Duration::from_secs(15));
    }
}

#[test]
fn chunks_cover_every_point_once_and_stay_under_the_limit() {
    for total in [1u64, 2, 9_999, 10_000, 10_001, 11_000, 30_000, 100_003] {
        let r = QueryRange {
            start: 1_000.0,
            end: 1_000.0 + (total - 1) as f64 * 15.0,
            step: 15.0,
        };
        assert_eq!(r.points(), total);
        let chunks = r.chunks(POINTS_PER_CHUNK);
        assert_eq!(chunks.len() as u64, total.div_ceil(POINTS_PER_CHUNK));
        let covered: u64 = chunks.iter().map(|c| c.points()).sum();
        assert_eq!(covered, total, "total {total}");
        assert!(chunks.iter().all(|c| c.points() <= PROMETHEUS_MAX_POINTS));
        assert_eq!(chunks[0].start, r.start);
        assert_eq!(chunks.last().unwrap().end, r.end);
        for w in chunks.windows(2) {
            assert!(
                (w[1].start - w[0].end - 15.0).abs() < 1e-6,
                "chunks must neither overlap nor leave a gap"
            );
        }
    }
}

#[test]
fn a_range_not_on_the_grid_ends_at_the_last_grid_point() {
    let r = QueryRange {
        start: 0.0,
        end: 100.0,
        step: 15.0,
    };
    assert_eq!(r.points(), 7);
    assert_eq!(r.chunks(3).last().unwrap().end, 90.0);
}

#[test]
fn ending_at_uses_the_lookback() {
    let r = QueryRange::ending_at(10_000.0, Duration::from_secs(H), None);
    assert_eq!(
        (r.start, r.end, r.step),
        (10_000.0 - 3600.0, 10_000.0, 15.0)
    );
    assert_eq!(r.points(), 241);
}

#[test]
fn the_hash_is_fnv1a_and_stable() {
    // Published FNV-1a 64 test vectors: any change would reshuffle every fleet's shards.
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    // And the finalized value: pinned so a refactor cannot silently move series between shards.
    assert_eq!(shard_hash(b"training-job"), PINNED);
}

#[test]
fn every_series_belongs_to_exactly_one_shard_and_the_split_is_even() {
    let n = 8;
    let shards: Vec<Shard> = (0..n).map(|i| Shard::new(i, n).unwrap()).collect();
    let mut counts = vec![0usize; n as usize];
    let total = 8_000;
    for k in 0..total {
        let id = format!("GPU-{k:08x}-4c1e-9b7d-{:012x}", k * 7919);
        let owners: Vec<_> = shards.iter().filter(|s| s.owns(&id)).collect();
        assert_eq!(owners.len(), 1, "{id}");
        counts[owners[0].index() as usize] += 1;
    }
    let expected = total / n as usize;
    for c in counts {
        assert!(
            c.abs_diff(expected) < expected / 10,
            "uneven split: {c} vs {expected}"
        );
    }
}

#[test]
fn shard_flags_parse_and_bad_ones_say_why() {
    assert_eq!("2/4".parse::<Shard>().unwrap(), Shard::new(2, 4).unwrap());
    assert_eq!("0/1".parse::<Shard>().unwrap(), Shard::ALL);
    assert_eq!(Shard::new(3, 4).unwrap().instance_label(), "3-of-4");
    for bad in ["4/4", "1/0", "x/2", "2", "-1/3", "0/100000"] {
        let err = bad.parse::<Shard>().unwrap_err().to_string();
        assert!(err.contains(bad) && err.contains("i/N"), "{bad}: {err}");
    }
    assert!(Shard::ALL.owns("anything"));
}
