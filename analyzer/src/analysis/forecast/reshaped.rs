//! A reshaped cycle: the last whole cycle of a season looks like none of the cycles
//! before it (a new release, a moved cron job, a migrated workload) and the change came
//! after the last validation origin, so validation scored every candidate on the old
//! shape only. The seasonal median and ETS would go on forecasting the old shape for
//! cycles; the last cycle is the only sample of the new one, and seasonal-naive repeats
//! it. On the second evaluation set's structural breaks (`forecast-fresh --seed 1`),
//! three series whose shape changed 30-36 hours before the end were forecast with the
//! old one, at 12-17 times seasonal-naive's mean absolute error: the class's whole loss
//! to it.
//!
//! Shapes, not values, are compared: each stretch less its mean, the earlier one scaled
//! to fit, so a level that wanders or a swing that grows with the level is no new shape.
//! A day unlike the days just before it but like an earlier one (a Saturday after five
//! weekdays, a holiday shaped like a weekend) is not new either: the last cycle is
//! compared with each of [`LOOKBACK`] cycles before the last origin and must be far
//! from all of them. A change that has already ended (a holiday followed by ordinary
//! hours) is not a new shape: the last third of the cycle must be new too, in its shape
//! or in its level (a new shape whose evening rises as the old one's did, at a third
//! of its level, was forecast with the old shape at seven times seasonal-naive's
//! error: `forecast-fresh --seed 9`, structural break #23), or in its size in the last
//! two cycles both ([`MIN_RESIZE`]).
//!
//! A shape that changed one to two cycles before the end, at or just before the last
//! origin, was seen by validation in its last block only, forecast from the old shape
//! by every candidate, and the older blocks chose the smoothing models that went on
//! with it (`forecast-fresh --seed 15` #3 at 7.5 times seasonal-naive's error). Where
//! the last two cycles are alike and each is unlike every one of the [`LOOKBACK`]
//! cycles before the other, the new shape has settled: no tail test is needed, since
//! a holiday that ended leaves two cycles unlike each other. Where noise alone leaves
//! a third of the swing unexplained between like cycles, no cycle could be three
//! times as far; such series are compared again averaged over three steps. Series that
//! move in steps (jobs held, pinned, stopped) change their level, not their shape, and
//! the pinned, held and young rules judge them (without this, the first set's 5 min GPU
//! cluster class lost up to 2.6 sMAPE on a seed).
//!
//! On real series a new-looking day is far more often an odd one: a storm that
//! emptied a bike-share's evening, a holiday, a weather-driven load. Where an earlier
//! cycle of the series looked as new and the cycle after it was like the old ones
//! again ([`odd_cycles_reverted`]), the last one is taken for one more odd cycle: on
//! hourly bike rentals the rule had fired on 11 of 267 forecasts and repeated a storm
//! or a rainy weekday into the next days, at 1.5 times the error of the week's
//! seasonal-naive (`docs/validation/analyzer/forecast-public-session27.md`).

use super::decompose::centred_average;
use super::ets::Season;
use super::hedge::moves_in_steps;
use super::shape_change::swing;

