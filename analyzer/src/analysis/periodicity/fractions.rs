//! Harmonics are not periods. A cycle of any shape puts power at every multiple of its
//! frequency, and its autocorrelation often has a small hill of its own at a half, a
//! third or a quarter of the period. A candidate whose hill is far lower than its
//! multiple's is taken to that multiple when it is tested ([`super::multiple`]); one
//! less clearly lower is kept, and is the forecaster's to validate as a season, but is
//! not reported: a shape of 9 steps, 10 10 0 0 5 10 0 0 0, is found at 9 and at 4.5
//! steps. A period a whole fraction of a reported one, on a hill less than
//! [`OCTAVE_HEIGHT`] as high, is that period's harmonic and is not reported; one at
//! least that high repeats as well as the whole, and the detector's octave rule already
//! prefers it.
//!
//! A harmonic above the Nyquist frequency folds back below it: a sawtooth of 4.57 steps
//! has its fourth harmonic at 4/4.57 = 0.875 cycles per step, seen at 1 - 0.875 = 0.125,
//! a period of 8.0 steps. A short pulse's harmonics are as strong as its fundamental,
//! so over hundreds of cycles such a fold is a sharp line, and its autocorrelation
//! (the beat of the cycle against the sampling) often outranks the cycle's own. A
//! period at a folded harmonic of another reported one is therefore not reported
//! either, whatever its strength, unless it is a whole multiple or fraction of it
//! (judged as above) or the two are each the other's fold; only periods under 16 steps
//! have folded harmonics among those checked.

use super::{Period, PeriodOutcome, OCTAVE_HEIGHT};

/// Whole fractions checked: a half to a quarter of a reported period. Further
/// fractions are too often a real faster cycle (a 3 h job under a day).
const MAX_DIVISOR: f64 = 4.0;

/// How near a whole fraction a period must lie, as a share of the longer one. Both are
/// refined on the same series, so a harmonic lies within a few ten-thousandths (in
/// `bench/analyzer/shape_scan.py`'s answers, 12.004 with 6.0 and 4.0, 9.998 with 3.333);
/// 2% took a sawtooth of 6.49 steps for a harmonic of the 13.22 its autocorrelation
/// repeats best at (lag 13 is whole, 6.49 is not; the labelled suite lost it).
const TOLERANCE: f64 = 0.005;

/// Highest harmonic whose fold is checked. The folds that outrank a cycle in the
/// impulsive development set (`bench/analyzer`, periods of 3-8 steps at 40-320 cycles)
/// are mostly of the harmonic nearest the sampling rate (k about the period in steps);
/// higher ones would drop more unrelated periods by chance.
const MAX_FOLDED_HARMONIC: u8 = 8;

/// How near a folded harmonic a period's frequency must lie, in cycles over the
/// analysed window: a quarter of the periodogram's resolution. Both periods are refined
/// on the same series, so a fold lies far nearer (most of the pairs that
/// `BENCH_SHOW_FIRST=1 poolprof-analyzer-bench impulsive dev --periods 3-8 --cycles
/// 40,80,160,320` prints lie within a tenth of a cycle), while an unrelated period
/// lies this near one of the (at most seven) folds checked with a chance of at most 7
/// in the window's length in points (0.7% over 1,000 points).
const FOLD_TOLERANCE_CYCLES: f64 = 0.25;

/// The evenly spaced window the periods were found in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Seconds between points.
    pub step: f64,
    /// Number of points.
    pub points: usize,
}

/// `outcome` in `window` without the periods that are harmonics of another reported
/// one, whole fractions or folds (run last, so a period another test refused takes no
/// harmonic with it).
pub fn without_harmonics(outcome: PeriodOutcome, window: Window) -> PeriodOutcome {
    let PeriodOutcome::Periodic(periods) = outcome else {
        return outcome;
    };
    // the longest period is no whole fraction of another, so something is left
    let mut kept: Vec<Period> = periods
        .iter()
        .filter(|t| !periods.iter().any(|p| harmonic_of(t, p)))
        .copied()
        .collect();
    // one at a time, each against the periods still kept, so the last is never dropped
    while let Some(i) =
        (0..kept.len()).find(|&i| kept.iter().any(|p| folds_into(&kept[i], p, window)))
    {
        kept.remove(i);
    }
    PeriodOutcome::Periodic(kept)
}

