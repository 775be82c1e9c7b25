//! A labelled synthetic suite: seasonal and aperiodic series with known truth.
//!
//! Shared by `tests/synthetic_suite.rs` and the benchmark in `bench/analyzer`.

#![allow(dead_code)]

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// The shape of a generated series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A sine wave.
    Sine,
    /// A square wave.
    Square,
    /// A sawtooth wave.
    Sawtooth,
    /// Periodic short bursts (low duty cycle), like training iterations.
    Bursts,
    /// A sine on a linear trend.
    TrendSeason,
    /// A sine with rare large outliers.
    Outliers,
    /// A sine with missing samples and short gaps.
    Gaps,
    /// Bursts plus a slow cycle (two periods).
    TwoPeriods,
    /// White noise.
    WhiteNoise,
    /// A Gaussian random walk.
    RandomWalk,
    /// Red noise: AR(1) with coefficient 0.9.
    RedNoise,
    /// A straight line with noise.
    Trend,
    /// One burst on a flat noisy baseline.
    SingleBurst,
}

impl Kind {
    /// Every kind that has a true period.
    pub const SEASONAL: [Kind; 8] = [
        Kind::Sine,
        Kind::Square,
        Kind::Sawtooth,
        Kind::Bursts,
        Kind::TrendSeason,
        Kind::Outliers,
        Kind::Gaps,
        Kind::TwoPeriods,
    ];
    /// Every kind without a period.
    pub const APERIODIC: [Kind; 5] = [
        Kind::WhiteNoise,
        Kind::RandomWalk,
        Kind::RedNoise,
        Kind::Trend,
        Kind::SingleBurst,
    ];
}

/// One generated series and its truth.
#[derive(Debug, Clone)]
pub struct Case {
    /// What was generated.
    pub kind: Kind,
    /// Signal-to-noise ratio (signal std over noise std); infinite for aperiodic kinds.
    pub snr: f64,
    /// True periods in seconds, the dominant one first; empty when aperiodic.
    pub periods: Vec<f64>,
    /// Samples (unix seconds, value); gaps are missing samples.
    pub points: Vec<(f64, f64)>,
    /// The sampling step in seconds.
    pub step: f64,
}

impl Case {
    /// The values, ignoring timestamps.
    pub fn values(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.1).collect()
    }
}

/// A standard normal draw (Box–Muller).
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.gen::<f64>().max(1e-300);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A period in steps, log-uniform between `lo` and `hi`.
fn period(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.gen::<f64>() * (hi.ln() - lo.ln())).exp()
}

fn sine(t: f64, p: f64, phase: f64) -> f64 {
    (2.0 * std::f64::consts::PI * (t / p + phase)).sin()
}

fn square(t: f64, p: f64, phase: f64) -> f64 {
    if (t / p + phase).fract() < 0.5 {
        1.0
    } else {
        -1.0
    }
}

fn sawtooth(t: f64, p: f64, phase: f64) -> f64 {
    2.0 * (t / p + phase).fract() - 1.0
}

fn burst(t: f64, p: f64, phase: f64, duty: f64) -> f64 {
    if (t / p + phase).fract() < duty {
        1.0
    } else {
        0.0
    }
}

/// Standard deviation of a series (for scaling noise to an SNR).
fn std_dev(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt()
}

