//! The forecast evaluation set: real-looking series of nine classes, each with its
//! held-out future. Step sizes 15 s, 1 min, 5 min and 1 h; daily and weekly cycles,
//! trends, level shifts, long flat stretches at 0 or 100%, gaps, GPU shapes
//! (training with dips, bursty inference, memory ramps), hourly series whose daily
//! profile scales with their level, and a GPU cluster simulated job by job
//! ([`crate::clustersim`]). Deterministic per seed.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::clustersim::{simulate, Cluster, Metric};

/// One series: its history (sample times and values, gaps left out) and its future.
pub struct Case {
    /// Class name.
    pub class: &'static str,
    /// Seconds between samples.
    pub step: f64,
    /// The true seasons, in steps (for seasonal-naive), dominant first.
    pub seasons: Vec<usize>,
    /// History: (time, value), possibly with missing samples.
    pub history: Vec<(f64, f64)>,
    /// History on the full grid (missing samples interpolated), for the peers.
    pub filled: Vec<f64>,
    /// The held-out future, one value per step.
    pub future: Vec<f64>,
    /// Seasons in seconds offered to poolprof's validation (the periods of the other
    /// series of the same GPU, for recorded series).
    pub siblings: Vec<f64>,
}

/// The classes, in table order.
pub const CLASSES: [&str; 9] = [
    "hourly day+week",
    "hourly trend+shift+gaps",
    "1 min day",
    "1 min bursty inference",
    "1 min memory ramps",
    "15 s training dips",
    "5 min GPU cluster",
    "hourly multiplicative",
    "cluster jobs (simulated)",
];

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.gen_range(1e-12..1.0);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A daily shape: low at night, a morning and an evening peak; 0..1.
fn daily(t: f64, day: f64, phase: f64) -> f64 {
    let x = 2.0 * std::f64::consts::PI * (t / day + phase);
    0.5 + 0.3 * (x - 2.0).sin() + 0.15 * (2.0 * x).sin()
}

/// AR(1) noise of standard deviation `sd`.
fn ar1(rng: &mut ChaCha8Rng, n: usize, phi: f64, sd: f64) -> Vec<f64> {
    let mut e = 0.0;
    let innov = sd * (1.0 - phi * phi).sqrt();
    (0..n)
        .map(|_| {
            e = phi * e + innov * normal(rng);
            e
        })
        .collect()
}