/// Whether `t` is a folded harmonic of `p`, not the other way round, and at no whole
/// ratio to it: a whole fraction or multiple is the rule above's to judge (13 steps is
/// the sixth harmonic of 6.5 folded, and 6.5 steps read every step repeat exactly at
/// 13; 3 steps is the fourth harmonic of 6 folded, and a cycle of 3 repeats at 6 too).
fn folds_into(t: &Period, p: &Period, window: Window) -> bool {
    folded_harmonic_of(t, p, window) && !folded_harmonic_of(p, t, window) && !whole_ratio(t, p)
}

/// Whether the longer of `a` and `b` is a whole multiple of the shorter.
fn whole_ratio(a: &Period, b: &Period) -> bool {
    let (short, long) = if a.period_seconds < b.period_seconds {
        (a, b)
    } else {
        (b, a)
    };
    whole_multiple(short, long).is_some()
}

/// Whether `t` lies at a whole fraction (1/2 to 1/4) of `p` and repeats less than
/// [`OCTAVE_HEIGHT`] as strongly.
fn harmonic_of(t: &Period, p: &Period) -> bool {
    whole_multiple(t, p).is_some_and(|k| k <= MAX_DIVISOR)
        && t.strength < OCTAVE_HEIGHT * p.strength
}

/// The whole number k (2 or more) such that `long` lies within [`TOLERANCE`] of k
/// times `short`, if there is one.
fn whole_multiple(short: &Period, long: &Period) -> Option<f64> {
    let k = (long.period_seconds / short.period_seconds).round();
    (k >= 2.0
        && (long.period_seconds - k * short.period_seconds).abs()
            <= TOLERANCE * long.period_seconds)
        .then_some(k)
}

