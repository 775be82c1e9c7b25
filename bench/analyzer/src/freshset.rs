//! A second forecast evaluation set, independent of [`crate::evalset`]: shapes of real
//! monitoring data that the first set does not draw, scored by the same
//! [`crate::fcast_eval::evaluate`]. Built without looking at the forecaster; nothing
//! here is tuned to its results. Deterministic per seed.
//!
//! Daily profiles here are sums of Gaussian bumps around the clock (office hours,
//! evening leisure, a night batch window) over a floor, so they have steep ramps and
//! flat nights rather than the few smooth harmonics of the first set. Histories end at
//! any hour of the day and start on any weekday.
//!
//! The classes (hourly: 4–6 weeks of history, horizon 48 h; 1 min: 2–4 days, horizon
//! 6 h; 5 min: 2 weeks, horizon 1 day):
//!
//! - `hourly weekend shape+holiday`: weekdays follow an office profile, Saturday and
//!   Sunday a leisure profile of a different shape (not a scaled weekday), and one
//!   weekday in the history is a public holiday that looks like a Sunday; half the cases
//!   have another holiday in the horizon. Multiplicative AR(1) noise, a mild trend.
//!   Like interactive traffic or logins of a business service.
//! - `hourly drifting shape+growth`: a daily profile whose main peak moves 1–4 hours
//!   and grows 20–100% over the weeks, multiplied by an exponential growth of 10–50%
//!   over the history; noise proportional to the level. Like a growing product whose
//!   users shift in time zone mix.
//! - `hourly DST clock shift`: a daily profile with a weekend dip; at one point in the
//!   history the whole pattern moves by one hour, as a series kept in UTC does when
//!   its users' local clocks change for daylight saving time.
//! - `hourly low counts`: Poisson counts with a daily rate between 0.2 and 5 per hour
//!   (many zeros). Like errors, alerts or job submissions of a small team.
//! - `hourly random-walk level`: a level that wanders as a random walk plus a stable
//!   additive daily season. Like a queue depth or a fleet size that drifts.
//! - `hourly structural break`: from a point in the last two weeks the daily profile
//!   changes to a different one and stays (a new release, a migrated workload, a
//!   moved cron schedule).
//! - `1 min day+outages+spikes`: a daily profile at minute resolution with AR(1) noise,
//!   random outages (0 for 5–60 minutes, in history and future alike) and short spikes
//!   of 2–5 times the level. Like a request rate of a service.
//! - `5 min saturated util+maintenance`: a utilisation percentage with a daily cycle;
//!   on busy days the demand exceeds capacity and the series is clipped at 100; one
//!   maintenance window of 2–6 hours at 0 in the history; scrape misses leave gaps of
//!   1–6 samples. Like GPU or CPU utilisation of a shared pool.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::evalset::{fill, Case};
use crate::fcast_eval::{cases, evaluate};

/// The classes, in table order.
pub const CLASSES: [&str; 8] = [
    "hourly weekend shape+holiday",
    "hourly drifting shape+growth",
    "hourly DST clock shift",
    "hourly low counts",
    "hourly random-walk level",
    "hourly structural break",
    "1 min day+outages+spikes",
    "5 min saturated util+maintenance",
];

/// Scores `per_class` series of each class (seed base `base`) with the shared scoring;
/// `EVAL_CLASS=k` keeps class k only.
pub fn run(base: u64, per_class: usize, threads: usize) {
    let cases = cases(CLASSES.len(), base, per_class, case);
    let title = format!("fresh set, seed base {base}, {per_class} series per class");
    evaluate(&title, &CLASSES, &cases, None, threads);
}