/// Case `i` of class `class` with seed `seed`.
pub fn case(class: usize, seed: u64) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((class as u64) << 48));
    let r = &mut rng;
    let (step, seasons, n, _h, y): (f64, Vec<usize>, usize, usize, Vec<f64>) = match class {
        0 => {
            let weeks = r.gen_range(3..=6);
            let (n, h) = (168 * weeks, 48);
            let base = r.gen_range(50.0..500.0);
            let amp = base * r.gen_range(0.2..0.8);
            let weekend = r.gen_range(0.3..0.9);
            let slope = base * r.gen_range(-0.0005..0.0005);
            let phase = r.gen_range(0.0..1.0);
            let (phi, sd) = (r.gen_range(0.3..0.8), amp * r.gen_range(0.05..0.3));
            let noise = ar1(r, n + h, phi, sd);
            let y = (0..n + h)
                .map(|t| {
                    let d = (t / 24) % 7;
                    let w = if d >= 5 { weekend } else { 1.0 };
                    base + slope * t as f64 + amp * w * daily(t as f64, 24.0, phase) + noise[t]
                })
                .collect();
            (3600.0, vec![24, 168], n, h, y)
        }
        1 => {
            let (n, h) = (168 * 4, 48);
            let base = r.gen_range(20.0..200.0);
            let amp = base * r.gen_range(0.2..0.6);
            let slope = base * r.gen_range(-0.002..0.002);
            let shift_at = r.gen_range(n / 3..n - 24);
            let shift = base * r.gen_range(-0.4..0.4);
            let phase = r.gen_range(0.0..1.0);
            let sd = amp * r.gen_range(0.05..0.25);
            let noise = ar1(r, n + h, 0.5, sd);
            let y = (0..n + h)
                .map(|t| {
                    let d = (t / 24) % 7;
                    let w = if d >= 5 { 0.6 } else { 1.0 };
                    let s = if t >= shift_at { shift } else { 0.0 };
                    (base
                        + slope * t as f64
                        + s
                        + amp * w * daily(t as f64, 24.0, phase)
                        + noise[t])
                        .max(0.0)
                })
                .collect();
            (3600.0, vec![24, 168], n, h, y)
        }
        2 => {
            let (n, h) = (1440 * 4, 360);
            let base = r.gen_range(10.0..60.0);
            let amp = r.gen_range(10.0..35.0);
            let phase = r.gen_range(0.0..1.0);
            let (phi, sd) = (r.gen_range(0.5..0.95), r.gen_range(1.0..6.0));
            let noise = ar1(r, n + h, phi, sd);
            let y = (0..n + h)
                .map(|t| (base + amp * daily(t as f64, 1440.0, phase) + noise[t]).clamp(0.0, 100.0))
                .collect();
            (60.0, vec![1440], n, h, y)
        }
        3 => {
            let (n, h) = (1440 * 3, 360);
            let peak = r.gen_range(0.05..0.4);
            let phase = r.gen_range(0.0..1.0);
            let mut y = vec![0.0; n + h];
            let mut busy_until = 0usize;
            let mut level = 0.0;
            for (t, v) in y.iter_mut().enumerate() {
                let rate = peak * (0.2 + daily(t as f64, 1440.0, phase));
                if t >= busy_until && r.gen::<f64>() < rate {
                    busy_until = t + r.gen_range(1..8);
                    level = r.gen_range(40.0..100.0);
                }
                *v = if t < busy_until {
                    level
                } else {
                    r.gen_range(0.0..3.0)
                };
            }
            (60.0, vec![1440], n, h, y)
        }
        4 => {
            let (n, h) = (1440 * 2, 240);
            let limit = r.gen_range(16.0..80.0);
            let mut y = Vec::with_capacity(n + h);
            let mut mem: f64 = r.gen_range(0.5..2.0);
            let mut rate = r.gen_range(0.005..0.05) * limit / 60.0;
            let mut plateau = 0usize;
            for _ in 0..n + h {
                if plateau > 0 {
                    plateau -= 1;
                } else {
                    mem += rate * r.gen_range(0.5..1.5);
                    if mem >= limit * r.gen_range(0.85..1.0) || r.gen::<f64>() < 0.002 {
                        // the job ends: memory freed, a pause, a new job
                        mem = r.gen_range(0.5..2.0);
                        rate = r.gen_range(0.005..0.05) * limit / 60.0;
                        plateau = r.gen_range(0..120);
                    }
                }
                y.push(mem.min(limit));
            }
            (60.0, vec![], n, h, y)
        }
        5 => {
            let (n, h) = (5760, 240);
            let period = r.gen_range(20..80);
            let dip = r.gen_range(2..6);
            let high: f64 = r.gen_range(85.0..99.0);
            let low = r.gen_range(5.0..40.0);
            let offset = r.gen_range(0..period);
            let idle_from = r.gen_range(0..n);
            let idle_len = if r.gen::<f64>() < 0.5 {
                r.gen_range(60..600)
            } else {
                0
            };
            let y = (0..n + h)
                .map(|t| {
                    if t >= idle_from && t < idle_from + idle_len {
                        0.0
                    } else if (t + offset) % period < dip {
                        low + r.gen_range(-2.0..2.0)
                    } else {
                        (high + r.gen_range(-1.5..1.5)).min(100.0)
                    }
                })
                .collect();
            (15.0, vec![period], n, h, y)
        }
        7 => hourly_multiplicative(r),
        8 => {
            // a virtual cluster simulated job by job (`clustersim`); one metric per case
            let step: u64 = if r.gen() { 300 } else { 600 };
            let per_day = (86_400 / step) as usize;
            let (days, warm) = (if r.gen() { 7 } else { 14 }, r.gen_range(3..=5));
            let metric = [Metric::Share, Metric::NodesBusy, Metric::Starts][r.gen_range(0..3)];
            let cluster = Cluster::draw(r);
            // the history ends at any time of day, not at midnight
            let skip = warm * per_day + r.gen_range(0..per_day);
            let total = (skip + (days + 1) * per_day) as u64 * step;
            let y = simulate(r, &cluster, total, step, metric).split_off(skip);
            (step as f64, vec![per_day], days * per_day, per_day, y)
        }
        _ => {
            let (n, h) = (288 * 14, 288);
            let amp = r.gen_range(0.0..8.0);
            let phase = r.gen_range(0.0..1.0);
            let mut y = Vec::with_capacity(n + h);
            let mut t = 0usize;
            while t < n + h {
                // a regime: pinned at 100, idle at 0, or a partial load with a daily cycle
                let len = r.gen_range(144..288 * 4);
                let kind = r.gen_range(0..3);
                let mid = r.gen_range(20.0..80.0);
                for u in t..(t + len).min(n + h) {
                    let v = match kind {
                        0 => 100.0,
                        1 => 0.0,
                        _ => {
                            mid + amp * (daily(u as f64, 288.0, phase) - 0.5) * 2.0
                                + r.gen_range(-5.0..5.0)
                        }
                    };
                    y.push(v.clamp(0.0, 100.0));
                }
                t += len;
            }
            (300.0, vec![288], n, h, y)
        }
    };
    let (hist, future) = y.split_at(n);
    // gaps of up to 8 steps in the hourly gap class, none elsewhere
    let mut history = Vec::with_capacity(n);
    let mut skip_until = 0usize;
    for (t, v) in hist.iter().enumerate() {
        if class == 1 && t > skip_until && t + 20 < n && rng.gen::<f64>() < 0.01 {
            skip_until = t + rng.gen_range(2..=8);
        }
        if t < skip_until {
            continue;
        }
        history.push((t as f64 * step, *v));
    }
    let filled = fill(&history, step, n);
    Case {
        class: CLASSES[class],
        step,
        seasons,
        history,
        filled,
        future: future.to_vec(),
        siblings: Vec::new(),
    }
}

