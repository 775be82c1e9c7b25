//! A series clamped at its floor (a rate that cannot go below 0, a load that decays
//! into idle): near the floor its values are a censored distribution, a share of them
//! exactly on the floor. The models fit the clamped values, so their forecast is the
//! mean of that distribution, which sits above the floor even where the value is more
//! likely on it than off it. Where the predicted distribution is narrow, a normal cut
//! at the floor says how likely: with mean `p` above the floor and spread `sd`, the
//! median is the floor once `p` is below [`MEDIAN_ON_FLOOR`] `sd`. The median is what
//! absolute and relative errors reward, and a forecast off the floor where the value
//! is on it scores the worst relative error there is (200% sMAPE) at every such step.

use super::candidates::{same_phase, Path, MEDIAN_CYCLES};
use super::floor::idle_within;
use super::pinned::SAME as ON_FLOOR;
use super::validation::{self, Origins};

/// Mean of a normal with median exactly at the floor, cut there, in standard
/// deviations above the floor: φ(0) = 1/√(2π). A lower mean means a median on it.
pub const MEDIAN_ON_FLOOR: f64 = 0.398_942_280_401_432_7;

/// Largest spread, as a share of the recent cycles' swing above the floor, at which
/// the forecast's distribution is read as a normal cut at the floor. A wider one is
/// not noise around a level but doubt between levels (a job may start or stop), and
/// its median is no nearer the floor than the forecast.
pub const MAX_SPREAD: f64 = 0.25;

/// Relative tolerance of [`is_count`] (values scaled to ±1 carry rounding).
const COUNT_TOLERANCE: f64 = 1e-6;

/// Whether every value of `y` is `floor` plus a whole multiple of its smallest step
/// above it: a count (jobs started, GPUs held), whose spread near the floor shrinks
/// with its level (a count averaging 0.8 is 0 less than half the time), so the
/// spread of the whole forecast overstates it there and no normal describes it.
/// Narrower than a [`super::lattice::Lattice`]: values read to two decimals lie on a
/// lattice of 0.01 but are no count unless their lowest level above the floor is 0.01.
pub fn is_count(y: &[f64], floor: f64) -> bool {
    let unit = y
        .iter()
        .map(|v| v - floor)
        .filter(|d| *d > ON_FLOOR)
        .fold(f64::INFINITY, f64::min);
    unit.is_finite()
        && y.iter().all(|v| {
            let k = (v - floor) / unit;
            (k - k.round()).abs() <= COUNT_TOLERANCE * k.abs().max(1.0)
        })
}

/// Sets the forecast `point` (steps 1.. after `y`) to `floor` at the steps whose
/// median is on it: the point is below [`MEDIAN_ON_FLOOR`] times its spread `sd`
/// (the calibrated standard deviation, per step) above the floor, the spread is at
/// most [`MAX_SPREAD`] of the swing of the last [`MEDIAN_CYCLES`] cycles of `period`,
/// and the floor was reached at that phase in one of those cycles. A floor held for
/// a whole cycle in that time is a job idle, not a series clamped, and left alone;
/// so is a count ([`is_count`]).
pub fn snap_censored(y: &[f64], period: f64, floor: f64, sd: &[f64], point: &mut [f64]) {
    if !floor.is_finite() || period < 2.0 || idle_within(y, period, floor) || is_count(y, floor) {
        return;
    }
    let look = ((MEDIAN_CYCLES as f64 * period).ceil() as usize).min(y.len());
    let swing = y[y.len() - look..]
        .iter()
        .fold(0.0_f64, |m, v| m.max(v - floor));
    for (j, (p, s)) in point.iter_mut().zip(sd).enumerate() {
        let narrow = *s > 0.0 && *s <= MAX_SPREAD * swing;
        if !narrow || *p - floor >= MEDIAN_ON_FLOOR * s {
            continue;
        }
        let reached = same_phase(y, j + 1, period, MEDIAN_CYCLES)
            .iter()
            .any(|v| (v - floor).abs() <= ON_FLOOR);
        if reached {
            *p = floor;
        }
    }
}

