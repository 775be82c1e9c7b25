//! Trains of events: a period told by when something happens, not by the spectrum.
//!
//! A dip one step wide every 10.7 steps (a checkpoint), six times over, is plain to the
//! eye, yet its power is spread evenly over every harmonic up to Nyquist: the
//! periodogram looks white, and whitening removes what is left. In the time domain it
//! is six events, evenly spaced. Events are the runs of values beyond [`EVENT_Z`]
//! robust standard deviations of the series (dips, spikes, busy windows) or of its
//! differences (a sawtooth's resets; the rise and fall of a lone value are left to the
//! values). A train is a set of events on one comb: every spacing a whole number of
//! periods within [`SPACING_TOLERANCE`], the events within [`MAX_JITTER`] of the
//! fitted comb, at least [`MIN_CYCLES`] cycles from the first step to the last, of
//! which at most one in [`MISSING_SHARE`] lacks its event, and one event that is off
//! the comb (an outlier among the dips) set aside where enough remain.

use super::prepare::median_in_place;
use crate::analysis::extent::max_abs_finite;

/// Robust z (median and MAD × 1.4826) beyond which a value is an event: white noise
/// reaches it about once in 1.7 million values. Where more than half the values sit
/// on the median (an idle GPU), every value off it is an event.
pub const EVENT_Z: f64 = 5.0;

/// Fewest cycles a train spans, counting those that lack their event.
pub const MIN_CYCLES: usize = 6;

/// Largest distance of a spacing from a whole number of periods, as a share of the
/// period (and at least one step: events sit on whole steps).
pub const SPACING_TOLERANCE: f64 = 0.15;

/// Largest root-mean-square distance of the events from the fitted comb, as a share
/// of the period (and at least half a step).
pub const MAX_JITTER: f64 = 0.075;

/// A train may lack the event of one cycle in this many (a dip inside a filled gap, a
/// reset next to an outlier), and always of one.
pub const MISSING_SHARE: usize = 4;

/// Runs of events at most this many values apart are one event (a wide pulse whose
/// noise dips below the threshold for a step).
const MERGE_GAP: usize = 2;

/// A regular train of events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Train {
    /// The period in steps, fitted to every event on the comb.
    pub period: f64,
    /// Events on the comb.
    pub events: usize,
    /// Whether one more event, off the comb, was set aside.
    pub set_aside: bool,
}

/// Event sets searched per series: values and differences, above and below.
const SEARCHES: f64 = 4.0;

impl Train {
    /// About how often events at random positions make as regular a train: each event
    /// beyond the two that set the comb falls within the jitter of its tooth with
    /// probability about 2 × [`MAX_JITTER`]; any spacing may set the comb, any event
    /// may have been the one set aside, and four sets of events were searched. Random
    /// positions (6 to 12 events, 100,000 sets each) pass at most a tenth as often.
    pub fn p_value(&self) -> f64 {
        let beyond = self.events.saturating_sub(2) as i32;
        let choices = if self.set_aside { self.events + 1 } else { 1 };
        let spacings = self.events.saturating_sub(1);
        let p = SEARCHES * (choices * spacings) as f64 * (2.0 * MAX_JITTER).powi(beyond);
        p.min(1.0)
    }
}

/// The train of most events in `x` (detrended, not clipped) with a period in
/// `min_period..=max_period` steps, if there is one.
pub fn find(x: &[f64], min_period: f64, max_period: f64) -> Option<Train> {
    let diffs: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let mut best: Option<Train> = None;
    // differences sit between two values: half a step later
    for (values, offset, steps_only) in [(x, 0.0, false), (&diffs[..], 0.5, true)] {
        let Some(band) = Band::of(values) else {
            continue;
        };
        // few values lie beyond the band: the sides are sorted out among those only
        let far: Vec<usize> = (0..values.len())
            .filter(|&i| (values[i] - band.level).abs() > band.threshold)
            .collect();
        for side in [1.0, -1.0] {
            let on_side = far.iter().copied().filter(|&i| {
                band.beyond(values[i], side) && !(steps_only && band.lone(values, i, side))
            });
            let events = centres(on_side, offset);
            let train = regular(&events, x.len(), min_period, max_period);
            if let Some(t) = train.filter(|t| best.is_none_or(|b| t.events > b.events)) {
                best = Some(t);
            }
        }
    }
    best
}

/// Where values stop being ordinary: a level and the distance from it beyond which a
/// value is an event.
struct Band {
    level: f64,
    threshold: f64,
}