/// Earlier cycles the last one is compared with: a week of days.
pub const LOOKBACK: usize = 7;
/// A cycle is new where its nearest earlier cycle leaves this many times the share of
/// its swing unexplained ([`unexplained`]) that the nearest leaves for the cycles before
/// it (median). On the development seeds this takes the changed series of the
/// structural-break class and two others, a clock shift and a weekend day
/// (`docs/validation/analyzer/forecast-eval-session17.md`).
pub const NOVELTY: f64 = 3.0;
/// The same for the last third of the cycle. Lower: where the old shape is flat there,
/// its stretches differ by their noise, and a new one is only twice as unlike them (a
/// series of `forecast-fresh --seed 10` at 2.1 times, forecast with the old shape at
/// 13 times seasonal-naive's error). At 2, one weekend day of the first set's dev seeds
/// is taken for a new shape (hourly multiplicative, seed 19: 10.41 -> 10.98 sMAPE).
pub const TAIL_NOVELTY: f64 = 2.0;
/// Fewest earlier cycles whose distances set the usual one.
pub const MIN_REFERENCES: usize = 4;
/// A last third is at a new level only where its mean moved by at least this many of
/// its mean absolute deviations from every earlier stretch of its phase: a level that
/// usually repeats to the unit is not new for a move within its own noise (without
/// this floor the clock-shift class lost on five development seeds, a weekend day an
/// hour off taken for a new shape; at 0.5 the first set's hourly multiplicative class
/// lost 0.07 sMAPE).
pub const MIN_MOVE: f64 = 2.0;
/// A last third is of a new size only where its swing grew or shrank at least this many
/// times against every earlier stretch of its phase, in the last two cycles both. A
/// day whose peak moved to the evening keeps falling through its last hours as the old
/// one did, at ten times the swing and within its own deviation of the old level
/// (`forecast-fresh --seed 33`, structural break #9: the old shape forecast at eleven
/// times seasonal-naive's error). The cycle before must have the new size too: in one
/// cycle alone, a checkpoint inside a training iteration resizes it once (the H100's
/// run2 recording: seasonal-naive at 0.129 where the seasonal median had 0.008).
pub const MIN_RESIZE: f64 = 2.0;

/// How a stretch is compared with the earlier stretches of its phase.
#[derive(Debug, Clone, Copy)]
enum Likeness {
    /// By shape, at any level and size ([`unexplained`]).
    Shape,
    /// By level, in the stretch's own deviations ([`moved`]).
    Level,
    /// By the size of its swing ([`resized`]).
    Swing,
}

impl Likeness {
    /// How far `now` is from `then`.
    fn distance(self, now: &[f64], then: &[f64]) -> f64 {
        match self {
            Likeness::Shape => unexplained(now, then),
            Likeness::Level => moved(now, then),
            Likeness::Swing => resized(now, then),
        }
    }

    /// The least distance that is new, however small the usual one.
    fn floor(self) -> f64 {
        match self {
            Likeness::Shape => 0.0,
            Likeness::Level => MIN_MOVE,
            Likeness::Swing => MIN_RESIZE.ln(),
        }
    }
}

/// The longest of `seasons` whose cycle fits after `last_origin` (the last validation
/// origin), if the last cycle of `y`, and its last third, are unlike every one of the
/// [`LOOKBACK`] cycles before that origin (a shape validation has not seen), or if the
/// last two cycles took a new shape together ([`is_settled`]); in a series too noisy
/// for that test ([`too_noisy`]), the first test again on it averaged over
/// [`SMOOTHING`] steps.
pub fn reshaped(y: &[f64], seasons: &[Season], last_origin: usize) -> Option<Season> {
    if moves_in_steps(y) {
        return None;
    }
    let cycle = |s: &Season| s.period().round() as usize;
    seasons
        .iter()
        .filter(|s| cycle(s) <= y.len() - last_origin)
        .max_by(|a, b| a.period().total_cmp(&b.period()))
        .copied()
        .filter(|s| is_new_shape(y, cycle(s), last_origin))
        .filter(|s| !odd_cycles_reverted(y, cycle(s)))
}

/// Whether an earlier cycle of `p` steps was as new as the last one must be (unlike
/// each of the [`LOOKBACK`] before it, [`NOVELTY`] times the usual distance) and the
/// cycle after it was like the ones before it again: in such a series a new-looking
/// cycle is an odd one (a storm, a holiday), not a new shape. Judged on the series as
/// it is: one too noisy for that ([`too_noisy`]) has no such cycles, and the rule holds.
fn odd_cycles_reverted(y: &[f64], p: usize) -> bool {
    let n = y.len();
    // every cycle with one after it that is not the last
    (2..)
        .map_while(|j| n.checked_sub(j * p))
        .filter(|&e| e > p)
        .any(|e| is_odd_then_reverted(y, p, e))
}

