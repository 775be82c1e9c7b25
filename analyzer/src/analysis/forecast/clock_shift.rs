//! A clock that moved by an hour: Prometheus stamps samples in UTC, while the people
//! behind inference traffic, batch windows and office hours keep local time, so twice
//! a year (daylight saving time) the whole day moves by an hour. The days before the
//! move then hold the right shape at the wrong hour: a seasonal profile or median over
//! both sides forecasts neither, its peak smeared over two hours, for weeks. Where the
//! days before a boundary match the days since it better one hour off than in place,
//! the hour is repeated or skipped there ([`realigned`]), as the local clock did, and
//! every model sees one clock.

use super::shape_change::{binned, mean_abs_diff as distance, swing};

/// Days since the move that the older days are compared with: after fewer, one day's
/// noise decides.
pub const SINCE: usize = 3;
/// Fewest days before the move: fewer are too few to tell a move from noise.
pub const MIN_BEFORE: usize = 3;
/// Most days looked back over: five weeks.
pub const MAX_DAYS: usize = 35;
/// Share of the days before the boundary that must match better an hour off.
pub const AGREE: f64 = 0.8;
/// How many times nearer, on average, the days before the boundary must be an hour off
/// than in place: noise alone leaves them as near either way.
pub const NEARER: f64 = 1.5;
/// How far, at most, the days before the boundary may be an hour off from the days
/// since, in units of the distance between two days since: a move of the clock leaves
/// the same day, as near as noise allows. A shape drifting by hours over weeks is
/// nearer an hour off than in place too, but not this near (on the second evaluation
/// set's drifting-shape class, the median such day is 2.4 times as far; on the clock
/// shift's, 1.0; `docs/validation/analyzer/forecast-eval-session23.md`).
pub const MATCH: f64 = 1.5;

/// A move of the clock: the boundary (an index of the series) and the steps the days
/// before it lag (positive) or lead (negative) the days since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// Index where the days since the move begin.
    pub at: usize,
    /// Steps the days before `at` are off: `+hour` where their day comes an hour late.
    pub by: isize,
}

/// The move of the clock in `y` (a day of `day` steps, an hour of `hour`), if the days
/// before a boundary at least [`SINCE`] days from the end agree ([`AGREE`]) in being
/// [`NEARER`] the last [`SINCE`] days an hour off than in place, the days after it do
/// not, and an hour off they are the same day as those ([`MATCH`]).
pub fn moved(y: &[f64], day: usize, hour: usize) -> Option<Move> {
    if hour == 0 || day < 2 * hour {
        return None;
    }
    let days = Days::of(y, day, hour)?;
    let hour = hour as isize;
    if !days.settled(hour) {
        return None;
    }
    // each older day's distance from the references in place and either hour off,
    // computed once for the boundary search and the last test
    let older = SINCE..days.count;
    let in_place: Vec<f64> = older.clone().map(|i| days.near(i, 0)).collect();
    let (by, after, off, _) = [hour, -hour]
        .into_iter()
        .filter_map(|by| {
            let off: Vec<f64> = older.clone().map(|i| days.near(i, by)).collect();
            let ratios: Vec<f64> = in_place
                .iter()
                .zip(&off)
                .map(|(p, o)| p / o.max(f64::MIN_POSITIVE))
                .collect();
            boundary(&ratios).map(|(after, score)| (by, after, off, score))
        })
        .max_by(|a, b| a.3.total_cmp(&b.3))?;
    days.same_day(&off[after..]).then(|| Move {
        at: days.start(SINCE + after - 1),
        by,
    })
}

/// The whole days at the end of a series, the latest first, and the shapes of the
/// last [`SINCE`] of them, which the others are compared with.
struct Days<'a> {
    y: &'a [f64],
    day: usize,
    count: usize,
    references: Vec<Vec<f64>>,
}

