//! Holidays: a day that takes the shape of another day of the week (a public holiday
//! on a Monday looks like a Sunday). No model can tell one from a level shift by its
//! values alone, and each takes it for one: a smoothed level fed the holiday's last
//! hours forecast the next days at a third or twice their load, and a weekly profile
//! averaged over four weeks carries a quarter of the holiday into its weekday. A day
//! that is far from its own weekday's usual values and close to another weekday's, in
//! values and in shape, is a holiday; the models see its weekday's usual values in
//! its place, so that they forecast the days after it as the days after an ordinary
//! one. A day far from its weekday that keeps its shape (a level shift) or looks like
//! no other (a new shape) is left as it is, for the regimes and the models to follow.

use super::candidates::median;
use super::ets::Season;
use crate::analysis::correlation::pearson;

/// Fewest cycles of the week whose median gives a weekday's usual values: with two,
/// the holiday's own week is half of it.
pub const MIN_WEEKS: usize = 3;
/// A holiday is at least this many times further from its weekday's usual values than
/// the median day is from its own.
pub const UNUSUAL: f64 = 2.0;
/// A holiday is at most this share of that distance from another weekday's values.
pub const LOOKS_LIKE: f64 = 0.5;
/// Most days in a week: a week of more is no calendar's.
pub const MAX_DAYS: usize = 14;

/// A week of `days` days of `day` steps each, both whole numbers of steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Week {
    /// Steps in a day.
    pub day: usize,
    /// Days in the week.
    pub days: usize,
}

impl Week {
    /// The longest season that is a whole number (2 to [`MAX_DAYS`]) of a shorter
    /// one, both whole numbers of steps: a week of days; `None` where there is none.
    pub fn of(seasons: &[Season]) -> Option<Week> {
        let whole: Vec<usize> = seasons
            .iter()
            .filter(|s| s.period().fract() == 0.0)
            .map(|s| s.bins())
            .collect();
        whole
            .iter()
            .flat_map(|&week| {
                whole
                    .iter()
                    .filter(move |&&day| day < week && week % day == 0)
                    .map(move |&day| Week {
                        day,
                        days: week / day,
                    })
            })
            .filter(|w| w.days <= MAX_DAYS)
            .max_by_key(|w| (w.steps(), w.day))
    }

    /// Steps in the week.
    pub fn steps(&self) -> usize {
        self.day * self.days
    }
}

/// `y` with its holidays replaced by their weekdays' usual values, where `seasons`
/// hold a [`Week`] ([`without_holidays`]).
pub fn ordinary(y: &[f64], seasons: &[Season]) -> Option<Vec<f64>> {
    without_holidays(y, Week::of(seasons)?)
}

/// `y` with each holiday replaced by its weekday's usual values (the median of the
/// same phase over the weeks of `y`, moved to the level of the days either side);
/// `None` where `y` holds fewer than [`MIN_WEEKS`] weeks or no holiday.
pub fn without_holidays(y: &[f64], week: Week) -> Option<Vec<f64>> {
    if y.len() < MIN_WEEKS * week.steps() {
        return None;
    }
    let days = Days::of(y, week);
    let holidays = days.holidays();
    if holidays.is_empty() {
        return None;
    }
    let (n, day) = (y.len(), week.day);
    let mut out = y.to_vec();
    for a in holidays {
        let beside = (a.saturating_sub(day)..a).chain((a + day)..(a + 2 * day).min(n));
        let level = median(beside.map(|t| y[t] - days.usual_at(t, 0)).collect());
        for (t, v) in out.iter_mut().enumerate().skip(a).take(day) {
            *v = days.usual_at(t, 0) + level;
        }
    }
    Some(out)
}

/// The days of a series (every window of a day's steps, at every start) against the
/// usual week: the median of the series at each phase of the week over its weeks.
struct Days<'a> {
    y: &'a [f64],
    week: Week,
    usual: Vec<f64>,
    /// Added to a step to give its phase in `usual`: phases count from the end.
    offset: usize,
    /// `distance[k][a + 1] - distance[k][a]`: |y - usual| at step a, read k days on.
    distance: Vec<Vec<f64>>,
    /// The median distance of a day from its own weekday's usual values.
    typical: f64,
}