/// Whether `t`'s frequency lies at a harmonic of `p` (2nd to [`MAX_FOLDED_HARMONIC`]th)
/// that is above the Nyquist frequency of `window` and folds back below it.
fn folded_harmonic_of(t: &Period, p: &Period, window: Window) -> bool {
    // cycles per step
    let (ft, fp) = (
        window.step / t.period_seconds,
        window.step / p.period_seconds,
    );
    let tolerance = FOLD_TOLERANCE_CYCLES / window.points as f64;
    (2..=MAX_FOLDED_HARMONIC).map(f64::from).any(|k| {
        let harmonic = k * fp;
        let folded = (harmonic - harmonic.round()).abs();
        harmonic > 0.5 && (ft - folded).abs() <= tolerance
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(seconds: f64, strength: f64) -> Period {
        Period {
            period_seconds: seconds,
            strength,
            confidence: 1.0,
            last_peak_seconds: None,
        }
    }

    /// A window in which none of the periods below has a folded harmonic: points a
    /// tenth of a second apart (at a second, 13.217 is the sixth harmonic of 6.491
    /// folded, the case the fold rule is for).
    const UNFOLDED: Window = Window {
        step: 0.1,
        points: 10_000,
    };

    fn reported(periods: Vec<Period>) -> Vec<f64> {
        reported_in(periods, UNFOLDED)
    }

    /// `points` points a second apart.
    fn seconds(points: usize) -> Window {
        Window { step: 1.0, points }
    }

    fn reported_in(periods: Vec<Period>, window: Window) -> Vec<f64> {
        without_harmonics(PeriodOutcome::Periodic(periods), window)
            .periods()
            .iter()
            .map(|p| p.period_seconds)
            .collect()
    }

    #[test]
    fn a_weak_whole_fraction_of_a_period_is_its_harmonic() {
        let whole = period(90.0, 1.0);
        assert_eq!(reported(vec![whole, period(45.0, 0.28)]), vec![90.0]);
        assert_eq!(reported(vec![period(30.05, 0.3), whole]), vec![90.0]);
        // repeating as well as the whole, it is a period of its own
        assert_eq!(reported(vec![whole, period(45.0, 0.8)]), vec![90.0, 45.0]);
    }

    #[test]
    fn a_shape_of_9_steps_is_reported_at_9_only() {
        use crate::analysis::periodicity::{detect_on_grid, detect_periods, PeriodConfig};
        use crate::series::Series;
        let shape = [10.0, 10.0, 0.0, 0.0, 5.0, 10.0, 0.0, 0.0, 0.0];
        let values: Vec<f64> = (0..600).map(|i| shape[i % 9]).collect();
        let config = PeriodConfig::default();
        let steps = |o: &PeriodOutcome| -> Vec<f64> {
            o.periods()
                .iter()
                .map(|p| (p.period_seconds / 60.0 * 100.0).round() / 100.0)
                .collect()
        };
        // the detector finds the harmonic (the forecaster is handed it), ...
        assert_eq!(
            steps(&detect_on_grid(&values, 60.0, &config)),
            vec![9.0, 4.5]
        );
        // ... the report leaves it out
        let series = Series::from_values(&values, 60.0);
        assert_eq!(steps(&detect_periods(&series, &config)), vec![9.0]);
    }

    #[test]
    fn other_periods_are_kept() {
        let day = period(86_400.0, 0.6);
        // a week is seven days; an hour is a 24th of a day; 40 s is no fraction of it
        let all = vec![
            day,
            period(604_800.0, 0.9),
            period(3_600.0, 0.2),
            period(40.0, 0.1),
        ];
        assert_eq!(reported(all), vec![86_400.0, 604_800.0, 3_600.0, 40.0]);
        // near half of a period, but 1.8% off (a sawtooth of 6.49 steps, and 13.22)
        let twice = period(13.217, 0.9);
        assert_eq!(
            reported(vec![twice, period(6.491, 0.5)]),
            vec![13.217, 6.491]
        );
    }

    #[test]
    fn a_folded_harmonic_of_a_fast_period_is_not_reported() {
        // 320 cycles of 4.57 steps of 15 s: the fourth harmonic, 0.8753 cycles a step,
        // folds to 0.1247, a period of 8.0175 steps
        let window = Window {
            step: 15.0,
            points: 1_463,
        };
        let cycle = period(4.57 * 15.0, 0.4);
        let fold = period(4.57 / 0.57 * 15.0, 0.6);
        assert_eq!(reported_in(vec![fold, cycle], window), vec![4.57 * 15.0]);
        // half a cycle over the window away from the fold, it is a period of its own
        let apart = period(15.0 / (0.57 / 4.57 + 0.5 / 1_463.0), 0.6);
        assert_eq!(
            reported_in(vec![apart, cycle], window),
            vec![apart.period_seconds, cycle.period_seconds]
        );
        // a harmonic below the Nyquist frequency is no fold (the rule above judges it)
        let below = period(4.57 / 2.0 * 15.0, 0.6);
        assert_eq!(reported_in(vec![below, cycle], window).len(), 2);
    }

    #[test]
    fn a_whole_multiple_or_fraction_is_no_fold() {
        // 6.5 steps is a weak half of 13, which is its sixth harmonic folded
        let window = seconds(2_080);
        let both = vec![period(13.0, 0.6), period(6.5, 0.3)];
        assert_eq!(reported_in(both, window), vec![13.0]);
        // 3 steps, a strong half of 6, is kept with it, though the fourth harmonic of 6
        // folds to 3
        let both = vec![period(3.0, 0.8), period(6.0, 0.8)];
        assert_eq!(reported_in(both, window), vec![3.0, 6.0]);
    }

    #[test]
    fn two_periods_each_the_others_fold_are_both_kept() {
        // the fifth harmonic of 7 steps folds to 3.5 steps, the third of 3.5 to 7
        let window = seconds(700);
        let both = vec![period(3.5, 0.8), period(7.0, 0.8)];
        assert_eq!(reported_in(both, window), vec![3.5, 7.0]);
    }
}
