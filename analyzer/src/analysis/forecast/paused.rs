//! A series that ends in one of its usual pauses: an outage at its floor like several
//! it came back from before, each time where it left off. Every model fed the pause's
//! last steps takes them for the level (a smoothed level, a line, a mean of candidates
//! drops toward the floor), yet the series will most likely come back as it did each
//! time. The forecast is the one made from before the pause, with the floor kept only
//! while the pause more likely than not goes on, by how long the earlier pauses lasted.

use std::ops::Range;

use super::candidates::median;
use super::pinned::{chance_run_of_readings, sat_a_cycle_ago, trailing_run, SAME, SHORTEST_RUN};
use crate::analysis::runs::runs;

/// Fewest earlier pauses that make a record of how long pauses last.
pub const MIN_PAUSES: usize = 3;
/// Fewest earlier pauses at least as long as the current one so far: one that came back
/// after lasting longer bounds it (held until as long, then back), where every model
/// fed the stop takes it for the level and holds it for the whole horizon.
pub const MIN_LONGER: usize = 1;

/// A pause `y` ends in, and how long the earlier ones lasted.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    /// Steps the pause has lasted so far.
    pub run: usize,
    /// The value held.
    pub value: f64,
    /// Lengths of the earlier pauses at least as long as this one so far.
    longer: Vec<usize>,
}

impl Pause {
    /// The pause `y` ends in: a run at its lowest value that chance would not make (in
    /// readings: [`chance_run_of_readings`]), where the earlier such runs are a record
    /// of outages the series resumed from where it left off ([`resumed_on_record`])
    /// and [`MIN_LONGER`] of them lasted at least as long as this one so far, and not
    /// at a phase of `seasons` (in steps) that sat on it a cycle ago (a nightly idle is
    /// the season's, which the models forecast).
    pub fn of(y: &[f64], seasons: &[f64]) -> Option<Pause> {
        let run = trailing_run(y);
        if run < SHORTEST_RUN {
            return None;
        }
        let before = &y[..y.len() - run];
        let value = *y.last()?;
        let lowest = before.iter().copied().fold(f64::INFINITY, f64::min);
        let shortest = chance_run_of_readings(before);
        if run < shortest || (value - lowest).abs() > SAME {
            return None;
        }
        if seasons.iter().any(|&m| sat_a_cycle_ago(y, run, m)) {
            return None;
        }
        let stops = stops_at(before, value, shortest);
        let longer: Vec<usize> = stops
            .iter()
            .map(|r| r.len())
            .filter(|&l| l >= run)
            .collect();
        (resumed_on_record(before, &stops) && longer.len() >= MIN_LONGER).then_some(Pause {
            run,
            value,
            longer,
        })
    }

    /// Whether the pause more likely than not still holds `j` steps after the series'
    /// last (j = 0 is the first step forecast): more than half the earlier pauses that
    /// had lasted this long lasted `j + 1` steps more.
    pub fn holds_at(&self, j: usize) -> bool {
        let lasted = self.longer.iter().filter(|&&l| l > self.run + j).count();
        2 * lasted > self.longer.len()
    }
}

/// The stops at `value` in `y`: runs at it of at least `shortest` steps with a value on
/// either side (ended, and not where `y` starts).
pub fn stops_at(y: &[f64], value: f64, shortest: usize) -> Vec<Range<usize>> {
    runs(y, SAME)
        .filter(|r| r.len() >= shortest && (y[r.start] - value).abs() <= SAME)
        .filter(|r| r.start > 0 && r.end < y.len())
        .collect()
}

/// Whether `y` came back from `stop` (a run of one value with a value on either side)
/// nearer the value before it than the stop's: not a sawtooth's reset to its floor. A
/// return far above a low value before the stop counts too (a cluster back at 100%
/// after an idle that followed one small job); [`resumed`] asks for more.
pub fn came_back(y: &[f64], stop: &Range<usize>) -> bool {
    let (left, back, held) = (y[stop.start - 1], y[stop.end], y[stop.start]);
    (back - left).abs() < (back - held).abs()
}

