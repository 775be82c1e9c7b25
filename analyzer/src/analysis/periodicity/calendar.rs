//! The calendar's day, confirmed day by day. A GPU cluster's share of GPUs held moves in
//! the steps of its jobs and sits pinned at 100% or idle for days; its daily rhythm
//! (more held in working hours) is weak beside those steps, which bury it in the
//! periodogram and flatten its autocorrelation hill. Taken a day at a time, the rhythm
//! shows: with the level taken out by a moving median over one day, the hours that
//! stand high in one day stand high in most. Friedman's test says how surely: each day
//! ranks its [`BINS`] means, and the ranks' sums over the days are compared with what
//! days ranked at random give. Ranks within a day ignore its level and its scale, so a
//! level shift or a burst moves only the day it falls in; a day that never moved (pinned,
//! idle) ranks nothing and is left out. The day is a priori, one period tested, so no
//! search over periods dilutes the test. Where a week or two of days ranks too few
//! alike for that test alone, an autocorrelation that peaks at the day (above half a
//! day and a day and a half, which a level that only persists never gives) confirms
//! it at a looser level.

use statrs::distribution::{ChiSquared, ContinuousCDF};

use super::{acf, prepare, Period, PeriodOutcome};
use crate::analysis::correlation::ranks;
use crate::analysis::extent::max_abs_finite;

/// Seconds in the calendar's day.
pub const DAY_SECONDS: f64 = 86_400.0;

/// Stretches of a day each day ranks: two hours each. Fewer lose a rhythm of a few
/// hours; more leave bins of a step or two at an hourly step, whose neighbours a
/// slowly wandering level ties together.
pub const BINS: usize = 12;

/// Days that moved, after the moving median takes one, that the test needs.
pub const MIN_DAYS: usize = 3;

/// Largest p-value of Friedman's statistic that confirms the day. In a prototype (a
/// moving mean for the level), random walks and AR(1) at 0.99 of two weeks at 5 min
/// passed 1% and 2.7% of the time at 1e-3 (smooth wander ties a day's neighbouring
/// bins, which fattens the statistic's tail), 0% and 0.3% at 1e-4.
pub const DAY_P: f64 = 1e-4;

/// Largest p-value of Friedman's statistic that confirms the day where the
/// autocorrelation of the values also peaks at one day ([`peaks_at_a_day`]). On job
/// logs split into virtual clusters, whose level the steps of large jobs move, days
/// ranked their hours alike at p of 1e-4 to 5e-2 in most of the series whose
/// autocorrelation showed the day; random walks, AR(1) at 0.99 and 0.999, white noise,
/// level steps, trends and jobs arriving at any hour (300 of each, a week at 5 and
/// 10 min, two weeks at 5 min) passed both in 1.3% at most (AR(1) at 0.99 over a week
/// at 5 min: 4 of 300, 1 of them at [`DAY_P`] alone).
pub const DAY_P_WITH_PEAK: f64 = 5e-2;

/// Least autocorrelation at one day, about the mean, for [`peaks_at_a_day`].
pub const PEAK_HEIGHT: f64 = 0.2;

/// Least rise of the autocorrelation at one day above its values at half a day and a
/// day and a half, for [`peaks_at_a_day`].
pub const PEAK_RISE: f64 = 0.05;

/// `outcome` with the calendar's day added where `values` (`step` seconds apart) show
/// it ([`day`]), no reported period repeats within a day ([`divides_the_day`]) and
/// fewer than `most` periods are reported.
pub fn with_day(outcome: PeriodOutcome, values: &[f64], step: f64, most: usize) -> PeriodOutcome {
    let periods = outcome.periods();
    if periods.len() >= most || periods.iter().any(divides_the_day) {
        return outcome;
    }
    let Some(day) = day(values, step) else {
        return outcome;
    };
    match outcome {
        PeriodOutcome::Periodic(mut periods) => {
            periods.push(day);
            PeriodOutcome::Periodic(periods)
        }
        PeriodOutcome::NoPeriod { .. } => PeriodOutcome::Periodic(vec![day]),
    }
}

/// Whether `period`, repeated a whole number of times, makes a day (within 3%): a
/// cycle of 12 h or 8 h ranks the same hours high every day, so Friedman's test finds
/// it as readily as a day's own rhythm and the day would say nothing more.
fn divides_the_day(period: &Period) -> bool {
    let times = (DAY_SECONDS / period.period_seconds).round();
    times >= 1.0 && (times * period.period_seconds / DAY_SECONDS - 1.0).abs() <= 0.03
}

