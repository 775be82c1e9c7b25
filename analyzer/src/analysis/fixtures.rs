//! Test inputs shared by the analyses' unit tests: a seeded noise stream, an hourly daily
//! shape, office days with odd ones among them, a usual day with fading deviations, an
//! office week, a count of jobs started, series recorded on the H100, and a forecast
//! with the default settings.

use crate::analysis::forecast::{forecast, Forecast, ForecastConfig};
use crate::series::Series;

/// Draws from a fixed xorshift stream: the same seed, the same series on every machine.
pub struct Noise(pub u64);

impl Noise {
    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// An hourly day around 50 with a swing of ±10: the usual day of [`fading_days`].
pub fn usual_day(t: usize) -> f64 {
    let hour = (t % 24) as f64;
    50.0 + 10.0 * (2.0 * std::f64::consts::PI * hour / 24.0).sin()
}

/// `n` hours of [`usual_day`] plus a deviation from it that fades by `phi` an hour,
/// driven by standard normal noise of seed `seed`.
pub fn fading_days(n: usize, phi: f64, seed: u64) -> Vec<f64> {
    let mut e = Noise(seed);
    let mut deviation = 0.0;
    (0..n)
        .map(|t| {
            deviation = phi * deviation + e.normal();
            usual_day(t) + deviation
        })
        .collect()
}

/// The default forecast of `h` steps after `y`, `step` seconds apart.
pub fn forecast_steps(y: &[f64], step: f64, h: usize) -> Forecast {
    let config = ForecastConfig {
        horizon_steps: h,
        ..ForecastConfig::default()
    };
    forecast(&Series::from_values(y, step), &config).expect("forecast")
}

/// GPUs held by jobs: batches of 2-8 jobs submitted now and then (about one a 100
/// steps), a job started a step, each holding 1, 2, 4 or 8 GPUs for about 150 steps.
pub fn jobs_held(n: usize, seed: u64) -> Vec<f64> {
    let mut e = Noise(seed);
    let (mut running, mut queued) = (Vec::<(f64, f64)>::new(), 0);
    (0..n)
        .map(|_| {
            if e.uniform() < 0.01 {
                queued += 2 + (e.uniform() * 7.0) as usize;
            }
            if queued > 0 {
                queued -= 1;
                let gpus = [1.0, 2.0, 4.0, 8.0][(e.uniform() * 4.0) as usize];
                running.push((gpus, -150.0 * e.uniform().ln()));
            }
            running.iter_mut().for_each(|job| job.1 -= 1.0);
            running.retain(|job| job.1 > 0.0);
            running.iter().map(|job| job.0).sum()
        })
        .collect()
}

/// Jobs started per step: 0 mostly, 1-3 at times, each step drawn anew.
pub fn scattered_counts(n: usize, seed: u64) -> Vec<f64> {
    let mut e = Noise(seed);
    (0..n)
        .map(|_| match e.uniform() {
            u if u < 0.7 => 0.0,
            u if u < 0.9 => 1.0,
            u if u < 0.97 => 2.0,
            _ => 3.0,
        })
        .collect()
}

/// An hourly load of 10 with a bump of 8 peaking at hour `peak` of the day (two hours
/// wide): where the peak moves, the daily shape changes.
pub fn daily_bump(peak: f64) -> impl Fn(usize) -> f64 {
    move |t| {
        let d = ((t % 24) as f64 - peak).abs();
        let d = d.min(24.0 - d);
        10.0 + 8.0 * (-d * d / 8.0).exp()
    }
}

/// `n` hours of office days ([`daily_bump`] at 13h), with the bump at 2h instead on the
/// days listed in `odd` (a storm, a holiday, each followed by an office day again) and
/// in the last 30 hours: a last day that looks new. After `n`, office days.
pub fn odd_days(n: usize, odd: &'static [usize]) -> impl Fn(usize) -> f64 {
    let (office, night) = (daily_bump(13.0), daily_bump(2.0));
    move |t| {
        if (n - 30..n).contains(&t) || odd.contains(&(t / 24)) {
            night(t)
        } else {
            office(t)
        }
    }
}

/// An hourly office load over `days` (day 0 a Monday, normal noise of deviation 2):
/// weekdays hump from 8 to 18 up to 100, weekends and the days in `holidays` stay
/// between 20 and 35 with a late-afternoon peak.
pub fn office_hours(days: usize, holidays: &[usize], seed: u64) -> Vec<f64> {
    let mut e = Noise(seed);
    (0..days * 24)
        .map(|t| office_day(t, holidays) + 2.0 * e.normal())
        .collect()
}

/// The load of [`office_hours`] at hour `t`, without noise.
pub fn office_day(t: usize, holidays: &[usize]) -> f64 {
    let (d, hour) = (t / 24, (t % 24) as f64);
    if d % 7 >= 5 || holidays.contains(&d) {
        20.0 + 15.0 * (-(hour - 16.0).powi(2) / 8.0).exp()
    } else {
        30.0 + 70.0 * (-(hour - 13.0).powi(2) / 12.0).exp()
    }
}

/// The first `n` samples of a series recorded on the H100
/// (`docs/validation/analyzer/h100-series/{run}/{name}.csv`), read as `poolprof-analyzer
/// periods --input` reads it.
pub fn recorded(run: &str, name: &str, n: usize) -> Series {
    let path = std::path::PathBuf::from(format!(
        "{}/../docs/validation/analyzer/h100-series/{run}/{name}.csv",
        env!("CARGO_MANIFEST_DIR")
    ));
    let file = crate::source::file::read_file(&path, 1.0)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut series = file.series.into_iter().next().expect("one series");
    series.points.truncate(n);
    series
}