/// Generates one series of `n` points, `step` seconds apart, at signal-to-noise `snr`.
pub fn generate(kind: Kind, n: usize, step: f64, snr: f64, rng: &mut ChaCha8Rng) -> Case {
    let nf = n as f64;
    let hi = nf / 5.0;
    let phase: f64 = rng.gen();
    let t0 = 1.7e9;
    let mut periods = Vec::new();
    let signal: Vec<f64> = match kind {
        Kind::Sine | Kind::Outliers | Kind::Gaps | Kind::TrendSeason => {
            let p = period(rng, 6.0, hi);
            periods.push(p);
            (0..n).map(|i| sine(i as f64, p, phase)).collect()
        }
        Kind::Square => {
            let p = period(rng, 6.0, hi);
            periods.push(p);
            (0..n).map(|i| square(i as f64, p, phase)).collect()
        }
        Kind::Sawtooth => {
            let p = period(rng, 6.0, hi);
            periods.push(p);
            (0..n).map(|i| sawtooth(i as f64, p, phase)).collect()
        }
        Kind::Bursts => {
            let p = period(rng, 10.0, hi);
            let duty = 0.05 + 0.15 * rng.gen::<f64>();
            periods.push(p);
            (0..n).map(|i| burst(i as f64, p, phase, duty)).collect()
        }
        Kind::TwoPeriods => {
            let p1 = period(rng, 8.0, 30.0);
            let p2 = period(rng, 8.0 * p1, hi);
            periods.push(p2);
            periods.push(p1);
            (0..n)
                .map(|i| {
                    let t = i as f64;
                    burst(t, p1, phase, 0.2) + 0.5 * sine(t, p2, 0.3)
                })
                .collect()
        }
        Kind::WhiteNoise | Kind::RandomWalk | Kind::RedNoise | Kind::Trend | Kind::SingleBurst => {
            vec![0.0; n]
        }
    };
    let sig_std = std_dev(&signal);
    let sigma = if snr.is_finite() && sig_std > 0.0 {
        sig_std / snr
    } else {
        0.0
    };
    let mut values: Vec<f64> = signal.iter().map(|s| s + sigma * normal(rng)).collect();
    add_aperiodic(kind, &mut values, rng);
    if kind == Kind::TrendSeason {
        let slope = (3.0 + 3.0 * rng.gen::<f64>()) / nf;
        for (i, v) in values.iter_mut().enumerate() {
            *v += slope * i as f64;
        }
    }
    if kind == Kind::Outliers {
        for v in values.iter_mut() {
            if rng.gen::<f64>() < 0.01 {
                *v += if rng.gen::<bool>() { 10.0 } else { -10.0 };
            }
        }
    }
    let mut points: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (t0 + i as f64 * step, 50.0 + 10.0 * v))
        .collect();
    if kind == Kind::Gaps {
        punch_gaps(&mut points, rng);
    }
    Case {
        kind,
        snr: if periods.is_empty() {
            f64::INFINITY
        } else {
            snr
        },
        periods: periods.into_iter().map(|p| p * step).collect(),
        points,
        step,
    }
}

fn add_aperiodic(kind: Kind, values: &mut [f64], rng: &mut ChaCha8Rng) {
    let n = values.len();
    match kind {
        Kind::WhiteNoise => values.iter_mut().for_each(|v| *v = normal(rng)),
        Kind::RandomWalk => {
            let mut x = 0.0;
            for v in values.iter_mut() {
                x += normal(rng);
                *v = x;
            }
        }
        Kind::RedNoise => {
            let mut x = 0.0;
            for v in values.iter_mut() {
                x = 0.9 * x + normal(rng);
                *v = x;
            }
        }
        Kind::Trend => {
            let slope = 5.0 / n as f64;
            for (i, v) in values.iter_mut().enumerate() {
                *v = slope * i as f64 + normal(rng);
            }
        }
        Kind::SingleBurst => {
            let width = 5 + (rng.gen::<f64>() * 45.0) as usize;
            let at = (rng.gen::<f64>() * (n - width) as f64) as usize;
            for (i, v) in values.iter_mut().enumerate() {
                *v = 0.1 * normal(rng)
                    + if (at..at + width).contains(&i) {
                        5.0
                    } else {
                        0.0
                    };
            }
        }
        _ => {}
    }
}

/// Drops 3% of samples at random and cuts three gaps of 2 to 8 samples.
fn punch_gaps(points: &mut Vec<(f64, f64)>, rng: &mut ChaCha8Rng) {
    let n = points.len();
    let mut keep = vec![true; n];
    for k in keep.iter_mut() {
        if rng.gen::<f64>() < 0.03 {
            *k = false;
        }
    }
    for _ in 0..3 {
        let len = 2 + (rng.gen::<f64>() * 7.0) as usize;
        let at = 1 + (rng.gen::<f64>() * (n - len - 2) as f64) as usize;
        keep[at..at + len].iter_mut().for_each(|k| *k = false);
    }
    keep[0] = true;
    keep[n - 1] = true;
    let mut i = 0;
    points.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}