/// A random smooth daily curve with 1–4 harmonics, sampled hourly and scaled to 0..1.
fn random_day(r: &mut ChaCha8Rng) -> [f64; 24] {
    let harmonics = r.gen_range(1..=4);
    let decay = r.gen_range(0.5..1.5);
    let terms: Vec<(f64, f64)> = (1..=harmonics)
        .map(|k| {
            let a = r.gen_range(0.3..1.0) / (k as f64).powf(decay);
            (a, r.gen_range(0.0..1.0))
        })
        .collect();
    let mut day = [0.0; 24];
    for (hour, v) in day.iter_mut().enumerate() {
        *v = terms
            .iter()
            .enumerate()
            .map(|(k, (a, ph))| {
                let x = 2.0 * std::f64::consts::PI * ((k + 1) as f64 * hour as f64 / 24.0 + ph);
                a * x.sin()
            })
            .sum();
    }
    let lo = day.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = day.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    day.iter_mut()
        .for_each(|v| *v = (*v - lo) / (hi - lo).max(1e-9));
    day
}

/// Hourly series like real demand (load, traffic, requests): a random daily profile
/// whose amplitude scales with a slowly varying level (multiplicative), a weekend
/// profile of its own, weekdays that differ a little, level changes, anomalous days
/// (holidays, events), multiplicative AR(1) noise from very low to moderate; 4–6 weeks
/// starting on any weekday, horizon 48.
fn hourly_multiplicative(r: &mut ChaCha8Rng) -> (f64, Vec<usize>, usize, usize, Vec<f64>) {
    let (n, h) = (24 * r.gen_range(28..=42), 48);
    let start_day = r.gen_range(0..7);
    let base = 10f64.powf(r.gen_range(1.0..3.0));
    // the night's floor relative to the peak: 0.1 (office) to 0.8 (always busy)
    let floor = r.gen_range(0.1..0.8);
    let weekday = random_day(r);
    let own = random_day(r);
    let mix = r.gen_range(0.0..1.0);
    let weekend_level = r.gen_range(0.4..1.1);
    let mut profiles = [[0.0; 24]; 7];
    for (d, p) in profiles.iter_mut().enumerate() {
        let scale = if d >= 5 {
            weekend_level
        } else {
            (0.05 * normal(r)).exp()
        };
        for (hour, v) in p.iter_mut().enumerate() {
            let shape = if d >= 5 {
                mix * own[hour] + (1.0 - mix) * weekday[hour]
            } else {
                weekday[hour]
            };
            *v = scale * (floor + (1.0 - floor) * shape);
        }
    }
    // the log level: a slow trend, a smooth wander, maybe a level change
    let slope = r.gen_range(-0.3..0.3) / n as f64;
    // a slow AR(1) wander of the log level, about 200 hours of memory
    let wander_sd = r.gen_range(0.0..0.15) * (1.0 - 0.995f64 * 0.995).sqrt();
    let shift = if r.gen::<f64>() < 0.3 {
        (r.gen_range(n / 4..n - 12), r.gen_range(-0.4..0.4))
    } else {
        (usize::MAX, 0.0)
    };
    let days = (n + h) / 24;
    let anomalies: Vec<(usize, f64)> = (0..r.gen_range(0..=3))
        .map(|_| (r.gen_range(0..days), r.gen_range(0.3..1.5)))
        .collect();
    let sd = 10f64.powf(r.gen_range(-2.3..-0.8));
    let phi = r.gen_range(0.0..0.8);
    let noise = ar1(r, n + h, phi, sd);
    let mut wander = 0.0;
    let y = (0..n + h)
        .map(|t| {
            wander = 0.995 * wander + wander_sd * normal(r);
            let day = t / 24;
            let dow = (start_day + day) % 7;
            let shifted = if t >= shift.0 { shift.1 } else { 0.0 };
            let mut p = profiles[dow][t % 24];
            if let Some((_, f)) = anomalies.iter().find(|(d, _)| *d == day) {
                // a holiday looks like a weekend day; an event scales the day
                p = if *f < 0.9 {
                    profiles[5][t % 24] * f / 0.9
                } else {
                    p * f
                };
            }
            base * (slope * t as f64 + wander + shifted + noise[t]).exp() * p
        })
        .collect();
    (3600.0, vec![24, 168], n, h, y)
}

/// The history on the full grid of `n` steps, missing samples linearly interpolated.
pub fn fill(points: &[(f64, f64)], step: f64, n: usize) -> Vec<f64> {
    let mut out = vec![f64::NAN; n];
    for (t, v) in points {
        out[(t / step).round() as usize] = *v;
    }
    let mut last = 0usize;
    for i in 1..n {
        if !out[i].is_nan() {
            let (a, b) = (out[last], out[i]);
            for (k, o) in out.iter_mut().enumerate().take(i).skip(last + 1) {
                *o = a + (b - a) * (k - last) as f64 / (i - last) as f64;
            }
            last = i;
        }
    }
    out
}
