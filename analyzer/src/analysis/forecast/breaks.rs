//! Breaks: one-step changes far larger than the series' usual steps (memory freed, a
//! job starting or ending, a regime switch), and the end of a stretch held at one
//! value (a job resuming). A trend estimated across a break mixes
//! the ramp before it with the drop itself, and extrapolates that mixture; the trend
//! models are run on the data since the last break only ([`since_last_break`]).

use super::linear::explained_share;
use super::memo::Memo;
use super::paused;
use super::pinned::{chance_run_of_readings, MIN_RUN};
use super::spikes::{from_order_key, large_step, large_step_from_top, order_key};
use crate::analysis::runs::runs;

/// A one-step change of more than this many large steps is a break. A large step is the
/// 99th percentile of the absolute first differences, as for spikes, so changes that
/// recur often (bursts) set the scale and do not count.
pub const BREAK_STEPS: f64 = 4.0;

/// Fewest points since the last break from which a trend is estimated.
pub const MIN_SEGMENT: usize = 10;

/// The data a trend for `h` steps ahead is estimated from: the part of `y` since its
/// last break, if that holds [`MIN_SEGMENT`] points and half the horizon. A slope from
/// fewer points, extrapolated that far, is mostly its noise (a line through 20 noisy
/// points, run 288 steps on); `None` then, and the trend models fall back to their
/// models without a trend.
pub fn trend_data(y: &[f64], h: usize) -> Option<&[f64]> {
    let segment = since_last_break(y);
    carries_trend(segment, h).then_some(segment)
}

/// Where the current regimes of prefixes of one series start, found once per prefix
/// length and shared by the candidates (each forecasts from the same origins).
#[derive(Debug, Default)]
pub struct Regimes {
    starts: Memo<usize, usize>,
    steps: Option<SeriesSteps>,
}

impl Regimes {
    /// The regimes of prefixes of `series`, its large steps and long runs found once
    /// for all of them.
    pub fn of(series: &[f64]) -> Self {
        Regimes {
            starts: Memo::default(),
            steps: Some(SeriesSteps::of(series)),
        }
    }

    /// The part of `y` (a prefix of the series) after its last break.
    pub fn current<'a>(&self, y: &'a [f64]) -> &'a [f64] {
        let start = self.starts.get_or(y.len(), || {
            self.steps
                .as_ref()
                .and_then(|s| s.regime_start(y))
                .unwrap_or_else(|| regime_start(y))
        });
        &y[start..]
    }
}

/// A series keeps one in this many of its steps, the largest, for its prefixes' large
/// steps: the 1% above [`large_step`], and room for the largest of the steps that the
/// prefixes leave out. A prefix whose large step is not among them is read from the
/// start.
const LARGEST_SHARE: usize = 25;

/// What [`regime_start`] reads of a series, found once for all of its prefixes: the
/// validation's origins ask for the regime of each, and each asked for its large step,
/// its jumps and its runs from the start, three passes over the data per origin.
#[derive(Debug)]
struct SeriesSteps {
    series: Vec<f64>,
    /// The largest absolute steps, `(order key, t)` for the step into `t`, largest first.
    largest: Vec<(i64, usize)>,
    /// The runs of one value of at least [`MIN_RUN`] steps, in order.
    held: Vec<std::ops::Range<usize>>,
    /// The steps far beyond those before them ([`beyond_earlier`]), in order.
    beyond_earlier: Vec<(usize, f64)>,
}

impl SeriesSteps {
    fn of(series: &[f64]) -> Self {
        let mut steps: Vec<(i64, usize)> = (1..series.len())
            .map(|t| (order_key((series[t] - series[t - 1]).abs()), t))
            .collect();
        let beyond_earlier = beyond_earlier(steps.iter().map(|&(key, _)| key));
        let kept = (steps.len() / LARGEST_SHARE + 1).min(steps.len());
        if kept < steps.len() {
            steps.select_nth_unstable_by(kept, |a, b| b.cmp(a));
            steps.truncate(kept);
        }
        steps.sort_unstable_by(|a, b| b.cmp(a));
        SeriesSteps {
            series: series.to_vec(),
            largest: steps,
            held: runs(series, 0.0).filter(|r| r.len() >= MIN_RUN).collect(),
            beyond_earlier,
        }
    }