/// Whether the cycle of `p` steps ending at `e` is unlike each of the [`LOOKBACK`]
/// cycles before it ([`NOVELTY`] times the usual share) and the cycle after it is like
/// one of those again.
fn is_odd_then_reverted(y: &[f64], p: usize, e: usize) -> bool {
    // `seen` just before the end skips the compared cycle itself (one cycle), or it
    // and the odd one (two)
    let odd = Cycles {
        y: &y[..e],
        p,
        seen: e - 1,
    };
    let next = Cycles {
        y: &y[..e + p],
        p,
        seen: e - p + 1,
    };
    let Some(usual) = odd.usual(p, Likeness::Shape) else {
        return false;
    };
    odd.is_beyond(usual, p, NOVELTY, Likeness::Shape) == Some(true)
        && next.is_beyond(usual, p, NOVELTY, Likeness::Shape) == Some(false)
}

/// Whether the last cycle of `p` steps is new ([`is_reshaped`]; on the series averaged
/// over [`SMOOTHING`] steps where it is [`too_noisy`] for that), or the last two
/// settled on a new shape ([`is_settled`]).
fn is_new_shape(y: &[f64], p: usize, last_origin: usize) -> bool {
    let cycles = Cycles {
        y,
        p,
        seen: last_origin,
    };
    let usual = cycles.usual(p, Likeness::Shape);
    if is_reshaped(&cycles, usual) || is_settled(y, p) {
        return true;
    }
    if !usual.is_some_and(too_noisy) {
        return false;
    }
    let smooth = centred_average(y, SMOOTHING);
    let cycles = Cycles {
        y: &smooth,
        p,
        seen: last_origin,
    };
    is_reshaped(&cycles, cycles.usual(p, Likeness::Shape))
}

/// Steps a noisy series is averaged over (centred) before its cycles' shapes are
/// compared again: a third of the noise's variance, and an hourly shape's features
/// span more than three hours.
pub const SMOOTHING: usize = 3;

/// Whether noise alone leaves so much of the swing unexplained between like cycles (the
/// `usual` share) that no cycle can be [`NOVELTY`] times farther (the share is at most
/// about 1): without smoothing, no change in such a series is ever new
/// (`forecast-fresh --seed 16`, structural break #18, forecast with the old shape).
fn too_noisy(usual: f64) -> bool {
    NOVELTY * usual >= 1.0
}

/// Whether the last two cycles of `p` steps of `y` are alike, and each a new shape next
/// to the [`LOOKBACK`] cycles before the one before it.
fn is_settled(y: &[f64], p: usize) -> bool {
    let n = y.len();
    let Some(before) = n.checked_sub(2 * p) else {
        return false;
    };
    let shape = |y: &[f64], seen: usize| Cycles { y, p, seen }.is_new(p, NOVELTY, Likeness::Shape);
    shape(y, before) == Some(true)
        && shape(&y[..n - p], before) == Some(true)
        && shape(y, n - p) == Some(false)
}

/// Whether the last cycle of `cycles` is a new shape (against `usual`, the whole
/// cycles' usual distance), and its last third a new shape or at a new level, next to
/// the cycles before the last origin, or of a new size in the last two cycles alike.
fn is_reshaped(cycles: &Cycles, usual: Option<f64>) -> bool {
    let p = cycles.p;
    let tail = p.div_ceil(3);
    let new_tail = |cycles: &Cycles, like| cycles.is_new(tail, TAIL_NOVELTY, like) == Some(true);
    let previous = Cycles {
        y: &cycles.y[..cycles.y.len() - p],
        ..*cycles
    };
    usual.and_then(|u| cycles.is_beyond(u, p, NOVELTY, Likeness::Shape)) == Some(true)
        && (new_tail(cycles, Likeness::Shape)
            || new_tail(cycles, Likeness::Level)
            || (new_tail(cycles, Likeness::Swing) && new_tail(&previous, Likeness::Swing)))
}

/// A series cut in cycles of `p` steps, validated up to `seen`.
struct Cycles<'a> {
    y: &'a [f64],
    p: usize,
    seen: usize,
}