impl Band {
    /// The median and [`EVENT_Z`] robust standard deviations of the finite values,
    /// from at most [`SAMPLE`] of them; `None` where too few are finite to hold a
    /// train.
    fn of(values: &[f64]) -> Option<Band> {
        let mut buf = sample(values);
        if buf.len() < 2 * MIN_CYCLES {
            return None;
        }
        let largest = max_abs_finite(&buf);
        let level = median_in_place(&mut buf);
        for v in buf.iter_mut() {
            *v = (*v - level).abs();
        }
        let spread = median_in_place(&mut buf) * 1.4826;
        // a spread of 0 makes any departure an event, but not rounding's
        let threshold = (EVENT_Z * spread).max(1e-9 * largest);
        threshold.is_finite().then_some(Band { level, threshold })
    }

    /// Whether `v` lies beyond the band on `side` (1 above, -1 below).
    fn beyond(&self, v: f64, side: f64) -> bool {
        side * (v - self.level) > self.threshold
    }

    /// Whether the difference `diffs[i]`, beyond the band on `side`, is half of a lone
    /// value's rise and fall: a neighbour lies beyond it on the other side.
    fn lone(&self, diffs: &[f64], i: usize, side: f64) -> bool {
        let across = |j: usize| diffs.get(j).is_some_and(|&v| self.beyond(v, -side));
        i.checked_sub(1).is_some_and(across) || across(i + 1)
    }
}

/// Most values the level and spread are taken from: a long series' sample estimates
/// them to a few percent, at a fraction of the cost of selecting among all.
const SAMPLE: usize = 1024;

/// The finite values, or [`SAMPLE`] of them at positions k·φ (mod 1) of the series
/// (φ the golden ratio): an even stride would line up with a period that divides it
/// and take every dip, or none.
fn sample(values: &[f64]) -> Vec<f64> {
    let finite = |v: &f64| v.is_finite();
    if values.len() <= SAMPLE {
        return values.iter().copied().filter(finite).collect();
    }
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    let n = values.len() as f64;
    let mut at = 0.0;
    (0..SAMPLE)
        .map(|_| {
            let v = values[((at * n) as usize).min(values.len() - 1)];
            at += golden;
            if at >= 1.0 {
                at -= 1.0;
            }
            v
        })
        .filter(finite)
        .collect()
}

