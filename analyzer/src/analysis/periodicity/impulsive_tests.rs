//! The shapes a single periodogram peak misses, at 6 and 12 cycles, and the aperiodic
//! kinds that must stay without a period (issue 11). Deterministic seeds; periods that
//! are not whole steps; noise at SNR 2 (signal std over noise std).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{detect_on_grid, PeriodConfig, PeriodOutcome};

const STEP: f64 = 15.0;

/// A standard normal draw (Box-Muller).
pub(super) fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.gen::<f64>().max(1e-300);
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn std_dev(x: &[f64]) -> f64 {
    let m = x.iter().sum::<f64>() / x.len() as f64;
    (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
}

/// `cycles` cycles of `shape` (a function of the phase, 0–1) at `period` steps, plus
/// Gaussian noise at SNR 2.
fn periodic(shape: impl Fn(f64) -> f64, period: f64, cycles: f64, seed: u64) -> Vec<f64> {
    periodic_at_snr(shape, period, cycles, seed, 2.0)
}

/// As [`periodic`], at signal-to-noise ratio `snr` (signal std over noise std).
fn periodic_at_snr(
    shape: impl Fn(f64) -> f64,
    period: f64,
    cycles: f64,
    seed: u64,
    snr: f64,
) -> Vec<f64> {
    let n = (cycles * period).ceil() as usize;
    let signal: Vec<f64> = (0..n)
        .map(|i| shape((i as f64 / period + 0.3).fract()))
        .collect();
    with_noise(&signal, snr, seed)
}

/// `signal` plus normal noise of its deviation over `snr`, drawn from `seed`.
fn with_noise(signal: &[f64], snr: f64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sigma = std_dev(signal) / snr;
    signal
        .iter()
        .map(|s| s + sigma * normal(&mut rng))
        .collect()
}

/// Busy at 0.9 with a dip to 0.1 for 5% of each cycle (a checkpoint).
fn dips(u: f64) -> f64 {
    if u < 0.05 {
        0.1
    } else {
        0.9
    }
}

/// Idle at 0.05 with a spike to 1 for 4% of each cycle (a cron burst).
fn spikes(u: f64) -> f64 {
    if u < 0.04 {
        1.0
    } else {
        0.05
    }
}

/// Memory growing from 0.2 to 0.9 and freed at once.
fn sawtooth(u: f64) -> f64 {
    0.2 + 0.7 * u
}

/// A busy window of 30% of the cycle with two levels of sub-steps, idle otherwise.
fn step_bursts(u: f64) -> f64 {
    if u < 0.3 {
        if (u * 40.0) as usize % 2 == 0 {
            1.0
        } else {
            0.6
        }
    } else {
        0.1
    }
}

fn assert_found(name: &str, values: &[f64], period: f64) {
    let out = detect_on_grid(values, STEP, &PeriodConfig::default());
    let truth = period * STEP;
    assert!(
        out.periods()
            .iter()
            .any(|p| (p.period_seconds - truth).abs() <= 0.02 * truth),
        "{name}: {truth} s not found within 2% in {out:?}"
    );
}

/// A noise-free shape: the value at a phase (0–1) of the cycle.
type Shape = fn(f64) -> f64;

fn assert_impulsive_found_at(cycles: f64) {
    let shapes: [(&str, Shape); 4] = [
        ("dips", dips),
        ("spikes", spikes),
        ("sawtooth", sawtooth),
        ("step bursts", step_bursts),
    ];
    for (name, shape) in shapes {
        for (period, seed) in [(41.3, 1), (97.6, 2)] {
            let y = periodic(shape, period, cycles, seed);
            assert_found(&format!("{name}, {cycles} cycles of {period}"), &y, period);
        }
    }
}

#[test]
fn impulsive_shapes_are_found_at_6_cycles() {
    assert_impulsive_found_at(6.0);
}

#[test]
fn impulsive_shapes_are_found_at_12_cycles() {
    assert_impulsive_found_at(12.0);
}

/// Found within 2%, without asserting: for counting over many series.
fn found(values: &[f64], period: f64) -> bool {
    let truth = period * STEP;
    detect_on_grid(values, STEP, &PeriodConfig::default())
        .periods()
        .iter()
        .any(|p| (p.period_seconds - truth).abs() <= 0.02 * truth)
}

/// Short dips and spikes (about a step wide) at exactly 6 cycles of 140–220 points,
/// SNR 1.5: their harmonic sums mostly miss the corrected level, and the series'
/// repeats at 1, 2 and 3 periods confirm them. Before that confirmation 30 of these 72
/// were found; with it 57.
#[test]
fn short_pulses_at_6_cycles_are_mostly_found() {
    let shapes: [Shape; 2] = [dips, spikes];
    let mut hits = 0;
    let mut total = 0;
    for shape in shapes {
        for period in [23.6, 28.2, 35.3] {
            for seed in 101..=112u64 {
                let y = periodic_at_snr(shape, period, 6.0, seed, 1.5);
                hits += usize::from(found(&y, period));
                total += 1;
            }
        }
    }
    assert!(3 * hits >= 2 * total, "{hits} of {total} found");
}

/// Pulses one step wide every 8–12 steps, 6 cycles (50–75 points), SNR 4: their power
/// is spread evenly up to Nyquist, so neither a peak nor a harmonic sum stands out of
/// the whitened spectrum, though every pulse stands out of the noise. Found as a train
/// of events (`events`): 35 of these 36; without trains, 20.
#[test]
fn pulses_one_step_wide_at_6_cycles_are_found_as_trains() {
    let mut hits = 0;
    let mut total = 0;
    for (level, pulse) in [(0.9, 0.1), (0.05, 1.0)] {
        for period in [8.3f64, 9.6, 11.4] {
            for seed in 1..=6u64 {
                let n = (0.7 + 5.0 * period).round() as usize + (period * 0.6) as usize;
                let y = one_step_pulses(level, pulse, period, n, 4.0, seed);
                hits += usize::from(found(&y, period));
                total += 1;
            }
        }
    }
    assert!(hits * 10 >= total * 9, "{hits} of {total} found");
}

/// Inference requests that arrive at random (a spike one step wide where a request
/// lands, on average every 15 steps, over 300-1,500 steps): events at no period, which
/// the trains must not line up. One of these 40 (seed 26) shows a period in its
/// spectrum, with or without the trains; a comb loosened to 45% and a jitter of 30%
/// makes up more.
#[test]
fn spikes_at_random_times_have_no_period() {
    let mut made_up = Vec::new();
    for seed in 0..40u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(500 + seed);
        let n = rng.gen_range(300..1500);
        let y: Vec<f64> = (0..n)
            .map(|_| {
                let spike = if rng.gen::<f64>() < 1.0 / 15.0 {
                    1.0
                } else {
                    0.05
                };
                spike + 0.02 * normal(&mut rng)
            })
            .collect();
        let out = detect_on_grid(&y, STEP, &PeriodConfig::default());
        if !out.periods().is_empty() {
            made_up.push((seed, out));
        }
    }
    assert!(made_up.len() <= 1, "made-up periods: {made_up:?}");
}