/// [`snap_censored`] on the chosen forecast `path` after `y`, its spread the path's
/// variance scaled by the calibration `k`, where the snap changes the forecast and the
/// same snap of the choice's `paths` from the validation `origins` erred no more than
/// they did: the H100's utilization under a 40 s job had reached 0 at some phases and
/// was snapped there in a minute when it never did.
pub fn snap_validated(
    y: &[f64],
    period: f64,
    floor: f64,
    k: f64,
    origins: &Origins,
    paths: &[Path],
    path: &mut Path,
) {
    let snap = |data: &[f64], p: &mut Path| {
        let sd: Vec<f64> = p.var.iter().map(|v| k * v.max(0.0).sqrt()).collect();
        snap_censored(data, period, floor, &sd, &mut p.point);
    };
    let mut snapped = path.clone();
    snap(y, &mut snapped);
    if snapped.point != path.point && validation::adjustment_holds(y, origins, paths, &snap) {
        *path = snapped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::recorded;
    use crate::analysis::forecast::{forecast, ForecastConfig};

    #[test]
    fn a_job_that_never_idled_in_validation_is_not_snapped_to_its_floor() {
        // The H100's utilization under a job with a 40 s cycle (run3), 426 s of it:
        // it reached 0 at some phases, but in the next minute it never goes below 0.01.
        // Snapped without asking validation, ten of the 60 steps were forecast at 0.
        let series = recorded("run3", "gpu_utilization", 426);
        let config = ForecastConfig {
            horizon_steps: 60,
            step_seconds: Some(1.0),
            ..ForecastConfig::default()
        };
        let f = forecast(&series, &config).expect("forecast");
        let on_floor = f.point.iter().filter(|v| **v == 0.0).count();
        assert_eq!(on_floor, 0, "{:?}", f.point);
    }

    /// A 10-step cycle clamped at 0: phases 0-2 on the floor in some cycles, just off
    /// it in the others; the rest well above.
    fn clamped() -> Vec<f64> {
        (0..60)
            .map(|t| match (t % 10, (t / 10) % 2) {
                (0..=2, 0) => 0.0,
                (0..=2, _) => 0.02,
                _ => 0.97,
            })
            .collect()
    }

    #[test]
    fn a_mean_near_the_floor_with_the_floor_seen_at_its_phase_is_the_floor() {
        let y = clamped();
        // mean 0.03 with spread 0.1: below 0.4 sd, and the floor was seen there
        let mut point = vec![0.03, 0.03, 0.03, 0.03, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        snap_censored(&y, 10.0, 0.0, &[0.1; 10], &mut point);
        assert_eq!(&point[..3], &[0.0, 0.0, 0.0]);
        // phase 3 never sat on the floor: its mean stays
        assert_eq!(point[3], 0.03);
        assert!(point[4..].iter().all(|v| *v == 1.0));
    }

    #[test]
    fn a_mean_well_above_its_spread_stays() {
        let y = clamped();
        // 0.05 is above 0.4 times 0.1
        let mut point = vec![0.05; 3];
        snap_censored(&y, 10.0, 0.0, &[0.1; 3], &mut point);
        assert_eq!(point, vec![0.05; 3]);
    }

    #[test]
    fn a_wide_spread_is_doubt_between_levels_and_stays() {
        let y = clamped();
        // spread 0.5 is half the swing of 1: not noise around a level
        let mut point = vec![0.1; 3];
        snap_censored(&y, 10.0, 0.0, &[0.5; 3], &mut point);
        assert_eq!(point, vec![0.1; 3]);
    }

    #[test]
    fn a_count_near_the_floor_stays() {
        // the same shape as whole counts (0 and 1 at phases 0-2, 5 elsewhere): a count
        // averaging 0.4 there is not a normal cut at 0
        let y: Vec<f64> = clamped()
            .iter()
            .map(|v| (v * 50.0).round() / 10.0)
            .collect();
        assert!(is_count(&y, 0.0) && !is_count(&clamped(), 0.0));
        let mut point = vec![0.15; 3];
        snap_censored(&y, 10.0, 0.0, &[0.5; 3], &mut point);
        assert_eq!(point, vec![0.15; 3]);
        // the same values with a little noise are no count, and snap
        let noisy: Vec<f64> = y
            .iter()
            .enumerate()
            .map(|(t, v)| {
                if *v > 0.0 {
                    v + 0.001 * (t % 3) as f64
                } else {
                    0.0
                }
            })
            .collect();
        let mut point = vec![0.15; 3];
        snap_censored(&noisy, 10.0, 0.0, &[0.5; 3], &mut point);
        assert_eq!(point, vec![0.0; 3]);
    }

    #[test]
    fn a_floor_held_for_a_whole_cycle_is_idle_and_stays() {
        // idle for two cycles, then busy again: the floor is a stopped job, not a clamp
        let mut y = clamped();
        y[20..40].iter_mut().for_each(|v| *v = 0.0);
        let mut point = vec![0.03; 3];
        snap_censored(&y, 10.0, 0.0, &[0.1; 3], &mut point);
        assert_eq!(point, vec![0.03; 3]);
        // no floor: nothing to snap to
        let mut point = vec![0.03; 3];
        snap_censored(&clamped(), 10.0, f64::NEG_INFINITY, &[0.1; 3], &mut point);
        assert_eq!(point, vec![0.03; 3]);
    }

    #[test]
    fn night_hours_of_a_clamped_load_are_forecast_on_the_floor() {
        // hourly, four weeks: a daytime load over nights whose latent value is just
        // below 0 (-0.3, noise 1), clamped at 0: a night hour is 0 six times in ten,
        // so its median is 0, and its mean (what the models fit) about 0.27
        let mut e = crate::analysis::fixtures::Noise(0x2545_f491_4f6c_dd1d);
        let mut normal = || e.normal();
        let day = |t: usize| (8..19).contains(&(t % 24));
        let n = 24 * 28;
        let y: Vec<f64> = (0..n)
            .map(|t| (if day(t) { 20.0 } else { -0.3 } + normal()).max(0.0))
            .collect();
        let f = crate::analysis::fixtures::forecast_steps(&y, 3600.0, 48);
        let nights: Vec<f64> = (0..48)
            .filter(|j| !day(n + j))
            .map(|j| f.point[j])
            .collect();
        let on = nights.iter().filter(|v| **v == 0.0).count();
        // 22 of the 26 night hours ahead; 20 by the majority rule of `floor` alone
        assert!(
            on >= 22,
            "{on} of {}: {}: {nights:?}",
            nights.len(),
            f.model
        );
    }
}