/// Whether `stops` (of `y`) are a record of outages: at least [`MIN_PAUSES`], most of
/// them come back from ([`came_back`]). The break detector's test (`breaks.rs`): with
/// [`resumed`] there instead, the tenants set came out level (session 47,
/// `docs/validation/analyzer/forecast-eval-session47.md`, section 5).
pub fn on_record(y: &[f64], stops: &[Range<usize>]) -> bool {
    most_of(stops, |r| came_back(y, r))
}

/// Values either side of a stop whose median is the level it left or resumed at.
const SIDE: usize = 3;

/// Whether `y` resumed from `stop` where it left off: the median of the [`SIDE`]
/// values after it within half the drop of the median of those before, give or take
/// twice the series' typical step (`step`, the median absolute change). An outage takes
/// a service down and back to its level; a cluster of GPUs that idles after its last
/// small job comes back at whatever level the next jobs hold (from 4% to 100%), which
/// [`came_back`] counts as a return too.
fn resumed(y: &[f64], stop: &Range<usize>, step: f64) -> bool {
    let left = median(y[stop.start.saturating_sub(SIDE)..stop.start].to_vec());
    let back = median(y[stop.end..(stop.end + SIDE).min(y.len())].to_vec());
    (back - left).abs() <= 0.5 * (left - y[stop.start]).abs() + 2.0 * step
}

/// Whether `stops` (of `y`) are a record of outages the series resumed from: at least
/// [`MIN_PAUSES`], most of them [`resumed`].
fn resumed_on_record(y: &[f64], stops: &[Range<usize>]) -> bool {
    if stops.len() < MIN_PAUSES {
        return false;
    }
    let step = median(y.windows(2).map(|w| (w[1] - w[0]).abs()).collect());
    most_of(stops, |r| resumed(y, r, step))
}