/// Series of `n` points from `next(previous, index, rng)`, drawn from `seed`.
pub(super) fn walk(
    n: usize,
    seed: u64,
    next: impl Fn(f64, usize, &mut ChaCha8Rng) -> f64,
) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v = 0.0;
    (0..n)
        .map(|i| {
            v = next(v, i, &mut rng);
            v
        })
        .collect()
}

#[test]
fn aperiodic_kinds_have_no_period() {
    type Kind = fn(f64, usize, &mut ChaCha8Rng) -> f64;
    let kinds: [(&str, Kind); 6] = [
        ("white noise", |_, _, r| normal(r)),
        ("random walk", |v, _, r| v + normal(r)),
        ("AR(1) 0.5", |v, _, r| 0.5 * v + normal(r)),
        ("AR(1) 0.95", |v, _, r| 0.95 * v + normal(r)),
        ("trend", |_, i, r| 0.01 * i as f64 + normal(r)),
        ("single burst", |_, i, r| {
            if (200..230).contains(&i) {
                5.0 + normal(r)
            } else {
                normal(r)
            }
        }),
    ];
    for (name, next) in kinds {
        for (n, seed) in [(120, 14), (200, 15), (300, 10), (700, 11), (1500, 12)] {
            let y = walk(n, seed, next);
            let out = detect_on_grid(&y, STEP, &PeriodConfig::default());
            assert!(out.periods().is_empty(), "{name}, n {n}: made-up {out:?}");
        }
    }
    // Level shifts: three steps at fixed places.
    let steps = walk(800, 13, |_, i, r| {
        [(150, 2.0), (420, -3.0), (610, 1.5)]
            .iter()
            .filter(|(at, _)| i >= *at)
            .map(|s| s.1)
            .sum::<f64>()
            + normal(r)
    });
    let out = detect_on_grid(&steps, STEP, &PeriodConfig::default());
    assert!(out.periods().is_empty(), "steps: made-up {out:?}");
}