/// The centre of each run of event positions (ascending), runs at most [`MERGE_GAP`]
/// apart joined, shifted by `offset`.
fn centres(events: impl Iterator<Item = usize>, offset: f64) -> Vec<f64> {
    let centre = |(start, end): (usize, usize)| (start + end) as f64 / 2.0 + offset;
    let mut out = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for i in events {
        run = match run {
            Some((start, end)) if i - end <= MERGE_GAP => Some((start, i)),
            Some(done) => {
                out.push(centre(done));
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    out.extend(run.map(centre));
    out
}

/// The train `events` (positions, ascending) make in a series of `n` values: all of
/// them, or all but one where more than [`MIN_CYCLES`] remain. An event off the comb
/// spoils the one or two spacings beside it and leaves the median spacing near the
/// period, so only the events beside the spacings off it are tried set aside.
fn regular(events: &[f64], n: usize, min_period: f64, max_period: f64) -> Option<Train> {
    if let Some(t) = comb(events, n, min_period, max_period) {
        return Some(t);
    }
    if events.len() <= MIN_CYCLES + 1 {
        return None;
    }
    let spacings: Vec<f64> = events.windows(2).map(|w| w[1] - w[0]).collect();
    let t0 = median_in_place(&mut spacings.clone());
    let off: Vec<usize> = (0..spacings.len())
        .filter(|&j| whole_periods(spacings[j], t0).is_none())
        .collect();
    let suspects = match off[..] {
        [j] => vec![j, j + 1],
        [j, k] if k == j + 1 => vec![k],
        _ => return None,
    };
    let mut rest = Vec::with_capacity(events.len() - 1);
    suspects.into_iter().find_map(|skip| {
        rest.clear();
        rest.extend(events[..skip].iter().chain(&events[skip + 1..]));
        let train = comb(&rest, n, min_period, max_period)?;
        Some(Train {
            set_aside: true,
            ..train
        })
    })
}

/// How many periods `t0` the spacing `s` is, if it is a whole number of them within
/// the tolerance.
fn whole_periods(s: f64, t0: f64) -> Option<usize> {
    let whole = (s / t0).round();
    (whole >= 1.0 && (s - whole * t0).abs() <= tolerance(t0)).then_some(whole as usize)
}

/// The train `events` make if every one of them lies on one comb.
fn comb(events: &[f64], n: usize, min_period: f64, max_period: f64) -> Option<Train> {
    if events.len() < 2 {
        return None;
    }
    let spacings: Vec<f64> = events.windows(2).map(|w| w[1] - w[0]).collect();
    let t0 = median_in_place(&mut spacings.clone());
    if !(min_period..=max_period).contains(&t0) {
        return None;
    }
    let mut cycle = vec![0usize; events.len()];
    for (j, s) in spacings.iter().enumerate() {
        cycle[j + 1] = cycle[j] + whole_periods(*s, t0)?;
    }
    let (period, phase, rms) = comb_fit(&cycle, events);
    if !(rms <= (MAX_JITTER * period).max(0.5) && phase.is_finite()) {
        return None;
    }
    // teeth more than the tolerance inside the series before the first event or
    // after the last are cycles without their event
    let edge = |gap: f64| ((gap - tolerance(period)) / period).floor().max(0.0) as usize;
    let last = events[events.len() - 1];
    let cycles = cycle[events.len() - 1] + 1 + edge(events[0]) + edge((n - 1) as f64 - last);
    let missing = cycles - events.len();
    (cycles >= MIN_CYCLES && missing <= (cycles / MISSING_SHARE).max(1)).then_some(Train {
        period,
        events: events.len(),
        set_aside: false,
    })
}

/// How far a spacing may be from a whole number of periods.
fn tolerance(period: f64) -> f64 {
    (SPACING_TOLERANCE * period).max(1.0)
}

/// Least-squares line of the event positions on their cycle numbers: the period, the
/// phase and the root-mean-square residual.
fn comb_fit(cycle: &[usize], events: &[f64]) -> (f64, f64, f64) {
    let m = events.len() as f64;
    let c_mean = cycle.iter().sum::<usize>() as f64 / m;
    let e_mean = events.iter().sum::<f64>() / m;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for (&c, &e) in cycle.iter().zip(events) {
        let dc = c as f64 - c_mean;
        sxx += dc * dc;
        sxy += dc * (e - e_mean);
    }
    let period = sxy / sxx;
    let phase = e_mean - period * c_mean;
    let sse: f64 = cycle
        .iter()
        .zip(events)
        .map(|(&c, &e)| (e - phase - period * c as f64).powi(2))
        .sum();
    (period, phase, (sse / m).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::Noise;

    /// A busy level near 0.9 (noise of standard deviation `sd`) with `count` dips to
    /// 0.1, one step wide, `period` steps apart (rounded to whole steps), and a few
    /// steps after the last.
    fn dip_train(period: f64, count: usize, sd: f64, seed: u64) -> Vec<f64> {
        let dips: Vec<usize> = (0..count)
            .map(|k| (1.6 + k as f64 * period).round() as usize)
            .collect();
        let mut noise = Noise(seed);
        (0..dips[count - 1] + 4)
            .map(|i| {
                let level = if dips.contains(&i) { 0.1 } else { 0.9 };
                level + sd * noise.normal()
            })
            .collect()
    }

    fn period_within(train: Option<Train>, period: f64, share: f64) -> bool {
        train.is_some_and(|t| (t.period - period).abs() <= share * period)
    }

    #[test]
    fn six_dips_one_step_wide_are_a_train_at_their_period() {
        let x = dip_train(10.7, 6, 0.01, 3);
        let train = find(&x, 2.5, 22.0);
        assert!(period_within(train, 10.7, 0.02), "{train:?}");
        assert_eq!(train.unwrap().events, 6);
        // five cycles are too few
        assert_eq!(find(&dip_train(10.7, 5, 0.01, 3), 2.5, 22.0), None);
    }

    #[test]
    fn a_noise_free_train_is_found_without_a_spread() {
        // more than half the values on the median: every value off it is an event
        let x = dip_train(12.3, 7, 0.0, 1);
        assert!(period_within(find(&x, 2.5, 30.0), 12.3, 0.02));
        // a noise-free sawtooth: its resets, not the rounding of its even rise
        let saw: Vec<f64> = (0..100).map(|i| (i as f64 / 9.6).fract()).collect();
        assert!(period_within(find(&saw, 2.5, 33.0), 9.6, 0.02));
    }

    #[test]
    fn a_sawtooth_is_found_by_its_resets_beside_outliers() {
        let mut noise = Noise(8);
        let mut x: Vec<f64> = (0..110)
            .map(|i| (i as f64 / 10.2).fract() + 0.01 * noise.normal())
            .collect();
        // two lone outliers: a rise and a fall each, which are not resets
        x[33] = 4.0;
        x[71] = -3.0;
        assert!(period_within(find(&x, 2.5, 36.0), 10.2, 0.02));
    }

    #[test]
    fn a_lone_values_rise_and_fall_are_not_steps() {
        // a sawtooth of period 10 whose resets are steps, and six lone outliers at no
        // period: the fall after each is no reset
        let mut x: Vec<f64> = (0..80).map(|i| (i % 10) as f64 * 0.01).collect();
        for at in [3, 17, 24, 48, 55, 71] {
            x[at] = 5.0;
        }
        let t = find(&x, 2.5, 26.0).expect("the resets");
        assert!((t.period - 10.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn a_long_series_level_is_not_taken_in_step_with_its_period() {
        // a dip every 5th value of 10,240: an even stride of 5 would sample only dips
        let x: Vec<f64> = (0..10_240)
            .map(|i| if i % 5 == 0 { 0.0 } else { 1.0 })
            .collect();
        let s = sample(&x);
        assert_eq!(s.len(), SAMPLE);
        let dips = s.iter().filter(|v| **v == 0.0).count();
        assert!(
            (dips as f64 / SAMPLE as f64 - 0.2).abs() < 0.02,
            "{dips} dips"
        );
        let band = Band::of(&x).unwrap();
        assert_eq!(band.level, 1.0);
        assert!(band.threshold < 1e-8);
    }

    fn evenly(first: f64, period: f64, count: usize) -> Vec<f64> {
        (0..count).map(|k| first + k as f64 * period).collect()
    }

    #[test]
    fn a_cycle_may_lack_its_event_once_in_four() {
        // 8 cycles of 10 steps, one without its event: found
        let mut e = evenly(3.0, 10.0, 8);
        e.remove(4);
        assert!(period_within(regular(&e, 80, 2.5, 30.0), 10.0, 0.001));
        // 7 cycles, two without: not
        let mut e = evenly(3.0, 10.0, 7);
        e.remove(2);
        e.remove(3);
        assert_eq!(regular(&e, 70, 2.5, 30.0), None);
        // a long stretch before the first event counts as cycles without one
        assert_eq!(regular(&evenly(33.0, 10.0, 6), 93, 2.5, 30.0), None);
        assert!(regular(&evenly(13.0, 10.0, 6), 73, 2.5, 30.0).is_some());
    }

    #[test]
    fn one_event_off_the_comb_is_set_aside_where_enough_remain() {
        let mut e = evenly(2.0, 10.0, 8);
        e.insert(3, 27.0);
        let t = regular(&e, 80, 2.5, 30.0).expect("a train of eight");
        assert!(t.set_aside && t.events == 8, "{t:?}");
        // six on the comb and one off it: not enough to tell which is the outlier
        let mut e = evenly(2.0, 10.0, 6);
        e.insert(3, 27.0);
        assert_eq!(regular(&e, 60, 2.5, 30.0), None);
    }

    #[test]
    fn events_at_random_positions_seldom_make_a_train_and_p_says_so() {
        let mut noise = Noise(42);
        let mut passed = 0;
        let trials = 3000;
        for t in 0..trials {
            let n = 60 + (noise.uniform() * 2000.0) as usize;
            let count = 6 + t % 5;
            let mut e: Vec<f64> = (0..count)
                .map(|_| (noise.uniform() * n as f64).floor())
                .collect();
            e.sort_by(f64::total_cmp);
            e.dedup();
            passed += usize::from(regular(&e, n, 2.5, n as f64 / 3.0).is_some());
        }
        // about 1 in 5,000 such sets pass; a looser comb lets through many more
        assert!(passed <= 3, "{passed} of {trials} random sets made a train");
        // the p-value of a train of six is above what one search of six passes at
        // (2.3e-4 in 100,000 simulated sets) times the four searches
        let six = Train {
            period: 10.0,
            events: 6,
            set_aside: false,
        };
        assert!(six.p_value() > 4.0 * 2.3e-4, "{}", six.p_value());
    }
}