/// Whether `stops` number at least [`MIN_PAUSES`] and most of them pass `returned`.
fn most_of(stops: &[Range<usize>], returned: impl Fn(&Range<usize>) -> bool) -> bool {
    let back = stops.iter().filter(|r| returned(r)).count();
    stops.len() >= MIN_PAUSES && 2 * back > stops.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A noisy cycle of 100 steps with outages at 0 of `lengths` steps, one per cycle
    /// at phase 30, then `tail` steps of cycle and a last outage of `run` steps.
    fn outages(lengths: &[usize], tail: usize, run: usize) -> Vec<f64> {
        let mut y = Vec::new();
        let busy = |t: usize| 50.0 + 30.0 * (t as f64 * 0.0628).sin() + ((t * 7919) % 13) as f64;
        for &len in lengths {
            let start = y.len();
            y.extend((start..start + 100).map(|t| {
                if t % 100 >= 30 && t % 100 < 30 + len {
                    0.0
                } else {
                    busy(t)
                }
            }));
        }
        let start = y.len();
        y.extend((start..start + tail).map(busy));
        y.extend(std::iter::repeat_n(0.0, run));
        y
    }

    #[test]
    fn an_outage_like_those_before_is_a_pause_that_ends_as_they_did() {
        let y = outages(&[10, 20, 12, 30, 25], 50, 8);
        let pause = Pause::of(&y, &[]).expect("a pause");
        assert_eq!((pause.run, pause.value), (8, 0.0));
        // lasted 10, 12, 20, 25, 30: past 8 steps, 3 of 5 go on beyond step 12
        assert!(pause.holds_at(0));
        assert!(
            pause.holds_at(11),
            "20, 25 and 30 of 5 last past 8 + 11 steps"
        );
        assert!(
            !pause.holds_at(12),
            "only 25 and 30 of 5 last past 20 steps"
        );
    }

    #[test]
    fn a_pause_outlasted_only_once_before_holds_until_that_one_ended() {
        let y = outages(&[10, 20, 12, 30, 25], 50, 27);
        let pause = Pause::of(&y, &[]).expect("a pause");
        assert!(pause.holds_at(2), "the 30-step pause lasted 3 steps more");
        assert!(!pause.holds_at(3));
    }

    #[test]
    fn a_stop_longer_than_any_pause_before_or_without_a_record_is_not_one() {
        assert!(Pause::of(&outages(&[10, 20, 12, 30, 25], 50, 40), &[]).is_none());
        assert!(
            Pause::of(&outages(&[10, 20], 50, 8), &[]).is_none(),
            "two pauses"
        );
        assert!(Pause::of(&outages(&[10, 20, 12, 30, 25], 50, 0), &[]).is_none());
        assert!(
            Pause::of(&outages(&[10, 20, 12, 30, 25], 50, 2), &[]).is_none(),
            "chance"
        );
    }

    /// A share of GPUs held: busy (jobs coming and going at `busy`), down to one small
    /// job, idle at 0 for each of `idles`, and back after each at the next busy level,
    /// or (`resume`) first at the small job's level, where it left off; then busy at 50,
    /// the small job and 15 steps idle.
    fn cluster(idles: &[(f64, usize)], resume: bool) -> Vec<f64> {
        let mut y = Vec::new();
        let job = |t: usize| 4.2 * ((t * 7919) % 3) as f64;
        for &(busy, idle) in idles.iter().chain(&[(50.0, 15)]) {
            if resume && !y.is_empty() {
                y.extend([4.2; 10]);
            }
            let start = y.len();
            y.extend((start..start + 60).map(|t| busy - job(t)));
            y.extend([4.2; 10]);
            y.extend(std::iter::repeat_n(0.0, idle));
        }
        y
    }

    #[test]
    fn a_cluster_idle_after_its_last_job_is_no_pause() {
        // each idle came back nearer the small job's level than 0 (so `came_back`), none
        // where it left off: forecast as a pause, the series would come back at the
        // busy level before the last idle
        let idles = [
            (100.0, 30),
            (66.7, 25),
            (100.0, 40),
            (33.3, 20),
            (100.0, 35),
        ];
        let y = cluster(&idles, false);
        let before = &y[..y.len() - 15];
        let stops = stops_at(before, 0.0, chance_run_of_readings(before));
        assert_eq!(stops.len(), 5);
        assert!(
            on_record(before, &stops),
            "every idle came back in that sense"
        );
        assert!(Pause::of(&y, &[]).is_none());
        // idles that ended where they began are an outage's record
        let pause = Pause::of(&cluster(&idles, true), &[]).expect("a pause");
        assert_eq!((pause.run, pause.value), (15, 0.0));
    }

    #[test]
    fn a_ramp_reset_to_its_floor_does_not_come_back_and_is_no_pause() {
        // memory grown by 1 a step to 20, freed to 0 and held there 8 steps
        let cycle: Vec<f64> = (1..=20).map(f64::from).chain([0.0; 8]).collect();
        let mut y: Vec<f64> = cycle.iter().copied().cycle().take(28 * 6).collect();
        y.extend((1..=20).map(f64::from).chain([0.0; 7]));
        assert!(Pause::of(&y, &[]).is_none());
    }

    #[test]
    fn readings_of_zero_held_between_samples_are_no_pause() {
        // a reading every 10 steps, 0 for four readings in a row at times: counted in
        // steps, the runs at 0 (40) would be stops longer than chance makes, and the
        // last (20) a pause; counted in readings, the series repeats too often for that
        let reading = |k: usize| {
            if (k * 7919) % 11 < 4 {
                0.0
            } else {
                0.5 + 0.1 * ((k * 31) % 5) as f64
            }
        };
        let mut y: Vec<f64> = (0..600).map(|t| reading(t / 10)).collect();
        y.extend([0.0; 20]);
        assert!(Pause::of(&y, &[]).is_none());
    }

    #[test]
    fn an_idle_the_cycle_brings_is_the_seasons_not_a_pause() {
        // the outages come at phase 30 of every 100-step cycle: ending there is the season's
        let y = outages(&[10, 20, 12, 30, 25], 30, 8);
        assert!(Pause::of(&y, &[100.0]).is_none());
        assert!(
            Pause::of(&y, &[]).is_some(),
            "without the season it is a pause"
        );
    }
}