fn normal(r: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = r.gen_range(1e-12..1.0);
    let u2: f64 = r.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// AR(1) noise of standard deviation `sd`.
fn ar1(r: &mut ChaCha8Rng, n: usize, phi: f64, sd: f64) -> Vec<f64> {
    let innov = sd * (1.0 - phi * phi).sqrt();
    let mut e = sd * normal(r);
    (0..n)
        .map(|_| {
            e = phi * e + innov * normal(r);
            e
        })
        .collect()
}

/// A Poisson draw (Knuth; the rates here are small).
fn poisson(r: &mut ChaCha8Rng, rate: f64) -> f64 {
    let limit = (-rate).exp();
    let mut p: f64 = r.gen();
    let mut k = 0.0;
    while p > limit {
        p *= r.gen::<f64>();
        k += 1.0;
    }
    k
}

/// The kinds of daily profile.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Morning and afternoon peaks, a lunch dip, quiet nights.
    Office,
    /// A broad late-morning to afternoon hump and an evening peak.
    Leisure,
    /// Low daytime, a strong evening peak (consumer streaming, gaming).
    Evening,
    /// A night batch window and a smaller daytime load.
    Batch,
}

const KINDS: [Kind; 4] = [Kind::Office, Kind::Leisure, Kind::Evening, Kind::Batch];

/// A daily profile: a floor plus Gaussian bumps (centre hour, width in hours, height).
#[derive(Clone)]
struct Profile {
    floor: f64,
    bumps: Vec<(f64, f64, f64)>,
}

impl Profile {
    fn draw(r: &mut ChaCha8Rng, kind: Kind) -> Profile {
        let floor = r.gen_range(0.05..0.4);
        let bumps = match kind {
            Kind::Office => vec![
                (r.gen_range(9.0..11.0), r.gen_range(1.0..2.5), 1.0),
                (
                    r.gen_range(14.0..16.0),
                    r.gen_range(1.5..2.5),
                    r.gen_range(0.7..1.0),
                ),
                (r.gen_range(19.5..21.5), 1.5, r.gen_range(0.0..0.3)),
            ],
            Kind::Leisure => vec![
                (
                    r.gen_range(12.0..15.0),
                    r.gen_range(2.5..4.5),
                    r.gen_range(0.6..1.0),
                ),
                (r.gen_range(20.0..22.0), r.gen_range(1.0..2.0), 1.0),
            ],
            Kind::Evening => vec![
                (r.gen_range(20.0..22.5), r.gen_range(1.5..3.0), 1.0),
                (r.gen_range(12.0..14.0), 2.0, r.gen_range(0.1..0.4)),
            ],
            Kind::Batch => vec![
                (r.gen_range(1.0..4.0), r.gen_range(0.8..2.0), 1.0),
                (r.gen_range(11.0..15.0), r.gen_range(3.0..5.0), 0.4),
            ],
        };
        Profile { floor, bumps }
    }

    /// The profile at hour `hour` of the day (any real; taken modulo 24).
    fn at(&self, hour: f64) -> f64 {
        let x = hour.rem_euclid(24.0);
        self.floor
            + self
                .bumps
                .iter()
                .map(|(c, w, a)| {
                    let d = (x - c).abs();
                    let d = d.min(24.0 - d);
                    a * (-0.5 * (d / w).powi(2)).exp()
                })
                .sum::<f64>()
    }

    /// The profile's minimum and maximum over the day (sampled every 6 minutes).
    fn range(&self) -> (f64, f64) {
        (0..240)
            .map(|k| self.at(k as f64 / 10.0))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    }

    /// The profile scaled to 0..1.
    fn unit(&self, hour: f64) -> f64 {
        let (lo, hi) = self.range();
        (self.at(hour) - lo) / (hi - lo).max(1e-9)
    }
}

/// One drawn series before it is split into history and future.
struct Drawn {
    step: f64,
    seasons: Vec<usize>,
    /// History length in steps.
    n: usize,
    /// History and future.
    y: Vec<f64>,
    /// Whether the history has scrape gaps.
    gaps: bool,
    /// Day of week of step 0's day (0 = Monday), for the weekly classes.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    start_dow: usize,
    /// Hour of the day at step 0.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    start_hour: usize,
    /// Holidays, as day indices counted from the day of step 0.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests
    holidays: Vec<usize>,
}

impl Drawn {
    fn new(step: f64, seasons: Vec<usize>, n: usize, y: Vec<f64>) -> Drawn {
        Drawn {
            step,
            seasons,
            n,
            y,
            gaps: false,
            start_dow: 0,
            start_hour: 0,
            holidays: Vec::new(),
        }
    }
}