    /// [`regime_start`] of `y` from what was found, or `None` where `y` is not a
    /// prefix of the series or its large step is not among the kept steps.
    fn regime_start(&self, y: &[f64]) -> Option<usize> {
        let m = y.len();
        if m < 3 {
            return Some(0);
        }
        if m > self.series.len() || self.series[..m] != *y {
            return None;
        }
        let mut inside = self.largest.iter().filter(|(_, t)| *t < m);
        let (key, _) = inside.nth(large_step_from_top(m - 1) - 1)?;
        let limit = BREAK_STEPS * from_order_key(*key);
        let mut jumps: Vec<usize> = self
            .largest
            .iter()
            .take_while(|(k, _)| k > key)
            .filter(|(k, t)| *t < m && from_order_key(*k) > limit)
            .map(|(_, t)| *t)
            .collect();
        jumps.sort_unstable_by(|a, b| b.cmp(a));
        let jump = jumps.into_iter().find(|&t| breaks_regime(y, t, limit));
        let masked = self.beyond_earlier.iter().filter(|(t, _)| *t < m);
        let jump = jump.max(last_break_beyond_earlier(y, masked.copied()));
        let held = self.held.iter().take_while(|r| r.start < m);
        let held = held_boundary(y, held.map(|r| r.start..r.end.min(m)));
        Some(jump.unwrap_or(0).max(held.unwrap_or(0)))
    }
}

/// The shorter of two suffixes of the same series.
pub fn shorter<'a>(a: &'a [f64], b: &'a [f64]) -> &'a [f64] {
    if a.len() <= b.len() {
        a
    } else {
        b
    }
}

/// Whether `segment` (data since a break) carries a trend for `h` steps: it holds
/// [`MIN_SEGMENT`] points and half the horizon (see [`trend_data`]).
pub fn carries_trend(segment: &[f64], h: usize) -> bool {
    segment.len() >= MIN_SEGMENT.max(h / 2)
}

/// Least share of its variance a segment shorter than the horizon must have explained by
/// its line for a trend without a season to be carried past it.
pub const LINE_SHARE: f64 = 0.5;

/// Whether `segment` carries a trend without a season for `h` steps: as
/// [`carries_trend`], and, holding fewer than `h` points, only where its line explains at
/// least [`LINE_SHARE`] of its variance. A line carried further than the data it was
/// fitted to is trusted where the segment is that line (memory filling up since it was
/// freed), not where it is a job's noisy excursion: validation scores the trend models
/// at earlier origins, where the segment was long and its slope slight, and cannot see
/// that at the last origin a few hours of noise would be run on for a day.
pub fn carries_line(segment: &[f64], h: usize) -> bool {
    carries_trend(segment, h) && (segment.len() >= h || explained_share(segment) >= LINE_SHARE)
}

/// The part of `y` after its last break (all of `y` without one).
pub fn since_last_break(y: &[f64]) -> &[f64] {
    &y[regime_start(y)..]
}

/// Where the part of `y` after its last break starts.
fn regime_start(y: &[f64]) -> usize {
    if y.len() < 3 {
        return 0;
    }
    let limit = BREAK_STEPS * large_step(y.windows(2).map(|w| (w[1] - w[0]).abs()));
    let jump = (1..y.len())
        .rev()
        .find(|&t| (y[t] - y[t - 1]).abs() > limit && breaks_regime(y, t, limit));
    let keys = y.windows(2).map(|w| order_key((w[1] - w[0]).abs()));
    let jump = jump.max(last_break_beyond_earlier(
        y,
        beyond_earlier(keys).into_iter(),
    ));
    jump.unwrap_or(0)
        .max(held_boundary(y, runs(y, 0.0)).unwrap_or(0))
}

/// Fewest steps before a jump whose large step ([`large_step`]: the 99th percentile)
/// it is measured against in [`beyond_earlier`]: fewer have no 99th percentile.
pub const MIN_EARLIER: usize = 100;