impl Cycles<'_> {
    /// Whether the last `len` steps are `novelty` times farther (and at least the
    /// floor of `like`) from the nearest of the same phase in [`LOOKBACK`] cycles that
    /// end by the last origin than the stretches ending one, two, ... cycles earlier
    /// are from theirs ([`Cycles::usual`]); `None` without [`MIN_REFERENCES`] such
    /// earlier stretches.
    fn is_new(&self, len: usize, novelty: f64, like: Likeness) -> Option<bool> {
        self.is_beyond(self.usual(len, like)?, len, novelty, like)
    }

    /// [`Cycles::is_new`] against a `usual` distance already found.
    fn is_beyond(&self, usual: f64, len: usize, novelty: f64, like: Likeness) -> Option<bool> {
        let last = self.nearest(len, self.y.len(), self.skip(), like)?;
        Some(last > novelty * usual && last > like.floor())
    }

    /// The median distance of the last `len` steps ending one, two, ... cycles before
    /// the end from their nearest earlier stretch ([`Cycles::nearest`]); `None` without
    /// [`MIN_REFERENCES`] of them.
    fn usual(&self, len: usize, like: Likeness) -> Option<f64> {
        let references = match like {
            Likeness::Shape => self.shape_references(len),
            _ => self.references(len, like),
        };
        (references.len() >= MIN_REFERENCES).then(|| super::candidates::median(references))
    }

    /// The distances [`Cycles::usual`] takes the median of: of the last `len` steps
    /// ending one, two, ... cycles before the end from their nearest earlier stretch.
    fn references(&self, len: usize, like: Likeness) -> Vec<f64> {
        let (end, skip) = (self.y.len(), self.skip());
        (1..)
            .map_while(|j| end.checked_sub(j * self.p))
            .map_while(|e| self.nearest(len, e, skip, like))
            .collect()
    }

    /// [`Cycles::references`] by shape, each stretch centred once: each is compared
    /// with up to [`LOOKBACK`] others.
    fn shape_references(&self, len: usize) -> Vec<f64> {
        let (end, skip) = (self.y.len(), self.skip());
        let stretches: Vec<Centred> = (0..)
            .map_while(|i| end.checked_sub(i * self.p))
            .map_while(|e| self.y.get(e.checked_sub(len)?..e))
            .map(Centred::of)
            .collect();
        (1..)
            .map_while(|j| {
                let now = stretches.get(j)?;
                (skip..skip + LOOKBACK)
                    .map_while(|k| Some(now.unexplained_by(stretches.get(j + k)?)))
                    .min_by(f64::total_cmp)
            })
            .collect()
    }

    /// Cycles between the end and the last origin, which the comparisons skip.
    fn skip(&self) -> usize {
        (self.y.len() - self.seen).div_ceil(self.p)
    }

    /// The distance ([`Likeness`]) of the `len` steps ending at `end` from the nearest
    /// stretch of the same phase `skip`, `skip + 1`, ... cycles before ([`LOOKBACK`] of
    /// them); `None` where not even one precedes them.
    fn nearest(&self, len: usize, end: usize, skip: usize, like: Likeness) -> Option<f64> {
        let stretch = |e: usize| self.y.get(e.checked_sub(len)?..e);
        let now = stretch(end)?;
        (skip..skip + LOOKBACK)
            .map_while(|k| Some(like.distance(now, stretch(end.checked_sub(k * self.p)?)?)))
            .min_by(f64::total_cmp)
    }
}

/// The share of the swing of `now` (its mean absolute deviation) left by `then`, both
/// less their means and `then` scaled by the factor that fits best (least squares, not
/// below zero): 0 for the same shape at any level and size, about 1 for an unrelated
/// one. 0 for a constant `now`, which has no shape.
fn unexplained(now: &[f64], then: &[f64]) -> f64 {
    Centred::of(now).unexplained_by(&Centred::of(then))
}

/// A stretch less its mean, with the sums [`unexplained`] reads of it.
struct Centred {
    values: Vec<f64>,
    /// Σ of the squared values.
    energy: f64,
    /// Σ of the absolute values.
    swing: f64,
}