/// Hourly history length: 4–6 weeks, ending at any hour.
fn hourly_n(r: &mut ChaCha8Rng) -> usize {
    24 * r.gen_range(28..42) + r.gen_range(0..24)
}

fn draw(class: usize, seed: u64) -> Drawn {
    // a stream of its own, unlike evalset's (which xors the class into the high bits)
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(class as u64 + 1));
    let r = &mut rng;
    match class {
        0 => weekend_holiday(r),
        1 => drifting(r),
        2 => clock_shift(r),
        3 => low_counts(r),
        4 => random_walk(r),
        5 => structural_break(r),
        6 => outages(r),
        _ => saturated(r),
    }
}

/// Case of class `class` with seed `seed`.
pub fn case(class: usize, seed: u64) -> Case {
    let d = draw(class, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_f9a9);
    let (hist, future) = d.y.split_at(d.n);
    // scrape gaps of 1–6 samples where the class has them, never at either end
    let mut history = Vec::with_capacity(d.n);
    let mut skip_until = 0usize;
    for (t, v) in hist.iter().enumerate() {
        if d.gaps && t > skip_until && t + 20 < d.n && rng.gen::<f64>() < 0.004 {
            skip_until = t + rng.gen_range(1..=6);
        }
        if t < skip_until {
            continue;
        }
        history.push((t as f64 * d.step, *v));
    }
    let filled = fill(&history, d.step, d.n);
    Case {
        class: CLASSES[class],
        step: d.step,
        seasons: d.seasons,
        history,
        filled,
        future: future.to_vec(),
        siblings: Vec::new(),
    }
}

/// (a) Office weekdays, leisure weekends, holidays that look like a Sunday.
fn weekend_holiday(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (hourly_n(r), 48);
    let start_dow = r.gen_range(0..7);
    let start_hour = r.gen_range(0..24);
    let base = 10f64.powf(r.gen_range(1.0..3.5));
    let weekday = Profile::draw(r, Kind::Office);
    let weekend = Profile::draw(r, Kind::Leisure);
    let weekend_level = r.gen_range(0.3..1.0);
    let slope = r.gen_range(-0.2..0.2) / n as f64;
    let (phi, sd) = (r.gen_range(0.2..0.7), r.gen_range(0.03..0.15));
    let noise = ar1(r, n + h, phi, sd);
    let day_of = |t: usize| (t + start_hour) / 24;
    let dow = |day: usize| (start_dow + day) % 7;
    // one weekday holiday in the history (after the first week, before the last day)
    let hist_days = day_of(n - 1);
    let weekdays: Vec<usize> = (7..hist_days).filter(|d| dow(*d) < 5).collect();
    let mut holidays = vec![weekdays[r.gen_range(0..weekdays.len())]];
    // half the time one more in the horizon
    if r.gen::<f64>() < 0.5 {
        let future: Vec<usize> = (day_of(n)..=day_of(n + h - 1))
            .filter(|d| dow(*d) < 5)
            .collect();
        if !future.is_empty() {
            holidays.push(future[r.gen_range(0..future.len())]);
        }
    }
    let y = (0..n + h)
        .map(|t| {
            let day = day_of(t);
            let hour = ((t + start_hour) % 24) as f64;
            let p = if dow(day) >= 5 || holidays.contains(&day) {
                weekend_level * weekend.at(hour)
            } else {
                weekday.at(hour)
            };
            base * (slope * t as f64 + noise[t]).exp() * p
        })
        .collect();
    Drawn {
        start_dow,
        start_hour,
        holidays,
        ..Drawn::new(3600.0, vec![24, 168], n, y)
    }
}