/// A harmonic-sum candidate let through only for the repeat check is no significant
/// peak: noise that fails the check is reported as having none, not as a significant
/// peak the autocorrelation does not repeat (16 of these 100 were, before).
#[test]
fn noise_is_not_said_to_have_a_significant_peak() {
    let mut blamed = 0;
    for seed in 20..120 {
        let y = walk(300, seed, |_, _, r| normal(r));
        // (The rare false positive, about 1%, is counted by the suite's tables.)
        let out = detect_on_grid(&y, STEP, &PeriodConfig::default());
        if let super::PeriodOutcome::NoPeriod { reason } = out {
            blamed += usize::from(reason.contains("not repeated"));
        }
    }
    assert!(blamed <= 5, "{blamed} of 100 blamed on a significant peak");
}

/// Pulses one step wide every 8–14 steps, 6 cycles (50–90 points), SNR 1.5: each pulse
/// stands about 3 to 4 noise deviations out, too few for a train of events, yet summed
/// over a comb of six teeth they stand out (`comb`): 38 of these 64 are found, 23
/// without the comb.
#[test]
fn weak_pulses_one_step_wide_at_6_cycles_are_found_on_a_comb() {
    let mut hits = 0;
    let mut total = 0;
    for (level, pulse) in [(0.9, 0.1), (0.05, 1.0)] {
        for period in [8.3f64, 9.6, 11.4, 13.7] {
            for seed in 1..=8u64 {
                let n = (6.2 * period).ceil() as usize;
                let y = one_step_pulses(level, pulse, period, n, 1.5, 700 + seed);
                hits += usize::from(found(&y, period));
                total += 1;
            }
        }
    }
    assert!(2 * hits >= total, "{hits} of {total} found");
}

/// `n` values at `level` with six pulses to `pulse`, one step wide, at 0.7 + k·`period`
/// (rounded), and normal noise of the signal's deviation over `snr`.
fn one_step_pulses(level: f64, pulse: f64, period: f64, n: usize, snr: f64, seed: u64) -> Vec<f64> {
    let at: Vec<usize> = (0..6)
        .map(|k| (0.7 + k as f64 * period).round() as usize)
        .collect();
    let signal: Vec<f64> = (0..n)
        .map(|i| if at.contains(&i) { pulse } else { level })
        .collect();
    with_noise(&signal, snr, seed)
}

/// Fast sines of 3.2 to 4.8 steps, 9 cycles (29-44 points), SNR 1. A harmonic sum
/// halved its lag while any hill stood in the window around the half, and the window
/// of a lag near 2 steps reaches the hill at the lag twice as long: 6 of these 40 were
/// reported at 1.86 to 2.22 steps (half their period, under the 2.5 searched), and 12
/// found. None may be reported under 2.5 steps; 21 are found now.
#[test]
fn a_fast_cycle_is_never_reported_faster_than_the_shortest_period_searched() {
    let sine = |u: f64| (2.0 * std::f64::consts::PI * u).sin();
    let mut hits = 0;
    for i in 0..40u64 {
        let period = 3.2 + 0.04 * i as f64;
        let y = periodic_at_snr(sine, period, 9.0, 300 + i, 1.0);
        let out = detect_on_grid(&y, STEP, &PeriodConfig::default());
        for p in out.periods() {
            assert!(p.period_seconds >= 2.5 * STEP, "{period} steps: {out:?}");
        }
        hits += usize::from(found(&y, period));
    }
    assert!(hits >= 15, "{hits} of 40 found");
}

