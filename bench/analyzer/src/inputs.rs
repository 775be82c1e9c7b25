//! The benchmark's inputs: a deterministic pool mixing every kind of the suite.

use std::io::Write;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::synthetic::{generate, Case, Kind};

/// Points per series: a week at one minute.
pub const POINTS: usize = 10_080;
/// Seconds between points.
pub const STEP: f64 = 60.0;
/// Distinct series generated; larger runs cycle through them.
pub const POOL: usize = 1_000;

/// Every kind, seasonal first.
pub fn kinds() -> Vec<Kind> {
    Kind::SEASONAL
        .iter()
        .chain(Kind::APERIODIC.iter())
        .copied()
        .collect()
}

/// Series `i` of the pool: kind by round-robin, SNR 4, 2 or 1, seed from `i`.
pub fn series(i: usize) -> Vec<f64> {
    let kinds = kinds();
    let kind = kinds[i % kinds.len()];
    let snr = [4.0, 2.0, 1.0][(i / kinds.len()) % 3];
    let mut rng = ChaCha8Rng::seed_from_u64(0x9e37_79b9 ^ i as u64);
    uniform(&generate(kind, POINTS, STEP, snr, &mut rng))
}

/// The case's values on its uniform grid, short gaps filled linearly, so that every
/// method sees the same evenly spaced input of `POINTS` values.
pub fn uniform(case: &Case) -> Vec<f64> {
    let segs = poolprof_analyzer::analysis::grid::segments(&case.points, Some(STEP), 64)
        .expect("generated series grid");
    poolprof_analyzer::analysis::grid::longest(segs).values
}

/// The whole pool, generated on `threads` threads.
pub fn pool(threads: usize) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); POOL];
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(POOL.div_ceil(threads)).enumerate() {
            let base = t * POOL.div_ceil(threads);
            s.spawn(move || {
                for (j, slot) in chunk.iter_mut().enumerate() {
                    *slot = series(base + j);
                }
            });
        }
    });
    out
}

/// Writes the first `n` pool series as raw little-endian f64, one series after another.
pub fn dump(path: &str, n: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create dump file"));
    for i in 0..n {
        for v in series(i % POOL) {
            f.write_all(&v.to_le_bytes()).expect("write");
        }
    }
    eprintln!("wrote {n} series x {POINTS} points to {path}");
}