/// The jumps into `t` larger than [`BREAK_STEPS`] large steps of the steps before them
/// (at least [`MIN_EARLIER`]), with that limit, in order. A level shift is measured
/// against the whole series' large step too, but bursts after it can set that scale:
/// a machine gone idle at 0 from 33% whose idle load spikes to 13 every two hours has
/// as many such steps in its last day as make the top 1% of the window, and a fall of
/// 31 is then less than four of them. Against the steps it followed it is a break.
/// `steps` are the [`order_key`]s of the step sizes, the first the step into 1.
fn beyond_earlier(steps: impl ExactSizeIterator<Item = i64>) -> Vec<(usize, f64)> {
    let mut out = Vec::new();
    if steps.len() <= MIN_EARLIER {
        return out;
    }
    // A prefix's large step is its k-th largest step, k at most the whole's: it is
    // among the `most` largest steps so far, which most steps are too small to join.
    let most = large_step_from_top(steps.len() - 1);
    let mut largest: Vec<i64> = Vec::with_capacity(most + 1);
    // the rank of the large step of the steps before `t`, and its limit while it holds
    let (mut k, mut limit) = (0, None);
    for (key, t) in steps.zip(1..) {
        if t > MIN_EARLIER {
            let rank = large_step_from_top(t - 1);
            if rank != k {
                (k, limit) = (rank, None);
            }
            let at = *limit
                .get_or_insert_with(|| BREAK_STEPS * from_order_key(largest[largest.len() - k]));
            if from_order_key(key) > at {
                out.push((t, at));
            }
        }
        if largest.len() < most || key > largest[0] {
            if largest.len() == most {
                largest.remove(0);
            }
            let slot = largest.partition_point(|&kept| kept < key);
            largest.insert(slot, key);
            limit = None;
        }
    }
    out
}

/// The latest of the `jumps` (`(t, limit)`, in order, each into a step of `y`) that is
/// at least as large as every step after it and starts a regime. A fall that bursts
/// after it hid from the whole's scale is still the largest move since; a day's dip
/// early in the series, large only against the few steps before it, is not where
/// larger jumps followed.
fn last_break_beyond_earlier(
    y: &[f64],
    jumps: impl DoubleEndedIterator<Item = (usize, f64)>,
) -> Option<usize> {
    let size = |t: usize| (y[t] - y[t - 1]).abs();
    // the largest step into `cursor..y.len()`
    let (mut later, mut cursor) = (0.0f64, y.len());
    for (t, limit) in jumps.rev() {
        while cursor > t + 1 {
            cursor -= 1;
            later = later.max(size(cursor));
        }
        if size(t) >= later && breaks_regime(y, t, limit) {
            return Some(t);
        }
    }
    None
}

/// Whether the jump into `t`, beyond `limit`, starts a regime: it lasts, and neither
/// bridges a stop nor comes back.
fn breaks_regime(y: &[f64], t: usize, limit: f64) -> bool {
    lasts(y, t, limit) && !bridged(y, t) && !came_back(y, t, limit)
}

/// Points on each side of a jump whose medians tell a lasting change from a burst.
pub const LEVEL_WINDOW: usize = 20;

/// Whether the jump at `t` changes the level for good: the median of the
/// [`LEVEL_WINDOW`] points after it (as many as there are) stands more than half of
/// `limit` from the median of those before it. A burst that comes back (a checkpoint's
/// copy, a sweep's spike) leaves the level where it was and starts no regime.
fn lasts(y: &[f64], t: usize, limit: f64) -> bool {
    let median = |v: &[f64]| super::candidates::median(v.to_vec());
    let before = median(&y[t.saturating_sub(LEVEL_WINDOW)..t]);
    let after = median(&y[t..(t + LEVEL_WINDOW).min(y.len())]);
    (after - before).abs() > 0.5 * limit
}