/// How many of six cycles of a sawtooth and of a sine, each at 3, 3.2, …, 4.8 steps
/// (18-29 points; a minute's cron at a 15 s scrape, watched for six minutes), at `snr`,
/// are found; none may be answered "too short".
fn six_fast_cycles_found(snr: f64) -> usize {
    let sine = |u: f64| (2.0 * std::f64::consts::PI * u).sin();
    let shapes: [Shape; 2] = [sawtooth, sine];
    let mut hits = 0;
    for shape in shapes {
        for i in 0..10u64 {
            let period = 3.0 + 0.2 * i as f64;
            let y = periodic_at_snr(shape, period, 6.0, 400 + i, snr);
            let out = detect_on_grid(&y, STEP, &PeriodConfig::default());
            if let PeriodOutcome::NoPeriod { reason } = &out {
                assert!(!reason.starts_with("too short"), "{period} steps: {reason}");
            }
            hits += usize::from(found(&y, period));
        }
    }
    hits
}

/// Fewer than 32 points were answered "too short"; six cycles of the shortest period
/// searched (2.5 steps) are analysed now. At SNR 3, 12 of these 20 are found.
#[test]
fn six_cycles_of_a_fast_period_are_analysed() {
    let hits = six_fast_cycles_found(3.0);
    assert!(hits >= 11, "{hits} of 20 found");
}

/// A harmonic sum's fundamental, halved to where the series repeats, is refined from
/// the lag of the hill found there when the two are more than a quarter of a Fourier
/// bin apart: a sine of 3 steps in 18 points, summed at 5.14 steps and halved to 2.57,
/// was refined to 2.77 steps beside its hill at 3. At SNR 10, 15 of these 20 were found
/// and 17 are now.
#[test]
fn a_fast_harmonic_sum_is_refined_where_the_series_repeats() {
    let hits = six_fast_cycles_found(10.0);
    assert!(hits >= 17, "{hits} of 20 found");
}

/// How many of 320 cycles of a sawtooth and of step bursts, each at 3.31, 3.71, …, 7.31
/// steps (1,060-2,340 points: a minute's cycle scraped every 15 s, watched for five
/// hours), are reported with their period first.
fn long_fast_cycles_reported_first() -> usize {
    let shapes: [Shape; 2] = [sawtooth, step_bursts];
    let mut hits = 0;
    for shape in shapes {
        for i in 0..11u64 {
            let period = 3.31 + 0.4 * i as f64;
            let y = periodic(shape, period, 320.0, 500 + i);
            let series = crate::series::Series::from_values(&y, STEP);
            let out = super::detect_periods(&series, &PeriodConfig::default());
            let truth = period * STEP;
            let first = out.periods().first().map(|p| p.period_seconds);
            hits += usize::from(first.is_some_and(|t| (t - truth).abs() <= 0.02 * truth));
        }
    }
    hits
}

/// Over hundreds of cycles, a harmonic above the Nyquist frequency folded back below
/// it was reported before the cycle (a sawtooth of 4.57 steps at 8.0 steps, its fourth
/// harmonic folded); folds of a reported period are not reported now
/// ([`super::fractions`]). Before, 8 of these 22 were reported first; now 19.
#[test]
fn a_fast_cycle_is_reported_before_its_folded_harmonics() {
    let hits = long_fast_cycles_reported_first();
    assert!(hits >= 18, "{hits} of 22 reported first");
}