impl Centred {
    fn of(v: &[f64]) -> Centred {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let values: Vec<f64> = v.iter().map(|x| x - mean).collect();
        Centred {
            energy: dot(&values, &values),
            swing: values.iter().map(|x| x.abs()).sum(),
            values,
        }
    }

    /// [`unexplained`] with `self` as now.
    fn unexplained_by(&self, then: &Centred) -> f64 {
        let factor = if then.energy > 0.0 {
            (dot(&self.values, &then.values) / then.energy).max(0.0)
        } else {
            0.0
        };
        let left: f64 = self
            .values
            .iter()
            .zip(&then.values)
            .map(|(a, b)| (a - factor * b).abs())
            .sum();
        if self.swing > 0.0 {
            left / self.swing
        } else {
            0.0
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// How many times larger or smaller the swing of `now` is than that of `then` (mean
/// absolute deviations), as the absolute log of their ratio; infinite where one of them
/// is constant and the other not.
fn resized(now: &[f64], then: &[f64]) -> f64 {
    let (now, then) = (swing(now), swing(then));
    if now == then {
        0.0
    } else if now == 0.0 || then == 0.0 {
        f64::INFINITY
    } else {
        (now / then).ln().abs()
    }
}

/// How far the mean of `now` moved from the mean of `then`, in mean absolute
/// deviations of `now`; infinite where a constant `now` moved at all.
fn moved(now: &[f64], then: &[f64]) -> f64 {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (level, before) = (mean(now), mean(then));
    let deviation = swing(now);
    if level == before {
        0.0
    } else {
        (level - before).abs() / deviation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::{daily_bump, odd_days, Noise};

    const DAY: usize = 24;
    const N: usize = 28 * DAY;
    /// The last validation origin of an hourly series forecast 48 h ahead.
    const LAST_ORIGIN: usize = N - 48;

    fn noisy(truth: impl Fn(usize) -> f64, seed: u64) -> Vec<f64> {
        let mut e = Noise(seed);
        (0..N).map(|t| truth(t) + 0.3 * e.normal()).collect()
    }

    fn day() -> Vec<Season> {
        vec![Season::new(DAY as f64).unwrap()]
    }

    /// Whether `truth`, with the noise of seeds 1 to 5, is reshaped on every seed.
    fn new_on_every_seed(truth: impl Fn(usize) -> f64) -> bool {
        (1..=5).all(|seed| reshaped(&noisy(&truth, seed), &day(), LAST_ORIGIN).is_some())
    }

    /// The office bump until `at`, `then` after.
    fn changed(at: usize, then: impl Fn(usize) -> f64) -> impl Fn(usize) -> f64 {
        let office = daily_bump(13.0);
        move |t| if t < at { office(t) } else { then(t) }
    }

    #[test]
    fn a_shape_changed_after_the_last_origin_is_new() {
        assert!(new_on_every_seed(changed(N - 30, daily_bump(2.0))));
    }

    #[test]
    fn an_unchanged_shape_is_not_new() {
        for seed in 1..=20 {
            let y = noisy(daily_bump(13.0), seed);
            assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None, "seed {seed}");
        }
    }

    #[test]
    fn a_new_shape_under_noise_that_hides_it_cycle_by_cycle_is_new_once_smoothed() {
        // noise of deviation 1 against the bump's 8: like days leave over a third of
        // the swing unexplained, so no day can be three times farther; averaged over
        // three hours, the new shape shows on most seeds and the old one never does
        let (office, night) = (daily_bump(13.0), daily_bump(2.0));
        let series = |seed: u64, then: &dyn Fn(usize) -> f64| {
            let mut e = Noise(seed);
            (0..N)
                .map(|t| if t < N - 30 { office(t) } else { then(t) } + e.normal())
                .collect::<Vec<f64>>()
        };
        let (mut found, mut unsmoothed) = (0, 0);
        for seed in 1..=20 {
            let y = series(seed, &night);
            let cycles = Cycles {
                y: &y,
                p: DAY,
                seen: LAST_ORIGIN,
            };
            let usual = cycles.usual(DAY, Likeness::Shape);
            assert!(usual.is_some_and(too_noisy), "seed {seed}");
            found += usize::from(reshaped(&y, &day(), LAST_ORIGIN).is_some());
            unsmoothed += usize::from(is_reshaped(&cycles, usual) || is_settled(&y, DAY));
            let same = series(seed + 100, &office);
            assert_eq!(reshaped(&same, &day(), LAST_ORIGIN), None, "seed {seed}");
        }
        assert_eq!(unsmoothed, 0);
        assert!(found >= 15, "{found} of 20");
    }

    #[test]
    fn the_same_shape_at_a_new_level_and_size_is_not_new() {
        let office = daily_bump(13.0);
        let y = noisy(changed(N - 30, move |t| 20.0 + 3.0 * office(t)), 3);
        assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None);
    }

    #[test]
    fn a_weekend_like_last_weeks_is_not_new() {
        // weekdays peak at 13h, weekends at 2h; the history ends on a Sunday
        let (office, night) = (daily_bump(13.0), daily_bump(2.0));
        let week = move |t: usize| {
            if (t / DAY) % 7 >= 5 {
                night(t)
            } else {
                office(t)
            }
        };
        let y = noisy(week, 4);
        assert_eq!((N / DAY - 1) % 7, 6, "the last day is a Sunday");
        assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None);
    }

    #[test]
    fn a_new_looking_day_where_such_days_passed_before_is_not_new() {
        // office days; the last 30 hours take the night bump's shape. Where two earlier
        // days took it too (a storm, a holiday) and the next day was an office day
        // again, the last day is one more odd day, not a new shape.
        assert!(new_on_every_seed(odd_days(N, &[])));
        for seed in 1..=5 {
            let y = noisy(odd_days(N, &[8, 15]), seed);
            assert!(odd_cycles_reverted(&y, DAY), "seed {seed}");
            assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None, "seed {seed}");
        }
    }

