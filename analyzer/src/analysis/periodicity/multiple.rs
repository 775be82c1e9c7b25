//! A candidate that is a harmonic of a longer period. A train of short pulses puts as
//! much power at twice its frequency as at it, so the strongest periodogram peak can
//! be a harmonic: spikes every 19 steps were reported at 9.4, where the
//! autocorrelation has a low hill of its own (0.12) and the pulses' period a high one
//! (0.59). A higher hill at a multiple is not proof by itself: a period that is not a
//! whole number of steps lines up best at the multiple nearest a whole lag (dips one
//! step wide every 11.5 steps meet at lag 23, only half of them at 11 or 12). Spread
//! over three steps, such pulses overlap at every multiple, while at a harmonic's lag,
//! where no pulse follows a pulse, the autocorrelation stays low; and a slow cycle
//! whose hill a faster one pulls down is judged on what that one leaves.

use super::acf::{self, Hill};
use super::prepare;
use super::significance::Whitened;
use super::{OCTAVE_HEIGHT, REPEAT_Z};

/// Most times a candidate's lag is multiplied: dips every 30.05 steps of the impulsive
/// development set were reported at their sixth harmonic (4.98 steps). A week's seven
/// days stay out of reach: a day is a period of its own, not a harmonic of the week.
const MAX_MULTIPLE: usize = 6;

/// How high the smoothed autocorrelation may stand at the candidate's lag, as a share
/// of the multiple's, for the multiple to be the period. On the impulsive development
/// set the lifts that were right stood at most 0.22 as high, those that took a period
/// not a whole number of steps to the multiple it lines up at, at least 0.64.
const SMOOTHED_SHARE: f64 = 0.4;

/// A candidate's period as its pulses show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lifted {
    /// The period, in steps.
    pub lag: f64,
    /// The autocorrelation hill at it.
    pub hill: Hill,
    /// How many times the candidate's lag it is (1 when it stands).
    pub multiple: usize,
}

/// What a candidate at lag `t` (its spectral estimate) with `hill` is. It stands
/// unless some multiple (2 to [`MAX_MULTIPLE`] times) has a hill (from `hill_at`) that
/// `hill` is less than [`OCTAVE_HEIGHT`] as high as and [`REPEAT_Z`] standard errors of
/// white noise's autocorrelation (1/√(n − lag)) below. Then the period is the shortest
/// multiple whose autocorrelation, on `x` smoothed over three steps, is at least
/// [`OCTAVE_HEIGHT`] as high as the highest multiple's, provided the smoothed autocorrelation at `t`
/// itself is under [`SMOOTHED_SHARE`] of it, in `x` and in what the periodogram's
/// (`w`) other significant cycles leave of it.
pub fn lift(
    x: &[f64],
    w: &Whitened,
    t: f64,
    hill: Hill,
    hill_at: impl Fn(f64) -> Option<Hill>,
) -> Lifted {
    let n = x.len() as f64;
    let stays = Lifted {
        lag: t,
        hill,
        multiple: 1,
    };
    let multiples: Vec<(usize, Hill)> = (2..=MAX_MULTIPLE)
        .filter_map(|m| Some((m, hill_at(m as f64 * t)?)))
        .collect();
    let clearer = |h: &Hill| {
        hill.height < OCTAVE_HEIGHT * h.height
            && h.height - hill.height >= REPEAT_Z / (n - h.lag).max(1.0).sqrt()
    };
    if !multiples.iter().any(|(_, h)| clearer(h)) {
        return stays;
    }
    let Some(i) = smoothed_choice(x, t, &multiples) else {
        return stays;
    };
    let longer: Vec<f64> = multiples.iter().map(|(m, _)| n / (*m as f64 * t)).collect();
    let others = other_cycles(w, n, &longer);
    if !others.is_empty() {
        let mut rest = x.to_vec();
        for period in others {
            prepare::remove_cycle(&mut rest, period);
        }
        if smoothed_choice(&rest, t, &multiples).is_none() {
            return stays;
        }
    }
    let (m, h) = multiples[i];
    Lifted {
        lag: m as f64 * t,
        hill: h,
        multiple: m,
    }
}

/// Which of `multiples` of lag `t` is the period by the autocorrelation of `x`
/// averaged over three steps, at each lag where that mean keeps a cycle of the lag
/// ([`three_step_mean_keeps`]; unsmoothed at shorter lags): the shortest at least
/// [`OCTAVE_HEIGHT`] as high as the highest, if the autocorrelation at `t` is under
/// [`SMOOTHED_SHARE`] of it.
fn smoothed_choice(x: &[f64], t: f64, multiples: &[(usize, Hill)]) -> Option<usize> {
    let smooth: Vec<f64> = x.windows(3).map(|w| (w[0] + w[1] + w[2]) / 3.0).collect();
    let (smooth, raw) = (WholeLags::of(&smooth), WholeLags::of(x));
    let at = |lag: f64| {
        if three_step_mean_keeps(lag) {
            smooth.at(lag)
        } else {
            raw.at(lag)
        }
    };
    let heights: Vec<f64> = multiples.iter().map(|(_, h)| at(h.lag)).collect();
    let highest = heights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let i = heights.iter().position(|&s| s >= OCTAVE_HEIGHT * highest)?;
    (at(t) < SMOOTHED_SHARE * heights[i]).then_some(i)
}