/// Of 200 sines of 3 to 3 + `width` steps, 6-9 cycles, SNR 1.5 (noise from `seed`
/// on): how many are found within 2%, and the periods and answers of those reported
/// within 20% of `wrong` times their period.
fn short_sines(width: f64, seed: u64, wrong: f64) -> (usize, Vec<(f64, Vec<f64>)>) {
    let sine = |u: f64| (2.0 * std::f64::consts::PI * u).sin();
    let (mut found, mut mistaken) = (0, Vec::new());
    for i in 0..200u64 {
        let period = 3.0 + width * (i as f64 * 0.618).fract();
        let cycles = 6.0 + (i % 4) as f64;
        let y = periodic_at_snr(sine, period, cycles, seed + i, 1.5);
        let out = detect_on_grid(&y, STEP, &PeriodConfig::default());
        let steps: Vec<f64> = out
            .periods()
            .iter()
            .map(|p| p.period_seconds / STEP)
            .collect();
        found += usize::from(steps.iter().any(|t| (t - period).abs() <= 0.02 * period));
        let at = wrong * period;
        if steps.iter().any(|t| (t - at).abs() <= 0.2 * at) {
            mistaken.push((period, steps));
        }
    }
    (found, mistaken)
}

/// A sine has no harmonic, so a period near half of its own is the detector's error: a
/// harmonic sum's fundamental was halved on the hill that the window of the half,
/// widened to whole lags, reached at the whole period (a sine of 5.17 steps in 49
/// points reported at 2.58). 7 of these 200 sines (3-8 steps) were reported at about
/// half their period, and 168 at it; none and 171 after, 178 with the rule below.
#[test]
fn a_sine_is_not_reported_at_half_its_period() {
    let (found, halved) = short_sines(5.0, 700, 0.5);
    assert!(halved.is_empty(), "reported at about half: {halved:?}");
    assert!(found >= 177, "{found} of 200 found");
}

/// A sine has no cycle at twice its period, but read at whole lags, one of 3-4 steps
/// repeats better there (a sine of 3.38 steps: 0.76 of its height at lag 3, 0.90 at
/// 7), and a harmonic sum whose fundamental carried no power, passing on the sine as
/// its second harmonic, kept the double. Of these 200 sines (3-4 steps), 21 were
/// reported at about twice their period and 111 at it; none and 126 now.
#[test]
fn a_fast_sine_is_not_reported_at_twice_its_period() {
    let (found, doubled) = short_sines(1.0, 900, 2.0);
    assert!(doubled.is_empty(), "reported at about twice: {doubled:?}");
    assert!(found >= 125, "{found} of 200 found");
}

/// Six cycles of a few steps (3.2-7.8 steps, 20-50 points) of narrow dips and spikes
/// (a step wide), a sawtooth, step bursts and a sine, SNR 2, found with and without the
/// fit in time ([`super::regression`]): the spectrum's bins are a cycle over the window
/// wide, too coarse for them.
fn six_cycles_of_a_few_steps_found(fit_in_time: bool) -> usize {
    let config = PeriodConfig {
        fit_in_time,
        ..PeriodConfig::default()
    };
    let mut hits = 0;
    for kind in 0..5u64 {
        for i in 0..20u64 {
            let period = 3.2 + 4.6 * (i as f64 * 0.618).fract();
            let width = 1.0 / period;
            let shape = move |u: f64| match kind {
                0 => f64::from(u >= width),
                1 => f64::from(u < width),
                2 => sawtooth(u),
                3 => step_bursts(u),
                _ => (2.0 * std::f64::consts::PI * u).sin(),
            };
            let y = periodic_at_snr(shape, period, 6.0, 1000 + 20 * kind + i, 2.0);
            let truth = period * STEP;
            hits += usize::from(
                detect_on_grid(&y, STEP, &config)
                    .periods()
                    .iter()
                    .any(|p| (p.period_seconds - truth).abs() <= 0.02 * truth),
            );
        }
    }
    hits
}

/// Of these 100, 53 are found without the fit in time and 75 with it.
#[test]
fn six_cycles_of_a_few_steps_are_found_by_a_fit_in_time() {
    let (without, with) = (
        six_cycles_of_a_few_steps_found(false),
        six_cycles_of_a_few_steps_found(true),
    );
    assert!(with >= without + 15, "{without} -> {with} of 100 found");
}