/// The calendar's day as a period of `values` (`step` seconds apart), where its days
/// rank their hours alike ([`ranked_days`]) surely enough: Friedman's test passes at
/// [`DAY_P`], or at [`DAY_P_WITH_PEAK`] where the autocorrelation peaks at a day
/// ([`peaks_at_a_day`]). The period's strength is the autocorrelation at one day of the
/// blocks less their median.
pub fn day(values: &[f64], step: f64) -> Option<Period> {
    let ranked = ranked_days(values, step)?;
    let p = ranked.p;
    let confirmed = p <= DAY_P || (p <= DAY_P_WITH_PEAK && peaks_at_a_day(values, ranked.steps));
    confirmed.then(|| Period {
        period_seconds: DAY_SECONDS,
        strength: strength(&ranked.rest),
        confidence: 1.0 - p,
        last_peak_seconds: None,
    })
}

/// Friedman's test of the days of a series.
struct RankedDays {
    /// Steps in a day.
    steps: usize,
    /// The p-value of Friedman's statistic over the days that moved.
    p: f64,
    /// The block means less their moving median, a day and a block wide.
    rest: Vec<f64>,
}

/// Friedman's test of the days of `values` (`step` seconds apart), where a whole
/// number of steps makes a day and [`MIN_DAYS`] days moved. The test ranks [`BINS`]
/// block means a day, less the median of the day and a block centred on each: the
/// median steps with the level where a job's start or end moves it (a moving mean
/// would ramp for a day either side) and passes a cycle through.
fn ranked_days(values: &[f64], step: f64) -> Option<RankedDays> {
    let steps = DAY_SECONDS / step;
    if !(steps >= BINS as f64 && (steps - steps.round()).abs() < 1e-9 * steps) {
        return None;
    }
    let steps = steps.round() as usize;
    if values.len() < (MIN_DAYS + 1) * steps {
        return None;
    }
    let (blocks, moved) = block_means(values, steps / BINS)?;
    // a day and a block, centred: rest[i] is block i + BINS / 2 less its median
    let rest = less_moving_median(&blocks, BINS / 2);
    // whole days counted back from the end, those that moved: a day pinned or idle
    // throughout ranks nothing
    let days: Vec<&[f64]> = rest
        .rchunks_exact(BINS)
        .zip(moved[BINS / 2..BINS / 2 + rest.len()].rchunks_exact(BINS))
        .filter(|(_, moved)| moved.iter().any(|m| *m))
        .map(|(rest, _)| rest)
        .collect();
    if days.len() < MIN_DAYS {
        return None;
    }
    let p = friedman_p(&days)?;
    Some(RankedDays { steps, p, rest })
}

/// Whether the autocorrelation of `values` (`day` steps a day) is [`PEAK_HEIGHT`] or
/// more at one day and [`PEAK_RISE`] above it at half a day and a day and a half. A
/// daily rhythm lifts it at a day and lowers it half a day off; a level that only
/// persists (a walk, a job's plateau, a step) makes it fall with the lag, never higher
/// at a day than at half of one.
fn peaks_at_a_day(values: &[f64], day: usize) -> bool {
    let scale = max_abs_finite(values);
    if scale == 0.0 {
        return false;
    }
    let y: Vec<f64> = values.iter().map(|v| v / scale).collect();
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let spread = acf::spread(&y, mean);
    let at = |lag: usize| acf::about_with(&y, mean, spread, lag);
    let height = at(day);
    height >= PEAK_HEIGHT && height - at(day / 2).max(at(3 * day / 2)) >= PEAK_RISE
}

/// The autocorrelation at one day of the blocks less their median, 0-1 (0 where they
/// do not vary: no spread, no repeat).
fn strength(rest: &[f64]) -> f64 {
    let r = acf::about_mean(rest, BINS);
    if r.is_nan() {
        0.0
    } else {
        r.clamp(0.0, 1.0)
    }
}

/// Means of consecutive blocks of `width` values of `values`, counted back from the
/// end (a partial first block is left out), scaled to a largest magnitude of 1, and
/// whether each block moved; `None` where a value is not finite.
fn block_means(values: &[f64], width: usize) -> Option<(Vec<f64>, Vec<bool>)> {
    let means_by = |per: f64| -> Vec<f64> {
        let mut means: Vec<f64> = values
            .rchunks_exact(width)
            .map(|b| b.iter().map(|v| v * per).sum::<f64>())
            .collect();
        means.reverse();
        means
    };
    let mut means = means_by(1.0 / width as f64);
    if means.iter().any(|m| !m.is_finite()) {
        // sums of values near f64's limits: each value scaled first
        means = means_by(1.0 / max_abs_finite(values) / width as f64);
    }
    if means.iter().any(|m| !m.is_finite()) {
        return None;
    }
    let scale = max_abs_finite(&means);
    if scale > 0.0 {
        means.iter_mut().for_each(|m| *m /= scale);
    }
    let mut moved: Vec<bool> = values
        .rchunks_exact(width)
        .map(|b| b.iter().any(|v| *v != b[0]))
        .collect();
    moved.reverse();
    Some((means, moved))
}