    /// The office bump and an evening ramp until 30 hours before the end, then `then`
    /// of the night bump and the same ramp.
    fn with_evening(then: impl Fn(f64, f64) -> f64) -> impl Fn(usize) -> f64 {
        let evening = |t: usize| 10.0 * (t % DAY).saturating_sub(15) as f64;
        let (office, night) = (daily_bump(13.0), daily_bump(2.0));
        move |t| {
            if t < N - 30 {
                office(t) + evening(t)
            } else {
                then(night(t), evening(t))
            }
        }
    }

    #[test]
    fn a_new_shape_whose_evening_only_fell_is_new() {
        // the evening ramps up as before, at a third of its level; the day before it
        // took a new shape
        let truth = with_evening(|night, evening| (night + evening) / 3.0);
        assert!(new_on_every_seed(truth));
    }

    #[test]
    fn an_evening_a_little_above_the_usual_is_no_new_level() {
        // a new morning, then the evening as before, raised by less than its swing:
        // the change has ended, though the level repeats to the noise on other days
        let truth = with_evening(|night, evening| night + evening + 15.0);
        assert_eq!(reshaped(&noisy(truth, 6), &day(), LAST_ORIGIN), None);
    }

    /// A bump at 9h and a gentle evening fall until `at`, then a bump at 4h and an
    /// evening falling the same way at ten times the size.
    fn steeper_evening(at: usize) -> impl Fn(usize) -> f64 {
        let evening = |t: usize| (DAY - 1 - t % DAY).min(8) as f64;
        let (office, night) = (daily_bump(9.0), daily_bump(4.0));
        move |t| {
            if t < at {
                office(t) + evening(t)
            } else {
                night(t) + 10.0 * evening(t)
            }
        }
    }

    #[test]
    fn a_new_shape_whose_evening_only_grew_for_two_cycles_is_new() {
        // the evening falls as it did, at ten times the size and within its own
        // deviation of the old level: new only by its size, in both of the last cycles
        let truth = steeper_evening(N - 36);
        let y = noisy(&truth, 1);
        let cycles = Cycles {
            y: &y,
            p: DAY,
            seen: LAST_ORIGIN,
        };
        for like in [Likeness::Shape, Likeness::Level] {
            assert_eq!(
                cycles.is_new(8, TAIL_NOVELTY, like),
                Some(false),
                "{like:?}"
            );
        }
        assert!(new_on_every_seed(truth));
    }