impl<'a> Days<'a> {
    fn of(y: &'a [f64], week: Week) -> Days<'a> {
        let (n, steps) = (y.len(), week.steps());
        let offset = steps - n % steps;
        let mut at: Vec<Vec<f64>> = vec![Vec::with_capacity(n / steps + 1); steps];
        for (t, v) in y.iter().enumerate() {
            at[(t + offset) % steps].push(*v);
        }
        let mut days = Days {
            y,
            week,
            usual: at.into_iter().map(median).collect(),
            offset,
            distance: Vec::new(),
            typical: 0.0,
        };
        days.distance = (0..week.days).map(|k| days.prefix_distance(k)).collect();
        days.typical = median(days.starts().map(|a| days.from(0, a)).collect());
        days
    }

    /// The usual value at step `t`, read `k` days on in the week.
    fn usual_at(&self, t: usize, k: usize) -> f64 {
        self.usual[(t + self.offset + k * self.week.day) % self.week.steps()]
    }

    /// Prefix sums of |y - usual| with the usual week read `k` days on.
    fn prefix_distance(&self, k: usize) -> Vec<f64> {
        let mut sum = Vec::with_capacity(self.y.len() + 1);
        sum.push(0.0);
        for (t, v) in self.y.iter().enumerate() {
            sum.push(sum[t] + (v - self.usual_at(t, k)).abs());
        }
        sum
    }

    /// The first steps of the day-long windows.
    fn starts(&self) -> std::ops::Range<usize> {
        0..self.y.len() - self.week.day + 1
    }

    /// The distance of the day starting at `a` from weekday `k` days on's usual values.
    fn from(&self, k: usize, a: usize) -> f64 {
        self.distance[k][a + self.week.day] - self.distance[k][a]
    }

    /// The distance of the day at `a` from the nearest other weekday, and that weekday.
    fn nearest_other(&self, a: usize) -> (f64, usize) {
        (1..self.week.days)
            .map(|k| (self.from(k, a), k))
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .unwrap_or((f64::INFINITY, 0))
    }

    /// How much nearer the day at `a` is to the nearest other weekday than to its own.
    fn gain(&self, a: usize) -> f64 {
        self.from(0, a) - self.nearest_other(a).0
    }

    fn unusual(&self, a: usize) -> bool {
        self.from(0, a) > UNUSUAL * self.typical
    }

    /// Whether every week agrees on the usual values at the phases of the day at `at`:
    /// the same day of each week but the one at `a` is usual for it.
    fn settled(&self, a: usize, at: usize) -> bool {
        let steps = self.week.steps();
        let mut weeks = (at % steps..self.starts().end).step_by(steps);
        weeks.all(|b| b == a || !self.unusual(b))
    }

    /// The share of the day at `a`'s variance that weekday `k` days on's shape explains.
    fn shape(&self, a: usize, k: usize) -> f64 {
        let day = self.week.day;
        let usual: Vec<f64> = (a..a + day).map(|t| self.usual_at(t, k)).collect();
        pearson(&self.y[a..a + day], &usual).map_or(0.0, |r| r * r)
    }

    /// Whether the day at `a` is a holiday: unusual for its weekday between days usual
    /// for theirs (not the first day after a level shift), at most
    /// [`LOOKS_LIKE`] of that distance from another weekday's values and nearer its
    /// shape, where every other week agrees on the usual values of both weekdays (not
    /// the days of a new regime, whose weekdays' medians mix old and new weeks), and
    /// gaining the most, among the windows it overlaps, from being read as the other
    /// weekday (one that straddles midnight may gain from its neighbour's half alone).
    fn is_holiday(&self, a: usize) -> bool {
        let day = self.week.day;
        let (like, k) = self.nearest_other(a);
        let overlapped = a.saturating_sub(day - 1)..(a + day).min(self.starts().end);
        let beside = [
            a.checked_sub(day),
            Some(a + day).filter(|b| *b < self.starts().end),
        ];
        self.unusual(a)
            && beside.into_iter().flatten().all(|b| !self.unusual(b))
            && like < LOOKS_LIKE * self.from(0, a)
            && self.settled(a, a)
            && self.settled(a, a + k * day)
            && overlapped.into_iter().all(|b| self.gain(b) <= self.gain(a))
            && self.shape(a, k) > self.shape(a, 0)
    }

    /// The first steps of the holidays, a day apart at least.
    fn holidays(&self) -> Vec<usize> {
        let mut found: Vec<usize> = Vec::new();
        for a in self.starts() {
            if found.last().is_none_or(|&b| a >= b + self.week.day) && self.is_holiday(a) {
                found.push(a);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::office_hours as office;

    const DAY: usize = 24;
    const WEEK: Week = Week { day: 24, days: 7 };

    /// How many steps of `y` were replaced as holidays (`None` where none was found).
    fn replaced(y: &[f64]) -> Option<usize> {
        without_holidays(y, WEEK).map(|c| c.iter().zip(y).filter(|(a, b)| a != b).count())
    }

    #[test]
    fn a_week_is_the_longest_season_a_whole_number_of_days() {
        let s = |p: f64| Season::new(p).unwrap();
        assert_eq!(Week::of(&[s(24.0), s(168.0)]), Some(WEEK));
        assert_eq!(Week::of(&[s(168.0), s(12.0), s(24.0)]), Some(WEEK));
        assert_eq!(Week::of(&[s(24.0)]), None);
        // a detected period is no whole number of steps, and 5 days is no week of 24
        assert_eq!(Week::of(&[s(24.0), s(168.3)]), None);
        assert_eq!(Week::of(&[s(24.0), s(60.0)]), None);
        assert_eq!(Week::of(&[s(2.0), s(400.0)]), None, "200 days");
    }

    #[test]
    fn a_holiday_takes_its_weekdays_usual_values() {
        // four weeks; a Wednesday holiday in the second, and the last day a Thursday
        // holiday
        let (days, holidays) = (28 + 4, [9, 31]);
        let y = office(days, &holidays, 3);
        let ordinary = office(days, &[], 3);
        let clean = without_holidays(&y, WEEK).expect("two holidays");
        for d in 0..days {
            let worst = (d * DAY..(d + 1) * DAY)
                .map(|t| (clean[t] - ordinary[t]).abs())
                .fold(0.0, f64::max);
            if holidays.contains(&d) {
                assert!(worst < 12.0, "day {d}: off the weekday by {worst}");
            } else {
                assert_eq!(&clean[d * DAY..(d + 1) * DAY], &y[d * DAY..(d + 1) * DAY]);
            }
        }
    }

    #[test]
    fn ordinary_weeks_have_no_holiday() {
        for seed in 0..20 {
            assert_eq!(
                without_holidays(&office(35, &[], seed), WEEK),
                None,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_day_unlike_any_other_is_left_to_the_models() {
        // the last day at 60% of its load keeps its shape: a level shift, or the start
        // of one, not a day of another kind
        let mut y = office(32, &[], 5);
        let n = y.len();
        y[n - DAY..].iter_mut().for_each(|v| *v *= 0.6);
        assert_eq!(without_holidays(&y, WEEK), None);
        // a new shape that is no weekday's either
        let mut y = office(32, &[], 5);
        for (j, v) in y[n - DAY..].iter_mut().enumerate() {
            *v = 150.0 - 4.0 * j as f64;
        }
        assert_eq!(without_holidays(&y, WEEK), None);
    }

    #[test]
    fn the_days_of_a_new_regime_are_no_holidays() {
        // a daily load with no weekly cycle that took a new shape and level ten days
        // ago: each weekday's median over the weeks is old, new, or between the two by
        // how many of its days are new, and a new day may be nearer another weekday's
        // median than its own
        for seed in 0..10 {
            let mut e = crate::analysis::fixtures::Noise(seed);
            let n = 30 * DAY + 5;
            let y: Vec<f64> = (0..n)
                .map(|t| {
                    let hour = (t % DAY) as f64;
                    let v = if t + 10 * DAY < n {
                        40.0 + 30.0 * (-(hour - 10.0).powi(2) / 10.0).exp()
                    } else {
                        150.0 + 100.0 * (-(hour - 20.0).powi(2) / 6.0).exp()
                    };
                    v * (1.0 + 0.08 * e.normal())
                })
                .collect();
            assert_eq!(replaced(&y), None, "seed {seed}: steps replaced");
        }
    }

    #[test]
    fn the_first_day_after_a_level_shift_is_no_holiday() {
        // weekends are weekdays 30 lower; the load drops by 30 on a Wednesday three
        // days before the end: the Wednesday is a Sunday in values and, but for the
        // noise, in shape, and so are the two days after it
        for seed in 0..10 {
            let mut e = crate::analysis::fixtures::Noise(seed);
            let y: Vec<f64> = (0..33 * DAY)
                .map(|t| {
                    let (d, hour) = (t / DAY, (t % DAY) as f64);
                    let low = d % 7 >= 5 || d >= 30;
                    let base = if low { 70.0 } else { 100.0 };
                    base + 50.0 * (-(hour - 13.0).powi(2) / 12.0).exp() + 2.0 * e.normal()
                })
                .collect();
            assert_eq!(replaced(&y), None, "seed {seed}: steps replaced");
        }
    }

    #[test]
    fn fewer_than_three_weeks_say_nothing() {
        let y = office(20, &[16], 1);
        assert_eq!(without_holidays(&y, WEEK), None);
        assert!(without_holidays(&office(21, &[16], 1), WEEK).is_some());
    }
}