/// Whether the jump at `t` starts or ends a stop (a run of one value, two steps or
/// more) that the series came back from ([`paused::came_back`]), or one of a record of
/// such stops at that value ([`paused::on_record`]): an outage, after which the cycle
/// goes on, not a new regime.
fn bridged(y: &[f64], t: usize) -> bool {
    let value = if t >= 2 && y[t - 1] == y[t - 2] {
        y[t - 1]
    } else if t + 1 < y.len() && y[t] == y[t + 1] {
        y[t]
    } else {
        return false;
    };
    let start = (0..t).rev().find(|&i| y[i] != value).map_or(0, |i| i + 1);
    let end = (t..y.len()).find(|&i| y[i] != value).unwrap_or(y.len());
    if start == 0 || end == y.len() {
        return false;
    }
    let earlier = &y[..start];
    let stops = paused::stops_at(earlier, value, chance_run_of_readings(earlier));
    paused::came_back(y, &(start..end)) || paused::on_record(earlier, &stops)
}

/// Longest burst, in steps, whose jumps out and back are one excursion.
pub const MAX_BURST: usize = LEVEL_WINDOW;

/// Whether the jump at `t` ends an excursion of up to [`MAX_BURST`] steps that began
/// with a jump the other way and came back nearer where it began than where it went,
/// or begins one: a burst on a steep daily ramp moves the medians on either side apart
/// by the ramp, not by a new level.
fn came_back(y: &[f64], t: usize, limit: f64) -> bool {
    let jump = |i: usize| y[i] - y[i - 1];
    let opposite = |a: usize, b: usize| jump(a).abs() > limit && jump(a) * jump(b) < 0.0;
    let back = (t.saturating_sub(MAX_BURST).max(1)..t)
        .any(|s| opposite(s, t) && (y[t] - y[s - 1]).abs() < jump(t).abs());
    let on = (t + 1..(t + 1 + MAX_BURST).min(y.len()))
        .any(|e| opposite(e, t) && (y[e] - y[t - 1]).abs() < jump(e).abs());
    back || on
}

/// Share of the data a run of equal values must last to be a regime of its own rather
/// than the flat top of every cycle (a GPU at exactly 100% through each step burst).
pub const HELD_SHARE: usize = 50;

