//! Periods in held readings. A value sampled every 10 s and scraped every second
//! (NVML's per-process utilization) is held for 10 steps: the detector, which counts
//! every step as a sample, finds periods in such noise (70 of 200 held-noise series,
//! `docs/validation/analyzer/forecast-eval-session12.md`). A reported period of a held
//! series must also stand out against held noise's autocorrelation, whose variance
//! is (2·hold² + 1) / (3·hold) times white noise's (Bartlett's formula for a box of
//! `hold` steps). The forecaster is handed every period regardless: it validates each
//! season on its own errors, and on short histories this test also rejects real cycles.

use super::{acf, prepare, spectrum, Period, PeriodOutcome};

/// `outcome` (found on `values`, `step` seconds apart, whose readings are held `hold`
/// steps: [`crate::analysis::runs::hold`]) without the periods held noise would show as readily;
/// unchanged for a series that moves every step.
pub fn confirm(values: &[f64], step: f64, hold: usize, outcome: PeriodOutcome) -> PeriodOutcome {
    if hold < 2 {
        return outcome;
    }
    let PeriodOutcome::Periodic(periods) = outcome else {
        return outcome;
    };
    let mut x = values.to_vec();
    prepare::detrend_and_clip(&mut x);
    let acf = spectrum::autocorrelation(&x);
    let kept: Vec<Period> = periods
        .into_iter()
        .filter(|p| stands_out(&acf, p, step, hold))
        .collect();
    if kept.is_empty() {
        return PeriodOutcome::none(format!(
            "aperiodic: the values are held about {hold} steps, and no period repeats more than held noise does"
        ));
    }
    PeriodOutcome::Periodic(kept)
}

/// Standard errors of held noise's autocorrelation a reported period's hill must stand:
/// 2.5, as for the repeats of a weak candidate, let 11 of 200 held-noise series through
/// (`held_noise_reports_no_period_that_its_steps_show`).
pub const HELD_Z: f64 = 3.0;

/// Whether `period`'s autocorrelation hill stands [`HELD_Z`] standard errors of held
/// noise's autocorrelation high. Its multiples are not required: a training job's own
/// share, stopped once and checkpointing, repeats only weakly at twice its cycle.
fn stands_out(acf: &[f64], period: &Period, step: f64, hold: usize) -> bool {
    let h = hold as f64;
    let inflation = ((2.0 * h * h + 1.0) / (3.0 * h)).sqrt();
    let hill = acf::Hill {
        lag: period.period_seconds / step,
        height: period.strength,
    };
    acf::repeats(acf, &hill, HELD_Z * inflation, 1)
        || acf::repeats(acf, &hill, HELD_Z2 * inflation, 2)
}

/// Standard errors of held noise's autocorrelation a period's hill and the hill at
/// twice its lag must both stand where the first alone does not stand [`HELD_Z`].
pub const HELD_Z2: f64 = 2.25;

#[cfg(test)]
mod tests {
    use super::super::{detect_periods, detect_whole, PeriodConfig};
    use crate::analysis::fixtures::Noise;
    use crate::series::Series;

    /// A value drawn afresh every `hold` steps: uniform noise, plus 2 in the busy three
    /// quarters of a `cycle` of steps where given.
    fn held(seed: u64, hold: usize, n: usize, cycle: Option<usize>) -> Vec<f64> {
        let mut e = Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut reading = 0.0;
        (0..n)
            .map(|i| {
                if i % hold == 0 {
                    let busy = cycle.is_some_and(|m| i % m < 3 * m / 4);
                    reading = e.uniform() + if busy { 2.0 } else { 0.0 };
                }
                reading
            })
            .collect()
    }

    #[test]
    fn held_noise_reports_no_period_that_its_steps_show() {
        let config = PeriodConfig::default();
        let (mut by_steps, mut reported) = (0, 0);
        for seed in 0..200 {
            let y = held(seed, 10, 500, None);
            // searched at every period, as if the readings were not held
            by_steps += usize::from(!detect_whole(&y, 1.0, &config).periods().is_empty());
            let series = Series::from_values(&y, 1.0);
            reported += usize::from(!detect_periods(&series, &config).periods().is_empty());
        }
        assert!(
            by_steps >= 40,
            "the steps alone show periods in held noise: {by_steps}"
        );
        assert!(
            reported <= 10,
            "{reported} of 200 held-noise series report a period"
        );
    }

    /// NVML's per-process utilization of a training job: busy (0.85) but for an
    /// 8-step evaluation pass (0.3) every `cycle` steps, with per-step noise; every
    /// 10 steps the reading is the mean of the last 10, held until the next.
    fn averaged_readings(seed: u64, cycle: usize, n: usize) -> Vec<f64> {
        let mut e = Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let activity: Vec<f64> = (0..n + 10)
            .map(|t| if t % cycle >= cycle - 8 { 0.3 } else { 0.85 } + 0.2 * e.uniform())
            .collect();
        (0..n)
            .map(|t| {
                let read = t + 10 - t % 10;
                activity[read - 10..read].iter().sum::<f64>() / 10.0
            })
            .collect()
    }

    #[test]
    fn a_cycle_read_every_ten_steps_is_reported_from_six_cycles() {
        // a 45-step cycle is 4.5 readings: its hill at one cycle is lowered by readings
        // that straddle the evaluation pass, while the hill at two cycles, 9 readings,
        // lines up: with the one lag alone 20 of 40 were reported, with both 29
        let config = PeriodConfig::default();
        let found = (0..40)
            .filter(|&seed| {
                let y = averaged_readings(seed, 45, 270);
                detect_periods(&Series::from_values(&y, 1.0), &config)
                    .periods()
                    .iter()
                    .any(|p| (p.period_seconds - 45.0).abs() <= 0.9)
            })
            .count();
        assert!(found >= 26, "{found} of 40 reported");
    }

    #[test]
    fn a_held_cycle_keeps_its_period() {
        // a 40-step cycle read every 10 steps, as NVML's per-process utilization
        let y = held(7, 10, 500, Some(40));
        let out = detect_periods(&Series::from_values(&y, 1.0), &PeriodConfig::default());
        assert!(
            out.periods()
                .iter()
                .any(|p| (p.period_seconds - 40.0).abs() < 1.0),
            "{out:?}"
        );
    }
}