/// `y` less the median of the `2 * half + 1` values centred on each, to a billionth:
/// where `y` rises or falls throughout a window its median is the centre's value, so a
/// trend of any curve leaves ties, not a rank that climbs through every day (an even
/// window, half a value late, left each block the trend's slope, which ranked a cubic
/// trend's hours alike each day). The first and last `half` have no full window and
/// are left out.
fn less_moving_median(y: &[f64], half: usize) -> Vec<f64> {
    let medians = prepare::running_median(y, 2 * half + 1);
    y.iter()
        .zip(medians)
        .skip(half)
        .take(y.len() - 2 * half)
        .map(|(v, m)| ((v - m) * 1e9).round() / 1e9)
        .collect()
}

/// The p-value of Friedman's statistic for `days` (each a row of [`BINS`] values),
/// against χ² with BINS − 1 degrees of freedom; ties share their mean rank.
fn friedman_p(days: &[&[f64]]) -> Option<f64> {
    let mut sums = [0.0; BINS];
    for day in days {
        for (sum, rank) in sums.iter_mut().zip(ranks(day)) {
            *sum += rank;
        }
    }
    let (d, b) = (days.len() as f64, BINS as f64);
    let q =
        12.0 / (d * b * (b + 1.0)) * sums.iter().map(|r| r * r).sum::<f64>() - 3.0 * d * (b + 1.0);
    let chi = ChiSquared::new(b - 1.0).ok()?;
    Some(chi.sf(q.max(0.0)))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::super::impulsive_tests::{normal, walk};
    use super::super::{detect_on_grid, detect_periods, PeriodConfig};
    use super::*;
    use crate::series::Series;

    const FIVE_MIN: f64 = 300.0;
    const TWO_WEEKS: usize = 14 * 288;

    /// A GPU cluster's share of GPUs held, every 5 min for two weeks: regimes of half a
    /// day to three days pinned at 1, idle at 0, or a partial load that wanders in the
    /// steps of jobs, with a daily rhythm of `amplitude` in the partial loads.
    fn cluster(seed: u64, amplitude: f64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let phase: f64 = rng.gen();
        let mut y = Vec::with_capacity(TWO_WEEKS);
        while y.len() < TWO_WEEKS {
            let len = rng.gen_range(144..864);
            let kind = rng.gen_range(0..4);
            let mut level: f64 = rng.gen_range(0.2..0.8);
            for _ in 0..len {
                let t = y.len() as f64 / 288.0;
                let v = match kind {
                    0 => 1.0,
                    1 => 0.0,
                    _ => {
                        if rng.gen::<f64>() < 0.01 {
                            level = (level + 0.05 * normal(&mut rng)).clamp(0.1, 0.9);
                        }
                        let rhythm = (2.0 * std::f64::consts::PI * (t + phase)).sin();
                        level + amplitude * rhythm + 0.03 * normal(&mut rng)
                    }
                };
                y.push(v.clamp(0.0, 1.0));
            }
        }
        y.truncate(TWO_WEEKS);
        y
    }

    fn has_day(periods: &[Period]) -> bool {
        periods
            .iter()
            .any(|p| (p.period_seconds / DAY_SECONDS - 1.0).abs() <= 0.02)
    }

    #[test]
    fn a_daily_rhythm_buried_by_regimes_is_reported_as_the_day() {
        let config = PeriodConfig::default();
        let (mut searched, mut reported) = (0, 0);
        for seed in 0..40 {
            let y = cluster(seed, 0.08);
            searched += usize::from(has_day(detect_on_grid(&y, FIVE_MIN, &config).periods()));
            let series = Series::from_values(&y, FIVE_MIN);
            reported += usize::from(has_day(detect_periods(&series, &config).periods()));
        }
        assert!(
            searched <= 2,
            "the search over periods found the day {searched} times"
        );
        assert!(reported >= 18, "{reported} of 40 report the day");
    }

    #[test]
    fn a_week_of_jobs_arriving_by_day_is_reported_with_its_day() {
        let week: Vec<Vec<f64>> = (0..40).map(|seed| jobs(seed, 1.0, TWO_WEEKS / 2)).collect();
        let strict = week
            .iter()
            .filter(|y| ranked_days(y, FIVE_MIN).is_some_and(|r| r.p <= DAY_P))
            .count();
        let reported = week.iter().filter(|y| day(y, FIVE_MIN).is_some()).count();
        // 11 by Friedman's test alone: the steps of jobs that run for days bury the
        // arrivals' rhythm in the ranks, while the autocorrelation peaks at the day
        assert!(strict <= 12, "{strict} of 40 pass the strict level");
        assert!(reported >= 15, "{reported} of 40 report the day");
    }

    #[test]
    fn one_or_two_weeks_without_a_rhythm_show_no_day() {
        type Kind = fn(f64, usize, &mut ChaCha8Rng) -> f64;
        let kinds: [(&str, Kind); 5] = [
            ("white noise", |_, _, r| normal(r)),
            ("random walk", |v, _, r| v + normal(r)),
            ("AR(1) at 0.99", |v, _, r| 0.99 * v + normal(r)),
            ("level steps", |v, _, r| {
                if r.gen::<f64>() < 0.002 {
                    v + 5.0 * normal(r)
                } else {
                    v
                }
            }),
            ("trend", |_, i, r| 1e-3 * i as f64 + normal(r)),
        ];
        let mut made_up = Vec::new();
        for n in [TWO_WEEKS / 2, TWO_WEEKS] {
            for seed in 0..50 {
                let mut series: Vec<(&str, Vec<f64>)> = kinds
                    .iter()
                    .map(|(name, next)| (*name, walk(n, seed, next)))
                    .collect();
                let mut cluster = cluster(seed, 0.0);
                cluster.truncate(n);
                series.push(("cluster without a rhythm", cluster));
                series.push(("jobs arriving at any hour", jobs(seed, 0.0, n)));
                for (name, y) in series {
                    if day(&y, FIVE_MIN).is_some() {
                        made_up.push((name, n, seed));
                    }
                }
            }
        }
        // of 700
        assert!(made_up.len() <= 2, "days made up: {made_up:?}");
    }

    #[test]
    fn the_day_needs_whole_steps_enough_days_and_movement() {
        let y = cluster(1, 0.08);
        assert!(day(&y, FIVE_MIN).is_some(), "the case below must find it");
        assert_eq!(day(&y, 7.0), None, "a day is no whole number of 7 s steps");
        assert_eq!(day(&y[..3 * 288], FIVE_MIN), None, "three days");
        assert_eq!(day(&vec![42.0; TWO_WEEKS], FIVE_MIN), None, "a constant");
        assert_eq!(
            day(&y, 14_400.0),
            None,
            "six steps a day are fewer than the bins"
        );
    }

    #[test]
    fn values_near_the_f64_limits_keep_the_day() {
        let y = cluster(1, 0.08);
        let huge: Vec<f64> = y.iter().map(|v| v * 1.7e308).collect();
        assert_eq!(
            day(&huge, FIVE_MIN).map(|p| p.confidence),
            day(&y, FIVE_MIN).map(|p| p.confidence)
        );
        let cubic: Vec<f64> = (0..TWO_WEEKS).map(|t| (t as f64).powi(3)).collect();
        assert_eq!(
            day(&cubic, FIVE_MIN),
            None,
            "a trend of any curve has no day"
        );
        let overflowing: Vec<f64> = cubic.iter().map(|v| v * 1e300).collect();
        assert!(overflowing.last().unwrap().is_infinite());
        assert_eq!(day(&overflowing, FIVE_MIN), None);
        let alternating: Vec<f64> = (0..TWO_WEEKS)
            .map(|i| if i % 2 == 0 { f64::MAX } else { -f64::MAX })
            .collect();
        assert_eq!(day(&alternating, FIVE_MIN), None);
    }

    #[test]
    fn tied_values_share_their_mean_rank() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
        // days that agree on every bin are as sure as twelve ranks allow
        let day: Vec<f64> = (0..BINS).map(|b| b as f64).collect();
        let days = vec![day.as_slice(); 5];
        assert!(friedman_p(&days).unwrap() < 1e-7);
    }

    /// `n` steps of 5 min of a cluster's share of GPUs held by jobs of 1-8 of 32 GPUs,
    /// one arriving in 5% of the steps, `amplitude` more or less by day, for 15 min to
    /// two and a half days (the steps of jobs, no regime pinned for days).
    fn jobs(seed: u64, amplitude: f64, n: usize) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let phase: f64 = rng.gen();
        let mut running: Vec<(usize, f64)> = Vec::new();
        (0..n)
            .map(|i| {
                running.retain(|(end, _)| *end > i);
                let t = i as f64 / 288.0 + phase;
                let rate = 0.05 * (1.0 + amplitude * (2.0 * std::f64::consts::PI * t).sin());
                if rng.gen::<f64>() < rate {
                    let steps = rng.gen_range(1.0f64..6.5).exp() as usize + 1;
                    let size = f64::from(rng.gen_range(1..9)) / 32.0;
                    running.push((i + steps, size));
                }
                running.iter().map(|r| r.1).sum::<f64>().min(1.0)
            })
            .collect()
    }
}
