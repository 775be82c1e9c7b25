//! Generator of the impulsive periodicity suite: the GPU shapes a single periodogram
//! peak misses (short dips, short spikes, sawtooth ramps, training-step bursts) and a
//! sine for reference, at 6–20 cycles on a 15 s grid, SNR 1–10, with gaps, outliers and
//! trends; and the aperiodic kinds a detector must not call periodic.
//!
//! Written for this benchmark only (issue 11); independent of the labelled suite in
//! `analyzer/tests/synthetic`, so that neither set of series tunes the other.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Seconds between samples.
pub const STEP: f64 = 15.0;

/// A periodic shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A sine (the easy reference).
    Sine,
    /// A busy level with short periodic dips (checkpoints, evaluation), duty 2–10%.
    Dips,
    /// A low level with short periodic spikes (a cron burst, batch inference), 2–10%.
    Spikes,
    /// A ramp that grows and is freed at once (memory).
    Sawtooth,
    /// Training steps: a busy window (20–40% of the cycle) of alternating sub-steps,
    /// idle in between (data loading).
    StepBursts,
}

impl Shape {
    /// Every shape, in table order.
    pub const ALL: [Shape; 5] = [
        Shape::Sine,
        Shape::Dips,
        Shape::Spikes,
        Shape::Sawtooth,
        Shape::StepBursts,
    ];
}

/// A series without a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aperiodic {
    /// Gaussian white noise.
    WhiteNoise,
    /// A Gaussian random walk.
    RandomWalk,
    /// AR(1) with φ uniform in 0.5–0.95.
    Ar1,
    /// A straight line plus noise.
    Trend,
    /// One to four level shifts plus noise.
    Steps,
    /// One burst (2–10% of the window) on a noisy baseline.
    SingleBurst,
}

impl Aperiodic {
    /// Every kind, in table order.
    pub const ALL: [Aperiodic; 6] = [
        Aperiodic::WhiteNoise,
        Aperiodic::RandomWalk,
        Aperiodic::Ar1,
        Aperiodic::Trend,
        Aperiodic::Steps,
        Aperiodic::SingleBurst,
    ];
}

/// One generated series.
#[derive(Debug, Clone)]
pub struct Case {
    /// The true period in steps (`None` when aperiodic).
    pub period_steps: Option<f64>,
    /// Samples (unix seconds, value); missing samples are gaps.
    pub points: Vec<(f64, f64)>,
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.gen::<f64>().max(1e-300);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn log_uniform(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.gen::<f64>() * (hi.ln() - lo.ln())).exp()
}

fn std_dev(x: &[f64]) -> f64 {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt()
}

/// The range periods are drawn from, log-uniformly, in steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Periods {
    /// Shortest period.
    pub lo: f64,
    /// Longest period.
    pub hi: f64,
}

impl Periods {
    /// 8–240 steps (2 min to 1 h at 15 s): the suite's range.
    pub const SUITE: Periods = Periods { lo: 8.0, hi: 240.0 };

    /// `LO-HI` in steps, both at least 2.5 (the detector's shortest) and LO ≤ HI.
    pub fn parse(text: &str) -> Result<Periods, String> {
        let bad = || format!("--periods {text:?}: want LO-HI in steps, 2.5 <= LO <= HI");
        let (lo, hi) = text.split_once('-').ok_or_else(bad)?;
        let (lo, hi): (f64, f64) = (
            lo.parse().map_err(|_| bad())?,
            hi.parse().map_err(|_| bad())?,
        );
        (2.5 <= lo && lo <= hi && hi.is_finite())
            .then_some(Periods { lo, hi })
            .ok_or_else(bad)
    }

    /// A period in the range, not a whole number of steps.
    fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        log_uniform(rng, self.lo, self.hi)
    }
}

/// The noise-free shape at step `i`: `u` is the phase in cycles (0–1).
fn shape_at(shape: Shape, u: f64, i: usize, duty: f64) -> f64 {
    match shape {
        Shape::Sine => (2.0 * std::f64::consts::PI * u).sin(),
        Shape::Dips => {
            if u < duty {
                0.1
            } else {
                0.9
            }
        }
        Shape::Spikes => {
            if u < duty {
                1.0
            } else {
                0.05
            }
        }
        Shape::Sawtooth => 0.2 + 0.7 * u,
        Shape::StepBursts => {
            if u < duty {
                if i.is_multiple_of(2) {
                    1.0
                } else {
                    0.6
                }
            } else {
                0.1
            }
        }
    }
}

/// A periodic series of `shape` showing `cycles` cycles (plus up to half a cycle) of a
/// period drawn from `periods`.
pub fn periodic(shape: Shape, cycles: f64, periods: Periods, rng: &mut ChaCha8Rng) -> Case {
    let period = periods.draw(rng);
    let n = ((cycles + 0.5 * rng.gen::<f64>()) * period).ceil() as usize;
    let phase: f64 = rng.gen();
    // At least one sample per dip or spike, so every cycle shows it.
    let duty = match shape {
        Shape::Dips | Shape::Spikes => (0.02 + 0.08 * rng.gen::<f64>()).max(1.0 / period),
        Shape::StepBursts => 0.2 + 0.2 * rng.gen::<f64>(),
        _ => 0.0,
    };
    let signal: Vec<f64> = (0..n)
        .map(|i| shape_at(shape, (i as f64 / period + phase).fract(), i, duty))
        .collect();
    let snr = log_uniform(rng, 1.0, 10.0);
    let values = with_noise(&signal, std_dev(&signal) / snr, rng);
    Case {
        period_steps: Some(period),
        points: impair(values, std_dev(&signal), rng),
    }
}