/// (b) A daily profile whose main peak moves and grows, times exponential growth.
fn drifting(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (hourly_n(r), 48);
    let start_hour = r.gen_range(0..24);
    let base = 10f64.powf(r.gen_range(1.0..3.0));
    let kind = KINDS[r.gen_range(0..KINDS.len())];
    let profile = Profile::draw(r, kind);
    let moves = r.gen_range(1.0..4.0) * if r.gen() { 1.0 } else { -1.0 };
    let grows = r.gen_range(0.2..1.0);
    let growth = r.gen_range(0.1..0.5) / n as f64;
    let sd = r.gen_range(0.03..0.15);
    let total = (n + h) as f64;
    let y = (0..n + h)
        .map(|t| {
            let f = t as f64 / total;
            let hour = ((t + start_hour) % 24) as f64;
            let mut p = profile.clone();
            p.bumps[0].0 += moves * f;
            p.bumps[0].2 *= 1.0 + grows * f;
            let level = base * (growth * t as f64).exp() * p.at(hour);
            (level * (1.0 + sd * normal(r))).max(0.0)
        })
        .collect();
    Drawn {
        start_hour,
        ..Drawn::new(3600.0, vec![24], n, y)
    }
}

/// (c) A daily pattern with a weekend dip that moves by one hour at a point in the
/// history (daylight saving time seen in UTC).
fn clock_shift(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (hourly_n(r), 48);
    let start_dow = r.gen_range(0..7);
    let start_hour = r.gen_range(0..24);
    let base = 10f64.powf(r.gen_range(1.0..3.0));
    let kind = KINDS[r.gen_range(0..KINDS.len())];
    let profile = Profile::draw(r, kind);
    let weekend = r.gen_range(0.5..0.9);
    let at = r.gen_range(n / 4..n - 24);
    let shift = if r.gen() { 1.0 } else { -1.0 };
    let (phi, sd) = (r.gen_range(0.3..0.8), base * r.gen_range(0.02..0.1));
    let noise = ar1(r, n + h, phi, sd);
    let y = (0..n + h)
        .map(|t| {
            let u = t + start_hour;
            let w = if (start_dow + u / 24) % 7 >= 5 {
                weekend
            } else {
                1.0
            };
            let hour = (u % 24) as f64 + if t >= at { shift } else { 0.0 };
            (base * w * profile.at(hour) + noise[t]).max(0.0)
        })
        .collect();
    Drawn {
        start_dow,
        start_hour,
        ..Drawn::new(3600.0, vec![24, 168], n, y)
    }
}

/// (d) Poisson counts with a daily rate between 0.2 and 5 per hour.
fn low_counts(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (hourly_n(r), 48);
    let start_hour = r.gen_range(0..24);
    let kind = KINDS[r.gen_range(0..KINDS.len())];
    let profile = Profile::draw(r, kind);
    let lo = r.gen_range(0.2..1.0);
    let hi = r.gen_range(1.5..5.0);
    let y = (0..n + h)
        .map(|t| {
            let hour = ((t + start_hour) % 24) as f64;
            poisson(r, lo + (hi - lo) * profile.unit(hour))
        })
        .collect();
    Drawn {
        start_hour,
        ..Drawn::new(3600.0, vec![24], n, y)
    }
}

/// (e) A random-walk level plus a stable additive daily season.
fn random_walk(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (hourly_n(r), 48);
    let start_hour = r.gen_range(0..24);
    let base = 10f64.powf(r.gen_range(1.5..3.0));
    let kind = KINDS[r.gen_range(0..KINDS.len())];
    let profile = Profile::draw(r, kind);
    let amp = base * r.gen_range(0.2..0.6);
    let mean = (0..24).map(|k| profile.unit(k as f64)).sum::<f64>() / 24.0;
    let walk_sd = base * r.gen_range(0.003..0.012);
    let sd = amp * r.gen_range(0.03..0.15);
    let mut level = base;
    let y = (0..n + h)
        .map(|t| {
            level += walk_sd * normal(r);
            let hour = ((t + start_hour) % 24) as f64;
            (level + amp * (profile.unit(hour) - mean) + sd * normal(r)).max(0.0)
        })
        .collect();
    Drawn {
        start_hour,
        ..Drawn::new(3600.0, vec![24], n, y)
    }
}