/// The autocorrelation of a series at the whole lags either side of a fractional one.
struct WholeLags<'a> {
    y: &'a [f64],
    mean: f64,
    spread: f64,
}

impl<'a> WholeLags<'a> {
    fn of(y: &'a [f64]) -> Self {
        let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
        let spread = acf::spread(y, mean);
        WholeLags { y, mean, spread }
    }

    /// Bias-corrected, at the whole lag on either side of `lag` that repeats better.
    fn at(&self, lag: f64) -> f64 {
        let n = self.y.len();
        [lag.floor() as usize, lag.ceil() as usize]
            .into_iter()
            .filter(|&l| l >= 1 && l < n)
            .map(|l| acf::about_with(self.y, self.mean, self.spread, l) * n as f64 / (n - l) as f64)
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// Whether a mean over three steps keeps at least half the power of a cycle of `t`
/// steps: (sin(3π/t) / (3 sin(π/t)))², 0.64 at 8 steps, 0.56 at 7, 0.44 at 6, 0.11 at
/// 4 and nothing at 3 (half at 6.44). A shorter lag is judged unsmoothed: the mean
/// would flatten its own cycle, and what is left of a pulse every 3.36 steps is the
/// pattern its sampling repeats every 10.08 (three cycles, nearly a whole lag), which
/// then looked like the period.
fn three_step_mean_keeps(t: f64) -> bool {
    let f = std::f64::consts::PI / t;
    let gain = (3.0 * f).sin() / (3.0 * f.sin());
    gain * gain >= 0.5
}

/// The periods (in steps) of the periodogram's significant peaks (at level
/// [`OTHER_CYCLE_P`]) that are not harmonics of one of the `longer` cycles (each given
/// as its number of cycles over the series). A slow cycle's autocorrelation at its own
/// lag is pulled down by a fast one out of phase there, and up at twice its lag where
/// the fast one is nearly back in phase (109 and 11.64 steps of equal size,
/// noise-free: 0.17 against 0.43), which is the pattern of a harmonic.
fn other_cycles(w: &Whitened, n: f64, longer: &[f64]) -> Vec<f64> {
    let bar = (w.count() as f64 / OTHER_CYCLE_P).ln();
    w.strongest_peaks(OTHER_PEAKS)
        .into_iter()
        .filter(|peak| peak.ratio >= bar)
        .filter(|peak| {
            !longer.iter().any(|&k| {
                let j = (peak.k as f64 / k).round();
                (peak.k as f64 - j * k).abs() <= 1.0
            })
        })
        .map(|peak| n / peak.k as f64)
        .collect()
}

/// Level at which a periodogram peak is another cycle (Bonferroni over the tested
/// ordinates, which are unit exponentials under noise).
const OTHER_CYCLE_P: f64 = 0.01;

/// Strongest periodogram peaks looked at for other cycles.
const OTHER_PEAKS: usize = 12;

#[cfg(test)]
mod tests {
    use super::super::{detect_on_grid, PeriodConfig};

    /// Periods found in `values` on a 15 s grid, in steps.
    fn steps_found(values: &[f64]) -> Vec<f64> {
        detect_on_grid(values, 15.0, &PeriodConfig::default())
            .periods()
            .iter()
            .map(|p| p.period_seconds / 15.0)
            .collect()
    }

    fn near(found: &[f64], steps: f64) -> bool {
        found.iter().any(|t| (t - steps).abs() <= 0.02 * steps)
    }

    /// Spikes one step wide every 19.01 steps over noise, 9 cycles (the impulsive
    /// development set's series of seed 11210066, rounded to 0.01). The periodogram's
    /// strongest peak is their second harmonic, which was reported alone (9.39 steps).
    const SPIKES_EVERY_19: [f64; 180] = [
        50.86, 50.70, 50.79, 50.07, 49.93, 50.76, 50.84, 50.30, 50.67, 50.36, 60.58, 50.60, 50.50,
        50.64, 50.65, 49.45, 49.69, 50.03, 49.40, 50.24, 51.70, 49.49, 50.79, 51.23, 49.69, 49.84,
        49.85, 50.01, 50.84, 61.08, 50.45, 51.07, 50.26, 50.09, 49.99, 48.85, 50.20, 50.17, 50.04,
        50.66, 51.06, 51.30, 50.81, 50.83, 50.29, 49.57, 49.03, 50.09, 59.08, 51.48, 51.00, 50.79,
        50.50, 50.70, 49.29, 50.06, 51.69, 50.45, 50.50, 50.36, 50.55, 50.23, 50.69, 50.65, 48.46,
        50.28, 50.63, 60.09, 50.53, 50.65, 50.16, 50.86, 51.48, 51.04, 50.13, 51.16, 51.27, 50.50,
        50.45, 51.10, 50.25, 50.62, 50.30, 50.60, 50.68, 49.71, 60.09, 50.19, 51.04, 49.27, 51.34,
        50.94, 50.80, 50.87, 51.33, 50.24, 51.39, 49.99, 50.32, 50.77, 49.96, 50.39, 50.59, 49.84,
        49.33, 60.39, 50.59, 49.24, 49.51, 49.67, 50.11, 51.18, 49.80, 50.76, 50.42, 50.37, 49.25,
        50.47, 50.59, 49.95, 49.88, 50.59, 50.72, 50.40, 60.73, 49.65, 50.98, 50.68, 49.17, 50.38,
        50.09, 49.68, 51.09, 50.69, 50.70, 49.22, 50.42, 50.94, 50.67, 50.42, 50.25, 51.87, 51.25,
        60.12, 51.93, 50.58, 51.14, 51.43, 50.59, 50.86, 50.41, 50.84, 50.88, 50.69, 50.33, 50.45,
        48.89, 50.93, 50.85, 50.69, 50.93, 51.02, 60.65, 50.64, 50.07, 50.53, 50.40, 51.01, 50.94,
        50.91, 50.37, 50.57, 51.20, 51.17, 50.39, 50.24, 49.44, 49.98, 50.00, 50.81,
    ];

    #[test]
    fn spikes_are_reported_at_their_period_not_at_its_half() {
        let found = steps_found(&SPIKES_EVERY_19);
        assert!(near(&found, 19.01), "{found:?}");
        assert!(!near(&found, 19.01 / 2.0), "{found:?}");
    }

    /// Dips one step wide every 11.5 steps, 12 cycles: they line up with themselves
    /// only every other dip (lags 11 and 12 each hold half of them, 23 all), yet their
    /// period is 11.5 steps, not 23.
    #[test]
    fn a_period_of_a_half_step_is_not_doubled() {
        let dips: Vec<f64> = (0..138)
            .map(|i| {
                let dip = (0..12).any(|k| (k as f64 * 11.5 + 0.7).round() as usize == i);
                let wobble = ((i * 7919) % 13) as f64 / 13.0 - 0.5;
                let level = if dip { 0.2 } else { 0.9 };
                level + 0.02 * wobble
            })
            .collect();
        let found = steps_found(&dips);
        assert!(near(&found, 11.5), "{found:?}");
        assert!(!near(&found, 23.0), "{found:?}");
    }

    /// A job whose cycle is a few scrapes long, watched for over an hour: a dip one
    /// step wide every 3.36, 3.39 or 3.44 steps, 320 cycles, in noise. Their sampling
    /// repeats every 10.08, 16.95 and 6.88 steps (3, 5 and 2 cycles, each nearly a
    /// whole number of steps), where the autocorrelation stands highest; a mean over
    /// three steps flattens the cycle itself, and on such means the repeats were taken
    /// for the period.
    #[test]
    fn a_cycle_of_a_few_steps_is_not_taken_for_its_sampling_repeat() {
        use rand::{Rng, SeedableRng};
        for (period, repeat) in [(3.36, 3.0), (3.39, 5.0), (3.44, 2.0)] {
            for seed in 0..3u64 {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let dips: Vec<f64> = (0..1080)
                    .map(|i| {
                        let u = (i as f64 / period + 0.4).fract();
                        let (u1, u2): (f64, f64) = (rng.gen::<f64>().max(1e-300), rng.gen());
                        let noise = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                        (if u < 1.0 / period { 0.1 } else { 0.9 }) + 0.12 * noise
                    })
                    .collect();
                let found = steps_found(&dips);
                assert!(near(&found, period), "{period}, seed {seed}: {found:?}");
                assert!(
                    !near(&found, repeat * period),
                    "{period}, seed {seed}: {found:?}"
                );
            }
        }
    }

    /// A slow cycle of 109.03 steps under a stronger fast one of 11.643, in noise
    /// (10,080 points): at lag 109 the fast cycle is out of phase and pulls the
    /// autocorrelation down (noise-free, -0.10), at 218 it is nearly back (0.25), the
    /// pattern of a harmonic. The slow cycle is kept, not doubled.
    #[test]
    fn a_slow_cycle_under_a_fast_one_is_not_doubled() {
        use rand::{Rng, SeedableRng};
        let tau = std::f64::consts::TAU;
        for seed in 0..6u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let y: Vec<f64> = (0..10_080)
                .map(|i| {
                    let t = i as f64;
                    let u1: f64 = rng.gen::<f64>().max(1e-300);
                    let u2: f64 = rng.gen();
                    let noise = (-2.0 * u1.ln()).sqrt() * (tau * u2).cos();
                    (tau * t / 109.03).sin() + 1.4 * (tau * t / 11.643).sin() + 1.1 * noise
                })
                .collect();
            let found = steps_found(&y);
            assert!(
                near(&found, 109.03) && near(&found, 11.643),
                "seed {seed}: {found:?}"
            );
            assert!(!near(&found, 218.06), "seed {seed}: {found:?}");
        }
    }
}
