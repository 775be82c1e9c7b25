//! A series that sits exactly on its floor at some phases of its cycle (no traffic at
//! night, a GPU idle at 0 every night): where most of the recent cycles sat on the
//! floor at a phase, the value there is more likely the floor than anything else, and
//! the median forecast is the floor itself. Models that average (smoothing, a mean of
//! candidates) put a small positive value there instead, which misses every such step.

use super::candidates::{same_phase, Path, MEDIAN_CYCLES};
use super::pinned::{MIN_RUN, SAME as ON_FLOOR};
use super::validation::{self, Origins};
use crate::analysis::runs::runs;

/// Sets the forecast `point` (steps 1.. after `y`) to `floor` at the steps whose phase
/// of `period` sat on `floor` in most of the last [`MEDIAN_CYCLES`] cycles (at least
/// three cycles needed), the latest among them (a job that resumed after idle cycles
/// is busy at that phase now), unless the floor held for a whole cycle in that time.
pub fn snap_to_floor(y: &[f64], period: f64, floor: f64, point: &mut [f64]) {
    if !floor.is_finite() || period < 2.0 || idle_within(y, period, floor) {
        return;
    }
    for (j, p) in point.iter_mut().enumerate() {
        let same = same_phase(y, j + 1, period, MEDIAN_CYCLES);
        let on = same
            .iter()
            .filter(|v| (*v - floor).abs() <= ON_FLOOR)
            .count();
        let latest = same.first().is_some_and(|v| (v - floor).abs() <= ON_FLOOR);
        if latest && same.len() >= 3 && 2 * on > same.len() {
            *p = floor;
        }
    }
}

/// Whether [`snap_to_floor`] at `period` erred no more than the choice at the
/// validation `origins` of `y`, snapping each of the choice's `paths` on the data before
/// its origin. The snap is no model that validation chose: a season the choice does not
/// model (naive won) can still snap the forecast, and a cluster held at 100% for hours
/// after idle days was forecast at 0 because the same phase of a 3.7-day "cycle" had
/// been idle (tenants set, seed 20).
pub fn snap_validated(
    y: &[f64],
    period: f64,
    floor: f64,
    origins: &Origins,
    paths: &[Path],
) -> bool {
    let snap = |data: &[f64], p: &mut Path| snap_to_floor(data, period, floor, &mut p.point);
    validation::adjustment_holds(y, origins, paths, &snap)
}

/// The floor rules on the chosen forecast `point` after `y`: the floor phases of
/// `period` where validation gains by them ([`snap_validated`], the choice's `paths`
/// from `origins`), else the floor without a season ([`snap_flat_to_floor`]).
/// Validation is asked only where the two rules disagree: most forecasts are left
/// alone by both.
pub fn snap_forecast(
    y: &[f64],
    period: Option<f64>,
    floor: f64,
    origins: &Origins,
    paths: &[Path],
    point: &mut [f64],
) {
    let mut flat = point.to_vec();
    snap_flat_to_floor(y, floor, &mut flat);
    if let Some(period) = period {
        let mut by_phase = point.to_vec();
        snap_to_floor(y, period, floor, &mut by_phase);
        if by_phase == flat || snap_validated(y, period, floor, origins, paths) {
            flat = by_phase;
        }
    }
    point.copy_from_slice(&flat);
}

/// Without a season: where `y` ends on `floor` and sat on it in most of its last
/// `point.len()` steps (at least [`MIN_RUN`]), the whole forecast is the floor, the
/// median of such a series (a process idle but for short bursts), which a smoothed
/// level or a mean of models lifts off it at every step.
pub fn snap_flat_to_floor(y: &[f64], floor: f64, point: &mut [f64]) {
    let k = point.len().max(MIN_RUN).min(y.len());
    let recent = &y[y.len() - k..];
    let on = recent
        .iter()
        .filter(|v| (*v - floor).abs() <= ON_FLOOR)
        .count();
    let ends_on = recent.last().is_some_and(|v| (v - floor).abs() <= ON_FLOOR);
    if floor.is_finite() && ends_on && 2 * on > k {
        point.iter_mut().for_each(|p| *p = floor);
    }
}