/// An aperiodic series as long as a periodic one of 6–20 cycles of a period drawn from
/// `periods`.
pub fn aperiodic(kind: Aperiodic, periods: Periods, rng: &mut ChaCha8Rng) -> Case {
    let n = ((6.0 + 14.0 * rng.gen::<f64>()) * periods.draw(rng)).ceil() as usize;
    let mut x = vec![0.0; n];
    match kind {
        Aperiodic::WhiteNoise => x.iter_mut().for_each(|v| *v = normal(rng)),
        Aperiodic::RandomWalk => {
            let mut level = 0.0;
            for v in x.iter_mut() {
                level += normal(rng);
                *v = level;
            }
        }
        Aperiodic::Ar1 => {
            let phi = 0.5 + 0.45 * rng.gen::<f64>();
            let mut level = 0.0;
            for v in x.iter_mut() {
                level = phi * level + normal(rng);
                *v = level;
            }
        }
        Aperiodic::Trend => {
            let rise = (1.0 + 4.0 * rng.gen::<f64>()) * if rng.gen() { 1.0 } else { -1.0 };
            for (i, v) in x.iter_mut().enumerate() {
                *v = rise * i as f64 / n as f64 + normal(rng);
            }
        }
        Aperiodic::Steps => {
            let shifts: Vec<(usize, f64)> = (0..rng.gen_range(1..=4))
                .map(|_| {
                    (
                        rng.gen_range(0..n),
                        (1.0 + 3.0 * rng.gen::<f64>()) * sign(rng),
                    )
                })
                .collect();
            for (i, v) in x.iter_mut().enumerate() {
                let level: f64 = shifts.iter().filter(|(at, _)| i >= *at).map(|s| s.1).sum();
                *v = level + normal(rng);
            }
        }
        Aperiodic::SingleBurst => {
            let width = ((0.02 + 0.08 * rng.gen::<f64>()) * n as f64).ceil() as usize;
            let at = rng.gen_range(0..n - width.min(n - 1));
            let height = 3.0 + 5.0 * rng.gen::<f64>();
            for (i, v) in x.iter_mut().enumerate() {
                let burst = if (at..at + width).contains(&i) {
                    height
                } else {
                    0.0
                };
                *v = burst + normal(rng);
            }
        }
    }
    Case {
        period_steps: None,
        points: impair(x, 1.0, rng),
    }
}

fn sign(rng: &mut ChaCha8Rng) -> f64 {
    if rng.gen() {
        1.0
    } else {
        -1.0
    }
}

fn with_noise(signal: &[f64], sigma: f64, rng: &mut ChaCha8Rng) -> Vec<f64> {
    signal.iter().map(|s| s + sigma * normal(rng)).collect()
}

/// Each with probability 1/2: a linear trend (a rise of 0.5–2 `scale` over the
/// window), outliers (0.5% of samples moved by ±8 `scale`), gaps (3% of samples
/// missing and one run of 2–8 missing steps, which the grid fills). Values are then
/// put around 50 with timestamps 15 s apart.
fn impair(mut x: Vec<f64>, scale: f64, rng: &mut ChaCha8Rng) -> Vec<(f64, f64)> {
    let n = x.len();
    if rng.gen::<bool>() {
        let rise = (0.5 + 1.5 * rng.gen::<f64>()) * scale * sign(rng);
        for (i, v) in x.iter_mut().enumerate() {
            *v += rise * i as f64 / n as f64;
        }
    }
    if rng.gen::<bool>() {
        for v in x.iter_mut() {
            if rng.gen::<f64>() < 0.005 {
                *v += 8.0 * scale * sign(rng);
            }
        }
    }
    let t0 = 1.767e9;
    let mut points: Vec<(f64, f64)> = x
        .iter()
        .enumerate()
        .map(|(i, v)| (t0 + i as f64 * STEP, 50.0 + 10.0 * v))
        .collect();
    if rng.gen::<bool>() && n > 40 {
        let run = rng.gen_range(2..=8);
        let at = rng.gen_range(1..n - run - 1);
        points.drain(at..at + run);
        let keep_first_last = points.len() - 1;
        let mut i = 0;
        points.retain(|_| {
            i += 1;
            i == 1 || i > keep_first_last || rng.gen::<f64>() >= 0.03
        });
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_range_is_lo_dash_hi_in_steps_from_the_shortest_searched() {
        assert_eq!(Periods::parse("3-8"), Ok(Periods { lo: 3.0, hi: 8.0 }));
        for bad in ["8", "8-3", "2-8", "a-8", "3-inf", "-"] {
            assert!(Periods::parse(bad).is_err(), "{bad}");
        }
    }
}
