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

/// `outcome` without the periods that are harmonics of another reported one (run
/// last, so a period another test refused takes no harmonic with it).
pub fn without_harmonics(outcome: PeriodOutcome) -> PeriodOutcome {
    let PeriodOutcome::Periodic(periods) = outcome else {
        return outcome;
    };
    // the longest period is never dropped, so something is always left
    let kept = periods
        .iter()
        .filter(|t| !periods.iter().any(|p| harmonic_of(t, p)))
        .copied()
        .collect();
    PeriodOutcome::Periodic(kept)
}

/// Whether `t` lies at a whole fraction (1/2 to 1/4) of `p` and repeats less than
/// [`OCTAVE_HEIGHT`] as strongly.
fn harmonic_of(t: &Period, p: &Period) -> bool {
    let k = (p.period_seconds / t.period_seconds).round();
    (2.0..=MAX_DIVISOR).contains(&k)
        && (p.period_seconds - k * t.period_seconds).abs() <= TOLERANCE * p.period_seconds
        && t.strength < OCTAVE_HEIGHT * p.strength
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

    fn reported(periods: Vec<Period>) -> Vec<f64> {
        without_harmonics(PeriodOutcome::Periodic(periods))
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
}