/// (f) A daily profile that changes to a different one in the last two weeks.
fn structural_break(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (hourly_n(r), 48);
    let start_hour = r.gen_range(0..24);
    let base = 10f64.powf(r.gen_range(1.0..3.0));
    let a = r.gen_range(0..KINDS.len());
    let b = (a + r.gen_range(1..KINDS.len())) % KINDS.len();
    let before = Profile::draw(r, KINDS[a]);
    let after = Profile::draw(r, KINDS[b]);
    let level_after = r.gen_range(0.7..1.3);
    let at = r.gen_range(n - 336..n - 24);
    let (phi, sd) = (r.gen_range(0.2..0.7), r.gen_range(0.03..0.12));
    let noise = ar1(r, n + h, phi, sd);
    let y = (0..n + h)
        .map(|t| {
            let hour = ((t + start_hour) % 24) as f64;
            let p = if t >= at {
                level_after * after.at(hour)
            } else {
                before.at(hour)
            };
            base * noise[t].exp() * p
        })
        .collect();
    Drawn {
        start_hour,
        ..Drawn::new(3600.0, vec![24], n, y)
    }
}

/// (g) 1 min: a daily profile with outages at 0 and short spikes.
fn outages(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (r.gen_range(1440 * 2..=1440 * 4), 360);
    let start = r.gen_range(0..1440);
    let base = 10f64.powf(r.gen_range(1.0..2.7));
    let kind = KINDS[r.gen_range(0..KINDS.len())];
    let profile = Profile::draw(r, kind);
    let (phi, sd) = (r.gen_range(0.5..0.95), base * r.gen_range(0.02..0.1));
    let noise = ar1(r, n + h, phi, sd);
    let outage_rate = r.gen_range(1.0..3.0) / 1440.0;
    let spike_rate = r.gen_range(2.0..6.0) / 1440.0;
    let mut y = Vec::with_capacity(n + h);
    let (mut down_until, mut spike_until, mut spike) = (0usize, 0usize, 1.0);
    for (t, e) in noise.iter().enumerate() {
        if t >= down_until && r.gen::<f64>() < outage_rate {
            down_until = t + r.gen_range(5..=60);
        }
        if t >= spike_until && r.gen::<f64>() < spike_rate {
            spike_until = t + r.gen_range(1..=5);
            spike = r.gen_range(2.0..5.0);
        }
        let hour = ((t + start) % 1440) as f64 / 60.0;
        let v = (base * profile.at(hour) + e).max(0.0);
        y.push(if t < down_until {
            0.0
        } else if t < spike_until {
            v * spike
        } else {
            v
        });
    }
    Drawn::new(60.0, vec![1440], n, y)
}

