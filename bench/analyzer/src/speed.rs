//! Wall time and peak RSS of periods + forecast over many series.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::engines::{self, Engine};
use crate::inputs::{self, POINTS, STEP};

/// Steps forecast per series.
const HORIZON: usize = 60;

/// Peak resident set size of this process, in MiB (Linux `VmHWM`).
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The last values of pool series `i` that run `i` analyses: all of them, or with
/// `varied` a length of its own in POINTS/2..=POINTS, as a server meets series of
/// processes that started at different times (what per-length caches must survive).
fn window(values: &[f64], i: usize, varied: bool) -> &[f64] {
    if varied {
        &values[(i * 7919) % (POINTS / 2 + 1)..]
    } else {
        values
    }
}

/// Runs `engine` over `series` series on `threads` threads and prints one result line.
pub fn run(engine: Engine, series: usize, threads: usize, varied: bool) {
    let t_gen = Instant::now();
    let pool = inputs::pool(threads);
    let gen_s = t_gen.elapsed().as_secs_f64();
    let rss_inputs = peak_rss_mib();
    let next = AtomicUsize::new(0);
    let periodic = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= series {
                    break;
                }
                let values = window(&pool[i % pool.len()], i, varied);
                let answer = match engine {
                    Engine::Ours => engines::ours(values, STEP, HORIZON),
                    Engine::Augurs => engines::augurs(values, HORIZON),
                };
                assert_eq!(answer.forecast.len(), HORIZON);
                if !answer.periods.is_empty() {
                    periodic.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let wall = start.elapsed().as_secs_f64();
    println!(
        "engine={engine:?} series={series} points={POINTS} lengths={} threads={threads} wall_s={wall:.2} per_series_ms={:.3} peak_rss_mib={:.0} inputs_rss_mib={rss_inputs:.0} generate_s={gen_s:.1} with_period={}",
        if varied { "varied" } else { "one" },
        wall * 1000.0 / series as f64,
        peak_rss_mib(),
        periodic.load(Ordering::Relaxed)
    );
}