/// Whether `y` sat on `floor` for a whole `period` or longer within its last
/// [`MEDIAN_CYCLES`] cycles: that is a job idle, not a phase of the cycle at the floor,
/// and the job may have resumed (its phases not yet seen since then were idle last).
pub(super) fn idle_within(y: &[f64], period: f64, floor: f64) -> bool {
    let look = ((MEDIAN_CYCLES as f64 * period).ceil() as usize).min(y.len());
    let recent = &y[y.len() - look..];
    runs(recent, 0.0)
        .filter(|r| (recent[r.start] - floor).abs() <= ON_FLOOR)
        .any(|r| r.len() as f64 >= period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_mostly_on_the_floor_are_forecast_on_it() {
        // a 10-step cycle: 0 at phases 0-3 (phase 2 busy in one of the last five
        // cycles, phase 3 in three of them), busy elsewhere
        let y: Vec<f64> = (0..60)
            .map(|t| {
                let (phase, cycle) = (t % 10, t / 10);
                match phase {
                    0 | 1 => 0.0,
                    2 if cycle % 3 == 0 => 0.4,
                    3 if cycle % 2 == 1 => 0.4,
                    2 | 3 => 0.0,
                    _ => 0.5,
                }
            })
            .collect();
        let mut point = vec![0.1; 10];
        snap_to_floor(&y, 10.0, 0.0, &mut point);
        assert_eq!(&point[..4], &[0.0, 0.0, 0.0, 0.1]);
        assert!(point[4..].iter().all(|v| *v == 0.1));
        // idle for three cycles, busy again in the latest: nothing on the floor
        let resumed: Vec<f64> = (0..60)
            .map(|t| if (20..50).contains(&t) { 0.0 } else { 0.5 })
            .collect();
        let mut busy = vec![0.5; 10];
        snap_to_floor(&resumed, 10.0, 0.0, &mut busy);
        assert!(busy.iter().all(|v| *v == 0.5), "{busy:?}");
        // idle for three cycles, resumed two steps ago: the phases not seen since
        // were idle last, but the idle run was longer than a cycle
        let mut just_resumed: Vec<f64> = (0..60).map(|t| if t >= 20 { 0.0 } else { 0.5 }).collect();
        just_resumed.extend([0.5, 0.5]);
        let mut busy = vec![0.5; 10];
        snap_to_floor(&just_resumed, 10.0, 0.0, &mut busy);
        assert!(busy.iter().all(|v| *v == 0.5), "{busy:?}");
        // no floor, no change
        let mut unbounded = vec![0.1; 10];
        snap_to_floor(&y, 10.0, f64::NEG_INFINITY, &mut unbounded);
        assert!(unbounded.iter().all(|v| *v == 0.1));
    }

    /// The choice's paths from `origins` (`origins.steps` each), all at `level`.
    fn flat_paths(origins: &Origins, level: f64) -> Vec<Path> {
        let path = Path {
            point: vec![level; origins.steps],
            var: vec![0.0; origins.steps],
        };
        vec![path; origins.at.len()]
    }

    #[test]
    fn a_snap_is_kept_where_validation_gains_by_it() {
        // idle at phases 0-3 of every 10-step cycle; the choice holds a busy level
        let y: Vec<f64> = (0..100)
            .map(|t| if t % 10 < 4 { 0.0 } else { 0.5 })
            .collect();
        let origins = Origins {
            at: vec![60, 70, 80, 90],
            steps: 10,
        };
        let paths = flat_paths(&origins, 0.5);
        assert!(snap_validated(&y, 10.0, 0.0, &origins, &paths));
    }

    #[test]
    fn a_snap_that_validation_loses_by_is_refused() {
        // idle at phases 20-39 of a 40-step cycle for four cycles, then busy for 60
        // steps: from the first two origins the snap puts the busy steps on the floor
        let y: Vec<f64> = (0..220)
            .map(|t| if t < 160 && t % 40 >= 20 { 0.0 } else { 0.5 })
            .collect();
        let origins = Origins {
            at: vec![180, 190, 200, 210],
            steps: 10,
        };
        let paths = flat_paths(&origins, 0.5);
        let mut first = paths[0].point.clone();
        snap_to_floor(&y[..180], 40.0, 0.0, &mut first);
        assert!(first.iter().all(|v| *v == 0.0), "the snap fires: {first:?}");
        assert!(!snap_validated(&y, 40.0, 0.0, &origins, &paths));
    }

    #[test]
    fn a_series_idle_but_for_bursts_is_forecast_on_its_floor() {
        // a process at 0 with a short burst every 7 steps, idle at the end
        let y: Vec<f64> = (0..100)
            .map(|t| if t % 7 == 3 { 0.4 } else { 0.0 })
            .collect();
        let mut point = vec![0.05; 20];
        snap_flat_to_floor(&y, 0.0, &mut point);
        assert!(point.iter().all(|v| *v == 0.0), "{point:?}");
        // busy most of the time: the floor is no median
        let busy: Vec<f64> = (0..100)
            .map(|t| if t % 3 == 0 { 0.0 } else { 0.4 })
            .collect();
        let mut point = vec![0.3; 20];
        snap_flat_to_floor(&busy, 0.0, &mut point);
        assert!(point.iter().all(|v| *v == 0.3), "{point:?}");
        // ending in a burst: the burst is where the series is now
        let mut bursting = y.clone();
        bursting.push(0.4);
        let mut point = vec![0.2; 20];
        snap_flat_to_floor(&bursting, 0.0, &mut point);
        assert!(point.iter().all(|v| *v == 0.2), "{point:?}");
    }
}