    #[test]
    fn an_evening_resized_in_the_last_cycle_only_is_not_new() {
        // the same change a cycle later: the cycle before ended as the old ones did
        for seed in 1..=5 {
            let y = noisy(steeper_evening(N - 24), seed);
            assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None, "seed {seed}");
        }
    }

    #[test]
    fn a_change_that_has_ended_is_not_new() {
        // a day of the other shape, then twelve ordinary hours
        let (office, night) = (daily_bump(13.0), daily_bump(2.0));
        let holiday = move |t: usize| {
            if (N - 36..N - 12).contains(&t) {
                night(t)
            } else {
                office(t)
            }
        };
        assert_eq!(reshaped(&noisy(holiday, 5), &day(), LAST_ORIGIN), None);
    }

    #[test]
    fn a_shape_changed_two_cycles_ago_is_new() {
        assert!(new_on_every_seed(changed(N - 48, daily_bump(2.0))));
        assert!(new_on_every_seed(changed(N - 60, daily_bump(2.0))));
    }

    #[test]
    fn a_change_validation_has_seen_is_left_to_it() {
        for seed in 1..=5 {
            let y = noisy(changed(N - 84, daily_bump(2.0)), seed);
            assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None, "seed {seed}");
        }
    }

    #[test]
    fn a_series_that_moves_in_steps_is_left_to_the_rules_for_levels() {
        // a pool's GPUs pinned busy or idle for days, then a partial load that varies:
        // a new level with noise, not a new daily shape
        let shaped = noisy(daily_bump(2.0), 7);
        let y: Vec<f64> = (0..N)
            .map(|t| match t {
                t if t >= N - 30 => shaped[t],
                t if (t / (3 * DAY)) % 2 == 0 => 100.0,
                _ => 0.0,
            })
            .collect();
        assert!(moves_in_steps(&y));
        assert_eq!(reshaped(&y, &day(), LAST_ORIGIN), None);
    }

    #[test]
    fn a_cycle_longer_than_the_last_validation_stretch_is_not_judged() {
        let y = noisy(changed(N - 30, daily_bump(2.0)), 8);
        assert_eq!(reshaped(&y, &day(), N - 20), None);
    }

    #[test]
    fn shapes_centred_once_give_each_comparisons_distances() {
        // whole cycles and last thirds, origins at the end and cycles back, series
        // shorter than the lookback and a constant stretch
        let bump = daily_bump(13.0);
        let wave = noisy(|t| bump(t) + 0.01 * t as f64, 3);
        let flat_start: Vec<f64> = (0..N)
            .map(|t| if t < 200 { 5.0 } else { wave[t] })
            .collect();
        for y in [&wave[..], &wave[..5 * DAY + 7], &flat_start[..]] {
            for (len, seen) in [
                (DAY, LAST_ORIGIN.min(y.len() - 1)),
                (DAY / 3, y.len()),
                (DAY, y.len() - 3 * DAY),
            ] {
                let cycles = Cycles { y, p: DAY, seen };
                let each = cycles.references(len, Likeness::Shape);
                assert!(!each.is_empty());
                assert_eq!(
                    cycles.shape_references(len),
                    each,
                    "{} steps, {len}, {seen}",
                    y.len()
                );
            }
        }
    }

    #[test]
    fn unexplained_share_is_zero_for_a_scaled_copy_and_one_for_an_opposite() {
        let a = [1.0, 3.0, 2.0, 5.0];
        let scaled: Vec<f64> = a.iter().map(|v| 10.0 + 2.0 * v).collect();
        let opposite: Vec<f64> = a.iter().map(|v| -v).collect();
        assert!(unexplained(&scaled, &a) < 1e-12);
        assert!((unexplained(&a, &opposite) - 1.0).abs() < 1e-12);
        assert_eq!(unexplained(&[4.0; 4], &a), 0.0, "a constant has no shape");
    }
}