/// The last boundary, among `runs` (those of `y` of one value; at least all of them
/// [`MIN_RUN`] steps or longer), of a run of equal values long enough not to happen by chance
/// (at least [`MIN_RUN`] steps, and [`chance_run_of_readings`]: enough of the series' usual
/// readings) and a 1/[`HELD_SHARE`] of `y` (the first index after it ended, or where it
/// started if it lasts to the end): a job stopped or resumed, a new regime, however
/// small the step (a training job's dips are as deep as its fall to idle). A reading
/// sampled every 10 s and scraped every second repeats two or three times in a row by
/// itself, and makes runs of 20 or 30 steps that stop nothing.
fn held_boundary(
    y: &[f64],
    runs: impl Iterator<Item = std::ops::Range<usize>> + Clone,
) -> Option<usize> {
    let shortest = MIN_RUN.max(y.len() / HELD_SHARE);
    // most series hold no run even this long: spare them the reading statistics
    if !runs.clone().any(|r| r.len() >= shortest) {
        return None;
    }
    let long = shortest.max(chance_run_of_readings(y));
    runs.filter(|r| r.len() >= long)
        .last()
        .map(|r| if r.end == y.len() { r.start } else { r.end })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regimes_of_prefixes_found_once_are_those_found_from_each() {
        let wave = |t: usize| (t as f64 * 0.37).sin() + 0.1 * ((t * 7919) % 11) as f64;
        let series: Vec<Vec<f64>> = vec![
            // a ramp freed every 250 steps
            (0..900)
                .map(|t| 0.01 * (t % 250) as f64 + 0.01 * wave(t))
                .collect(),
            // a level shift, a burst that comes back, a stop of 80 steps at 0
            (0..900)
                .map(|t| match t {
                    300..=304 => 40.0,
                    500..=579 => 0.0,
                    _ if t > 650 => 20.0 + wave(t),
                    _ => 10.0 + wave(t),
                })
                .collect(),
            // held at 100 with rare dips, the last hold lasting to the end
            (0..900)
                .map(|t| {
                    if t % 97 == 0 || (700..760).contains(&t) {
                        60.0
                    } else {
                        100.0
                    }
                })
                .collect(),
            // a job stopped at its mean for 100 steps, then going on as before
            (0..900)
                .map(|t| {
                    if (400..500).contains(&t) {
                        0.5
                    } else {
                        wave(t)
                    }
                })
                .collect(),
            // calm, then steps far larger than any before: the prefixes' large steps
            // are not among the series' largest
            (0..900)
                .map(|t| if t < 600 { wave(t) } else { 1e3 * wave(t) })
                .collect(),
            // a fall that the spikes after it would hide from the whole's scale
            gone_idle(700, 200),
        ];
        let mut found_again = 0;
        for y in &series {
            let regimes = Regimes::of(y);
            for m in 0..=y.len() {
                let want = since_last_break(&y[..m]).len();
                assert_eq!(regimes.current(&y[..m]).len(), want, "prefix {m}");
            }
            let steps = SeriesSteps::of(y);
            found_again += (3..y.len())
                .filter(|&m| steps.regime_start(&y[..m]).is_none())
                .count();
            let other: Vec<f64> = y.iter().map(|v| v + 1.0).collect();
            assert_eq!(steps.regime_start(&other[..500]), None, "not a prefix");
        }
        assert!(
            found_again > 0,
            "some prefixes' large steps are beyond the kept ones"
        );
    }

    /// A machine busy near 33% (30 to 36, a rare step of 9 more) for `busy` steps,
    /// then idle at 0 or 0.33 with a spike of 13 every 24 steps for `idle` steps.
    fn gone_idle(busy: usize, idle: usize) -> Vec<f64> {
        let mut y: Vec<f64> = (0..busy)
            .map(|i| 33.0 + ((i * 7919) % 7) as f64 - 3.0 + if i % 150 == 0 { 9.0 } else { 0.0 })
            .collect();
        y.extend((0..idle).map(|i| match i % 24 {
            23 => 13.0,
            j => 0.33 * (j % 2) as f64,
        }));
        y
    }

    #[test]
    fn the_jumps_beyond_earlier_steps_are_measured_against_each_prefix() {
        let wave = |t: usize| (t as f64 * 0.37).sin() + 0.1 * ((t * 7919) % 11) as f64;
        let series: Vec<Vec<f64>> = vec![
            gone_idle(400, 300),
            // calm, then steps far larger than any before, then calm again
            (0..700)
                .map(|t| match t {
                    300..=399 => 1e3 * wave(t),
                    _ => wave(t),
                })
                .collect(),
            // steps growing with the level, a few bursts
            (0..600)
                .map(|t| (1.0 + t as f64 / 50.0) * wave(t) + if t % 97 == 0 { 30.0 } else { 0.0 })
                .collect(),
            (0..MIN_EARLIER + 1).map(wave).collect(),
        ];
        let mut found = 0;
        for y in &series {
            let size = |t: usize| (y[t] - y[t - 1]).abs();
            let want: Vec<(usize, f64)> = (MIN_EARLIER + 1..y.len())
                .map(|t| (t, BREAK_STEPS * large_step((1..t).map(size))))
                .filter(|&(t, limit)| size(t) > limit)
                .collect();
            let keys = y.windows(2).map(|w| order_key((w[1] - w[0]).abs()));
            assert_eq!(beyond_earlier(keys), want);
            found += want.len();
        }
        assert!(found >= 3, "the fall, the calm's end and a burst: {found}");
    }

    #[test]
    fn a_fall_whose_later_spikes_set_the_scale_still_starts_a_regime() {
        // 300 idle steps hold 24 steps of 13 up and down: more than the top 1% of the
        // 2,000 steps, so four large steps of the whole exceed the fall of 33
        let y = gone_idle(1700, 300);
        let whole = BREAK_STEPS * large_step(y.windows(2).map(|w| (w[1] - w[0]).abs()));
        assert!(whole > 33.0, "the spikes set the whole's scale: {whole}");
        assert_eq!(since_last_break(&y).len(), 300);
        assert_eq!(Regimes::of(&y).current(&y).len(), 300);
        // the spikes alone, with no fall before them, start nothing
        let idle = gone_idle(0, 600);
        assert_eq!(since_last_break(&idle).len(), 600);
    }

    #[test]
    fn a_jump_large_only_against_the_calm_before_it_starts_no_regime_where_larger_followed() {
        // 150 calm steps, a dip of 10 for 30 steps, then the calm level again with a
        // spike of 15 every 50 steps: the dip's fall and return are far beyond the calm
        // steps before them, but smaller than the spikes' steps after them
        let calm = |i: usize| 50.0 + ((i * 7919) % 5) as f64 * 0.2;
        let y: Vec<f64> = (0..700)
            .map(|i| match i {
                150..=179 => calm(i) - 10.0,
                _ if i > 200 && i % 50 == 0 => calm(i) + 15.0,
                _ => calm(i),
            })
            .collect();
        assert_eq!(since_last_break(&y).len(), 700);
        assert_eq!(Regimes::of(&y).current(&y).len(), 700);
        // without the spikes the dip's return is the largest step since: a regime
        let plain: Vec<f64> = (0..700)
            .map(|i| {
                if (150..180).contains(&i) {
                    calm(i) - 10.0
                } else {
                    calm(i)
                }
            })
            .collect();
        assert_eq!(since_last_break(&plain).len(), 520);
    }

    #[test]
    fn a_reset_starts_the_segment_and_ordinary_steps_do_not() {
        // a slow ramp freed twice; the last reset 30 steps before the end
        let y: Vec<f64> = (0..530)
            .map(|i| {
                1.0 + 0.01
                    * (if i < 250 {
                        i
                    } else if i < 500 {
                        i - 250
                    } else {
                        i - 500
                    }) as f64
            })
            .collect();
        assert_eq!(since_last_break(&y).len(), 30);
        assert_eq!(trend_data(&y, 60).map(<[f64]>::len), Some(30));
        assert_eq!(
            trend_data(&y, 62),
            None,
            "30 points do not carry a 62-step trend"
        );
        // a training job's iterations, idle for 100 steps, resumed 70 steps ago
        let mut resumed: Vec<f64> = (0..400)
            .map(|i| if i % 20 < 10 { 20.0 } else { 90.0 })
            .collect();
        resumed.extend([0.0; 100]);
        resumed.extend((0..70).map(|i| if i % 20 < 10 { 20.0 } else { 90.0 }));
        assert_eq!(since_last_break(&resumed).len(), 70);
        // idle for the last 100 steps: the idle stretch is the current regime
        assert_eq!(since_last_break(&resumed[..500]).len(), 100);
        // the flat tops of the cycles (10 steps at exactly 90) are no regime
        assert_eq!(since_last_break(&resumed[..400]).len(), 400);
        let noisy: Vec<f64> = (0..300).map(|i| ((i * 7919) % 13) as f64).collect();
        assert_eq!(since_last_break(&noisy).len(), 300);
    }

    #[test]
    fn a_line_is_carried_past_its_data_only_where_the_segment_is_that_line() {
        let noise = |i: usize| ((i * 7919) % 13) as f64 / 6.0 - 1.0;
        // memory filling up: 100 steps rising 0.5 a step, ±1 around the line
        let ramp: Vec<f64> = (0..100).map(|i| 0.5 * i as f64 + noise(i)).collect();
        assert!(carries_line(&ramp, 150));
        // a job's load rising as much through ±40 of noise
        let excursion: Vec<f64> = (0..100)
            .map(|i| 10.0 + 0.5 * i as f64 + 40.0 * noise(i))
            .collect();
        assert!(explained_share(&excursion) < LINE_SHARE);
        assert!(carries_trend(&excursion, 150), "a seasonal trend still is");
        assert!(!carries_line(&excursion, 150));
        // as long as the horizon, or too short for any trend
        assert!(carries_line(&excursion, 100));
        assert!(!carries_line(&ramp[..40], 150));
        assert!(
            !carries_line(&[3.0; 100], 150),
            "a flat segment explains nothing"
        );
    }

    #[test]
    fn readings_held_between_samples_start_no_regime_and_a_stop_does() {
        // a 40 s cycle read every 10 s and scraped every second (NVML's per-process
        // utilization): 30 busy steps in three readings, sometimes equal (20 steps at
        // one value), then 10 idle
        let reading = |i: usize| match i % 40 {
            0..=9 => 0.84,
            10..=19 => 0.84,
            20..=29 => 0.83,
            _ => 0.21,
        };
        let held: Vec<f64> = (0..400).map(reading).collect();
        assert_eq!(since_last_break(&held).len(), 400);
        // the job stopped for 150 steps and resumed 80 steps ago
        let mut stopped = held.clone();
        stopped.extend([0.0; 150]);
        stopped.extend((0..80).map(reading));
        assert_eq!(since_last_break(&stopped).len(), 80);
    }

    #[test]
    fn a_burst_that_comes_back_starts_no_regime_and_a_lasting_step_does() {
        // a checkpoint's copy every 400 steps: 5 steps 200 times the usual traffic,
        // rarer than the 1% of steps that set the scale of a large step
        let traffic = |i: usize| {
            let base = 6.0 + ((i * 7919) % 5) as f64 * 0.1;
            if i % 400 >= 395 {
                1200.0
            } else {
                base
            }
        };
        let bursts: Vec<f64> = (0..900).map(traffic).collect();
        assert_eq!(
            since_last_break(&bursts).len(),
            900,
            "the level never moved"
        );
        // the same traffic moved up for good 40 steps ago
        let mut shifted: Vec<f64> = (0..860).map(traffic).collect();
        shifted.extend((860..900).map(|i| traffic(i) + 500.0));
        assert_eq!(since_last_break(&shifted).len(), 40);
    }

    /// A 100-step cycle between 40 and 120, a little noise.
    fn cycle(i: usize) -> f64 {
        80.0 + 40.0 * (i as f64 * std::f64::consts::TAU / 100.0).sin()
            + ((i * 7919) % 7) as f64 * 0.2
    }

    #[test]
    fn an_outage_come_back_from_starts_no_regime_and_a_new_level_after_it_does() {
        // stopped at 0 for 30 steps (longer than a burst, shorter than a fiftieth of
        // the series: no held stretch), 70 steps before the end, back on its cycle
        let mut y: Vec<f64> = (0..2000).map(cycle).collect();
        y[1900..1930].fill(0.0);
        assert_eq!(since_last_break(&y).len(), 2000);
        // back at a quarter of the level: a new regime
        let low: Vec<f64> = (0..2000)
            .map(|i| if i >= 1930 { cycle(i) / 4.0 } else { cycle(i) })
            .collect();
        let mut y = low;
        y[1900..1930].fill(0.0);
        assert_eq!(since_last_break(&y).len(), 70);
    }

    #[test]
    fn after_three_outages_come_back_from_a_fourth_starts_no_regime_either() {
        // the last stop ran from near the cycle's peak to its trough, and the series
        // came back nearer 0 than where it left; it had stopped and come back three
        // times before
        let mut y: Vec<f64> = (0..3000).map(cycle).collect();
        y[2925..2975].fill(0.0);
        let mut stopped = y.clone();
        for start in [500, 1000, 1500] {
            stopped[start..start + 10].fill(0.0);
        }
        assert_eq!(since_last_break(&stopped).len(), 3000);
        assert_eq!(since_last_break(&y).len(), 25, "without the record");
    }

    #[test]
    fn a_sawtooth_reset_held_at_its_floor_still_starts_a_regime() {
        // memory grown for 250 steps, freed to 1 and held there 8 steps, five times:
        // stops at one value on record, but the series never came back to where it
        // left; the last reset 38 steps before the end
        let mut y = Vec::new();
        for len in [250, 250, 250, 250, 30] {
            y.extend([1.0; 8]);
            y.extend((1..=len).map(|i| 1.0 + 0.01 * i as f64));
        }
        assert_eq!(since_last_break(&y).len(), 38);
    }

    #[test]
    fn a_burst_on_a_steep_ramp_starts_no_regime() {
        // a morning ramp, 1 a step, with a 3-step burst 40 steps before the end: the
        // medians on either side of the burst's end differ by the ramp
        let mut y: Vec<f64> = (0..300)
            .map(|i| 100.0 + ((i * 7919) % 7) as f64 * 0.3)
            .collect();
        y.extend((0..100).map(|i| 100.0 + i as f64 + ((i * 7919) % 7) as f64 * 0.3));
        y[357..360].iter_mut().for_each(|v| *v += 60.0);
        assert_eq!(since_last_break(&y).len(), 400);
    }
}