impl<'a> Days<'a> {
    /// The days of `y`, up to [`MAX_DAYS`]; the oldest keeps an hour before it, so
    /// that every day can be read an hour earlier. `None` when too few.
    fn of(y: &'a [f64], day: usize, hour: usize) -> Option<Days<'a>> {
        let count = (y.len().saturating_sub(hour) / day).min(MAX_DAYS);
        if count < SINCE + MIN_BEFORE + 1 {
            return None;
        }
        let mut days = Days {
            y,
            day,
            count,
            references: Vec::new(),
        };
        days.references = (0..SINCE).map(|i| days.shape(i, 0)).collect();
        Some(days)
    }

    /// Where day `i` begins.
    fn start(&self, i: usize) -> usize {
        self.y.len() - (i + 1) * self.day
    }

    /// The shape of day `i` read `by` steps later, a day of more than 96 steps by the
    /// means of 96 buckets ([`binned`], as [`super::shape_change`] compares cycles): a
    /// day of minutes keeps its shape and an hour's move (four buckets) at a fifteenth
    /// of the points compared.
    fn shape(&self, i: usize, by: isize) -> Vec<f64> {
        let from = (self.start(i) as isize + by) as usize;
        shape(&binned(&self.y[from..from + self.day]))
    }

    /// Mean distance of day `i` read `by` steps later from the references other than
    /// itself.
    fn near(&self, i: usize, by: isize) -> f64 {
        let s = self.shape(i, by);
        let others: Vec<f64> = (0..SINCE)
            .filter(|&r| r != i)
            .map(|r| distance(&s, &self.references[r]))
            .collect();
        others.iter().sum::<f64>() / others.len() as f64
    }

    /// Whether the references are all since the move: none of them is nearer the
    /// others an hour off.
    fn settled(&self, hour: isize) -> bool {
        (1..SINCE).all(|i| {
            [hour, -hour]
                .iter()
                .all(|&by| self.near(i, 0) <= self.near(i, by))
        })
    }

    /// Whether days whose distances from the references (read an hour off) are `off`
    /// are on average within [`MATCH`] times the references' distance from each other.
    fn same_day(&self, off: &[f64]) -> bool {
        let pairs: Vec<f64> = (0..SINCE)
            .flat_map(|a| (a + 1..SINCE).map(move |b| (a, b)))
            .map(|(a, b)| distance(&self.references[a], &self.references[b]))
            .collect();
        let within = pairs.iter().sum::<f64>() / pairs.len() as f64;
        off.iter().sum::<f64>() / off.len() as f64 <= MATCH * within
    }
}

/// Of `ratios` (each older day's distance in place over an hour off, the newest
/// first), the number of them after the boundary where every day after it is no
/// nearer off than in place, the days before it agree, and their mean ratio is the
/// highest above [`NEARER`]; with that mean.
fn boundary(ratios: &[f64]) -> Option<(usize, f64)> {
    (0..ratios.len())
        .filter(|&after| ratios.len() - after >= MIN_BEFORE)
        .filter(|&after| ratios[..after].iter().all(|r| *r <= 1.0))
        .filter_map(|after| {
            let before = &ratios[after..];
            let agree = before.iter().filter(|r| **r > 1.0).count() as f64 / before.len() as f64;
            let mean = before.iter().sum::<f64>() / before.len() as f64;
            (agree >= AGREE && mean >= NEARER).then_some((after, mean))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// `y` with the hour at `m.at` repeated (the days before lag) or skipped (they lead),
/// so that the days before line up with the days since.
pub fn realigned(y: &[f64], m: Move) -> Vec<f64> {
    let hour = m.by.unsigned_abs();
    let mut out = Vec::with_capacity(y.len() + hour);
    if m.by > 0 {
        out.extend_from_slice(&y[..m.at]);
        out.extend_from_slice(&y[m.at - hour..m.at]);
    } else {
        out.extend_from_slice(&y[..m.at - hour]);
    }
    out.extend_from_slice(&y[m.at..]);
    out
}

/// `day` less its mean, in units of its mean absolute deviation: a weekend at a lower
/// level has a weekday's shape.
fn shape(day: &[f64]) -> Vec<f64> {
    let mean = day.iter().sum::<f64>() / day.len() as f64;
    let swing = swing(day);
    let scale = if swing > 0.0 { swing } else { 1.0 };
    day.iter().map(|v| (v - mean) / scale).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hourly: a morning peak and an evening shoulder, weekends at 60%, noise; the day
    /// moves `by` hours `since` days before the end of `days`.
    fn hourly(days: usize, since: usize, by: isize, noise: f64) -> Vec<f64> {
        let n = days * 24;
        let mut s: u64 = 7;
        (0..n)
            .map(|t| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let e = ((s >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * noise;
                let shift = if t >= n - since * 24 { 0 } else { by };
                let hour = (t as isize - shift).rem_euclid(24) as f64;
                let bump = |c: f64, w: f64| (-((hour - c) / w).powi(2)).exp();
                let w = if (t / 24) % 7 >= 5 { 0.6 } else { 1.0 };
                w * (100.0 + 300.0 * bump(9.0, 2.0) + 120.0 * bump(19.0, 3.0)) + e
            })
            .collect()
    }

    #[test]
    fn a_day_an_hour_late_is_found_and_lined_up() {
        for (since, by) in [(5, 1), (12, 1), (8, -1), (20, -1)] {
            let y = hourly(35, since, by, 10.0);
            let m = moved(&y, 24, 1).unwrap_or_else(|| panic!("{since} {by}: none"));
            assert_eq!(m.by, by, "{since} days since, {by}");
            assert_eq!(m.at, y.len() - since * 24, "{since} days since, {by}");
            // lined up: every whole day peaks at 9, as the days since the move do
            let z = realigned(&y, m);
            assert_eq!(z.len() as isize, y.len() as isize + by);
            for day in z.rchunks_exact(24) {
                let peak = (0..24).max_by(|a, b| day[*a].total_cmp(&day[*b]));
                assert_eq!(peak, Some(9), "{since} {by}: {day:?}");
            }
        }
    }

    #[test]
    fn a_forecast_after_a_move_has_the_new_day() {
        // hourly with a weekend, the day an hour later since five days ago: the forecast
        // of the next two days follows the new clock, its morning peak neither an hour
        // early nor smeared over two hours
        let (days, since) = (35, 5);
        let all = hourly(days + 2, since + 2, -1, 40.0);
        let (y, future) = all.split_at(days * 24);
        let f = crate::analysis::forecast::forecast_grid(
            y,
            3_600.0,
            crate::analysis::forecast::PeriodChoice::Auto,
            48,
        )
        .expect("a forecast");
        let mae = f
            .point
            .iter()
            .zip(future)
            .map(|(p, v)| (p - v).abs())
            .sum::<f64>()
            / 48.0;
        assert!(mae < 20.0, "{}: mean absolute error {mae}", f.model);
        assert!(f.model.starts_with("realigned("), "{}", f.model);
    }

    #[test]
    fn a_day_of_five_minute_steps_moved_by_an_hour_is_found() {
        // the hourly days at 5 min (288 steps, compared by 96 buckets), moved an hour
        // later eight days ago: found at the boundary, an hour being 12 steps
        let hourly = hourly(35, 8, -1, 10.0);
        let y: Vec<f64> = (0..hourly.len() * 12)
            .map(|t| {
                let (h, f) = (t / 12, (t % 12) as f64 / 12.0);
                let next = hourly.get(h + 1).copied().unwrap_or(hourly[h]);
                hourly[h] + f * (next - hourly[h])
            })
            .collect();
        let m = moved(&y, 288, 12).expect("a move");
        assert_eq!(
            m,
            Move {
                at: y.len() - 8 * 288,
                by: -12
            }
        );
    }

    #[test]
    fn no_move_is_none() {
        for noise in [0.0, 10.0, 80.0] {
            assert_eq!(
                moved(&hourly(35, 0, 0, noise), 24, 1),
                None,
                "noise {noise}"
            );
        }
    }

    #[test]
    fn a_peak_drifting_by_hours_over_weeks_is_no_move() {
        // the morning peak moves three hours later over five weeks, a little each day:
        // the older days are nearer an hour off, but no day is the same day an hour off
        let n = 35 * 24;
        let y: Vec<f64> = (0..n)
            .map(|t| {
                let centre = 9.0 + 3.0 * t as f64 / n as f64;
                let hour = (t % 24) as f64;
                100.0 + 300.0 * (-((hour - centre) / 2.0).powi(2)).exp()
            })
            .collect();
        assert_eq!(moved(&y, 24, 1), None);
    }

    #[test]
    fn a_move_too_recent_or_too_old_to_judge_is_none() {
        // since the move: fewer days than the references; before it: fewer than three
        assert_eq!(moved(&hourly(35, 2, 1, 10.0), 24, 1), None);
        assert_eq!(moved(&hourly(8, 6, 1, 10.0), 24, 1), None);
    }

    #[test]
    fn a_flat_or_short_series_is_none() {
        assert_eq!(moved(&[5.0; 24 * 35], 24, 1), None);
        // values whose means overflow are no move either, and no panic
        let huge: Vec<f64> = hourly(35, 5, 1, 10.0).iter().map(|v| v * 1e306).collect();
        assert_eq!(moved(&huge, 24, 1), None);
        assert_eq!(moved(&[5.0; 30], 24, 1), None);
        assert_eq!(moved(&hourly(35, 5, 1, 0.0), 24, 0), None);
    }
}