/// (h) 5 min utilisation in [0, 100]: a daily cycle, busy days clipped at 100, one
/// maintenance window at 0, scrape gaps.
fn saturated(r: &mut ChaCha8Rng) -> Drawn {
    let (n, h) = (288 * 14, 288);
    let start = r.gen_range(0..288);
    let kind = KINDS[r.gen_range(0..KINDS.len())];
    let profile = Profile::draw(r, kind);
    let low = r.gen_range(5.0..40.0);
    let amp = r.gen_range(30.0..70.0);
    let busy = r.gen_range(0.15..0.45);
    let days = (n + h + start) / 288 + 1;
    let factor: Vec<f64> = (0..days)
        .map(|_| {
            if r.gen::<f64>() < busy {
                r.gen_range(1.3..1.8)
            } else {
                (0.05 * normal(r)).exp()
            }
        })
        .collect();
    let (phi, sd) = (r.gen_range(0.3..0.9), r.gen_range(1.5..6.0));
    let noise = ar1(r, n + h, phi, sd);
    let maint = r.gen_range(288..n - 288);
    let maint_len = r.gen_range(24..=72);
    let y = (0..n + h)
        .map(|t| {
            if t >= maint && t < maint + maint_len {
                return 0.0;
            }
            let u = t + start;
            let hour = (u % 288) as f64 / 12.0;
            (factor[u / 288] * (low + amp * profile.unit(hour)) + noise[t]).clamp(0.0, 100.0)
        })
        .collect();
    Drawn {
        gaps: true,
        ..Drawn::new(300.0, vec![288], n, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_seeds_differ() {
        for c in 0..CLASSES.len() {
            let (a, b) = (case(c, 7), case(c, 7));
            assert_eq!(a.history, b.history, "class {c}");
            assert_eq!(a.future, b.future, "class {c}");
            assert_ne!(a.future, case(c, 8).future, "class {c}");
        }
    }

    #[test]
    fn shapes_lengths_and_non_negative() {
        for c in 0..CLASSES.len() {
            for s in 0..10 {
                let k = case(c, s);
                let m = k.seasons[0];
                assert!(k.filled.len() >= 2 * m, "class {c}: history of two seasons");
                let h = match k.step as u64 {
                    3600 => 48,
                    60 => 360,
                    _ => 288,
                };
                assert_eq!(k.future.len(), h, "class {c}: horizon");
                assert!(k.filled.iter().all(|v| v.is_finite() && *v >= 0.0));
                assert!(k.future.iter().all(|v| v.is_finite() && *v >= 0.0));
                assert_eq!(
                    k.filled.len(),
                    (k.history.last().unwrap().0 / k.step) as usize + 1
                );
            }
        }
    }

    #[test]
    fn counts_are_small_non_negative_integers_with_zeros() {
        for s in 0..10 {
            let k = case(3, s);
            let all: Vec<f64> = k.filled.iter().chain(&k.future).copied().collect();
            assert!(all.iter().all(|v| *v >= 0.0 && v.fract() == 0.0));
            let zeros = all.iter().filter(|v| **v == 0.0).count();
            assert!(zeros * 20 > all.len(), "seed {s}: at least 5% zeros");
            let mean = all.iter().sum::<f64>() / all.len() as f64;
            assert!((0.2..5.0).contains(&mean), "seed {s}: mean {mean}");
        }
    }

    /// The holiday's hours are closer to the mean weekend day than to the mean weekday.
    #[test]
    fn holiday_is_a_weekday_with_the_weekend_shape() {
        for s in 0..20 {
            let d = draw(0, s);
            let hist = &d.y[..d.n];
            let holiday = d.holidays[0];
            let dow = |day: usize| (d.start_dow + day) % 7;
            assert!(dow(holiday) < 5, "the holiday is a weekday");
            let (mut wk, mut we, mut hol) = ([0.0; 24], [0.0; 24], [0.0; 24]);
            let (mut nwk, mut nwe) = ([0usize; 24], [0usize; 24]);
            for (t, v) in hist.iter().enumerate() {
                let u = t + d.start_hour;
                let (day, hour) = (u / 24, u % 24);
                if day == holiday {
                    hol[hour] = *v;
                } else if dow(day) >= 5 {
                    we[hour] += v;
                    nwe[hour] += 1;
                } else {
                    wk[hour] += v;
                    nwk[hour] += 1;
                }
            }
            let dist = |sum: &[f64; 24], count: &[usize; 24]| -> f64 {
                (0..24)
                    .map(|k| (hol[k] - sum[k] / count[k] as f64).powi(2))
                    .sum()
            };
            assert!(
                dist(&we, &nwe) < dist(&wk, &nwk),
                "seed {s}: the holiday looks like a weekend day"
            );
        }
    }

    #[test]
    fn utilisation_stays_in_range_with_maintenance_and_saturation() {
        let mut saturated = 0;
        for s in 0..20 {
            let k = case(7, s);
            assert!(k
                .filled
                .iter()
                .chain(&k.future)
                .all(|v| (0.0..=100.0).contains(v)));
            // the maintenance window: at least 2 hours at 0
            let zeros = k.filled.iter().filter(|v| **v == 0.0).count();
            assert!(zeros >= 24, "seed {s}: {zeros} zeros");
            saturated += usize::from(k.filled.contains(&100.0));
            assert!(k.history.len() <= k.filled.len());
        }
        assert!(
            saturated >= 10,
            "most series saturate on busy days: {saturated}"
        );
    }
}
