//! Periodicity: does a series repeat, with what period, how strongly, how surely.
//!
//! The pipeline: put the samples on a uniform grid and keep the longest segment
//! between long gaps ([`grid`]); remove a linear trend and clip outliers
//! ([`prepare`]); take the Hann-tapered periodogram and the autocorrelation
//! ([`spectrum`]); test the periodogram's peaks against a whitened Fisher's g-test
//! ([`significance`]); keep those that sit on a hill of the autocorrelation ([`acf`]);
//! when no single peak makes a period, test fundamentals on the sum of their harmonics
//! ([`harmonics`]), which finds narrow pulses, and when that fails too, look for a
//! regular train of events ([`events`]), which finds pulses one step wide (its period
//! is the comb fitted to them), and then for a comb over the values of a short series
//! ([`comb`]), which finds pulses too weak to be events, and last for a cycle fitted
//! by least squares in time ([`regression`]), which finds a few cycles of a few steps;
//! refine the other periods on the periodogram ([`refine`]). `docs/analysis.md`
//! explains the choices.

pub mod acf;
pub mod calendar;
mod candidates;
pub mod comb;
pub mod events;
pub mod fractions;
pub mod harmonics;
pub mod held_noise;
#[cfg(test)]
mod impulsive_tests;
pub mod multiple;
pub mod prepare;
pub mod refine;
pub mod regression;
pub mod significance;
pub mod spectrum;
pub mod tentative;

use crate::analysis::{grid, runs};
use crate::series::Series;

use spectrum::Spectra;

pub use candidates::{OCTAVE_HEIGHT, REPEAT_Z};

/// A period found in a series: what the detector finds, the pipeline reports and the
/// `periods` command prints.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Period {
    /// Seconds between repeats.
    pub period_seconds: f64,
    /// How much of the variation repeats: the autocorrelation at the period, 0–1 (of
    /// what stronger periods leave unexplained, when only that shows the period).
    pub strength: f64,
    /// 1 minus the p-value of the periodogram peak, 0–1.
    pub confidence: f64,
    /// The phase: Unix time of the cycle's last peak in the analysed window (absent for
    /// values without timestamps, e.g. a bare grid). Two workloads with one period burst
    /// in turn when their peaks are half a period apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_peak_seconds: Option<f64>,
}

/// The answer for one series.
#[derive(Debug, Clone, PartialEq)]
pub enum PeriodOutcome {
    /// One or more periods, strongest first.
    Periodic(Vec<Period>),
    /// No period, and why (too short, flat, aperiodic, unusable timestamps).
    NoPeriod {
        /// A sentence a user can act on.
        reason: String,
    },
}

impl PeriodOutcome {
    /// The periods found (empty when there is none).
    pub fn periods(&self) -> &[Period] {
        match self {
            PeriodOutcome::Periodic(p) => p,
            PeriodOutcome::NoPeriod { .. } => &[],
        }
    }

    fn none(reason: impl Into<String>) -> Self {
        PeriodOutcome::NoPeriod {
            reason: reason.into(),
        }
    }
}

/// Settings of the detector; `Default` suits minute-to-hour GPU signals.
#[derive(Debug, Clone, PartialEq)]
pub struct PeriodConfig {
    /// Grid step in seconds; `None` takes the median spacing of the samples.
    pub step_seconds: Option<f64>,
    /// Gaps of up to this many missing steps are filled linearly; longer ones split.
    pub max_fill_steps: usize,
    /// Fewest grid points to attempt an analysis.
    pub min_points: usize,
    /// Fewest full cycles a period must show in the analysed segment.
    pub min_cycles: f64,
    /// Significance level of the periodogram test.
    pub alpha: f64,
    /// Most periods reported per series.
    pub max_periods: usize,
    /// Least autocorrelation at the period (the reported strength).
    pub min_strength: f64,
    /// Least rise of the autocorrelation hill above the valley before it.
    pub min_prominence: f64,
    /// Shortest period considered, in steps (at least 2.5: shorter is at Nyquist).
    pub min_period_steps: f64,
    /// Whether a short series may show its cycle by a fit in time ([`regression`]);
    /// off for held readings, whose steps are not independent as its F-test assumes.
    pub fit_in_time: bool,
}

impl Default for PeriodConfig {
    fn default() -> Self {
        Self {
            step_seconds: None,
            max_fill_steps: 10,
            // six cycles of the shortest period searched
            min_points: 15,
            min_cycles: 3.0,
            alpha: 0.01,
            max_periods: 3,
            min_strength: 0.1,
            min_prominence: 0.1,
            min_period_steps: 2.5,
            fit_in_time: true,
        }
    }
}

impl PeriodConfig {
    /// The shortest period searched, in steps: `min_period_steps`, and never under 2.5
    /// (a period of 2 steps is at Nyquist).
    pub fn shortest_period(&self) -> f64 {
        self.min_period_steps.max(2.5)
    }
}

/// Finds the periods of `series`, or says why there is none.
pub fn detect_periods(series: &Series, config: &PeriodConfig) -> PeriodOutcome {
    match search_longest(series, config) {
        Ok((segment, hold, found)) => reported(&segment, hold, found, config),
        Err(none) => none,
    }
}

/// The periods of a series to report, and the seasons to hand a forecaster.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// The periods, or why there is none.
    pub reported: PeriodOutcome,
    /// Every period found, in seconds, before the held-noise test ([`held_noise`]),
    /// and for held readings those a search at every period finds
    /// ([`detect_on_grid_with_seasons`]): the forecaster validates each season on its
    /// own errors.
    pub seasons: Vec<f64>,
}

/// Finds the periods of `series` to report and the seasons to forecast with.
pub fn detect_with_seasons(series: &Series, config: &PeriodConfig) -> Detection {
    match search_longest(series, config) {
        Ok((segment, hold, found)) => Detection {
            seasons: seasons_to_forecast(&segment.values, segment.step, config, hold, &found),
            reported: reported(&segment, hold, found, config),
        },
        Err(none) => Detection {
            reported: none,
            seasons: Vec::new(),
        },
    }
}

/// The longest evenly spaced segment of `series`, how long its readings are held
/// ([`runs::hold`]) and what [`detect_on_grid`] finds in it; the outcome to report
/// when the samples cannot be put on a grid.
fn search_longest(
    series: &Series,
    config: &PeriodConfig,
) -> Result<(grid::Segment, usize, PeriodOutcome), PeriodOutcome> {
    let segment = grid::segments(&series.points, config.step_seconds, config.max_fill_steps)
        .map(grid::longest)
        .map_err(|e| PeriodOutcome::none(format!("unusable samples: {e}")))?;
    let hold = runs::hold(&segment.values);
    let found = search(&segment.values, segment.step, config, hold);
    Ok((segment, hold, found))
}

/// `found` in `segment` as reported: less what held noise would show as readily
/// ([`held_noise`]) and the harmonics of another period ([`fractions`]), with the
/// calendar's day where the days show it ([`calendar`]), each period with its last
/// peak.
fn reported(
    segment: &grid::Segment,
    hold: usize,
    found: PeriodOutcome,
    config: &PeriodConfig,
) -> PeriodOutcome {
    let window = fractions::Window {
        step: segment.step,
        points: segment.values.len(),
    };
    let kept = fractions::without_harmonics(
        held_noise::confirm(&segment.values, segment.step, hold, found),
        window,
    );
    let mut reported = calendar::with_day(kept, &segment.values, segment.step, config.max_periods);
    if let PeriodOutcome::Periodic(periods) = &mut reported {
        for p in periods {
            p.last_peak_seconds = last_peak(
                &segment.values,
                segment.start,
                segment.step,
                p.period_seconds,
            );
        }
    }
    reported
}

/// What [`detect_on_grid`] finds in evenly spaced `values`, and the seasons to hand a
/// forecaster: those periods and, for held readings, the periods a search at every
/// period finds (they repeat exactly at a whole number of readings).
pub fn detect_on_grid_with_seasons(
    values: &[f64],
    step: f64,
    config: &PeriodConfig,
) -> (PeriodOutcome, Vec<f64>) {
    let hold = runs::hold(values);
    let found = search(values, step, config, hold);
    let seasons = seasons_to_forecast(values, step, config, hold, &found);
    (found, seasons)
}

/// The periods `found` in `values` (readings held `hold` steps) and, for held
/// readings, the periods a search at every period finds. Held readings repeat exactly
/// at the multiple of a cycle that is whole readings (90 s for a 45 s cycle read every
/// 10 s), which forecast them better than the cycle; the forecaster validates each
/// season.
fn seasons_to_forecast(
    values: &[f64],
    step: f64,
    config: &PeriodConfig,
    hold: usize,
    found: &PeriodOutcome,
) -> Vec<f64> {
    let mut seasons: Vec<f64> = found.periods().iter().map(|p| p.period_seconds).collect();
    if held_readings(hold, config).is_some() {
        for p in detect_whole_and_busy(values, step, config).periods() {
            let s = p.period_seconds;
            if !seasons.iter().any(|f| (f - s).abs() <= 0.02 * f) {
                seasons.push(s);
            }
        }
    }
    seasons
}

/// Unix time of the last peak of `values` (the first at `start`, then `step` apart)
/// at `period`: the series folded at the period from its start (times relative to the
/// window, so a period refined to a fraction of a step does not drift over the epoch),
/// the centre of the step-wide bin with the highest mean, then the last repeat of that
/// offset inside the window.
pub fn last_peak(values: &[f64], start: f64, step: f64, period: f64) -> Option<f64> {
    let bins = (period / step).round();
    if !(2.0..=1e6).contains(&bins) || values.len() < bins as usize {
        return None;
    }
    let bins = bins as usize;
    // Scaled so that sums of any finite values stay finite.
    let scale = crate::analysis::extent::max_abs_finite(values);
    if scale == 0.0 {
        return None;
    }
    let (mut sum, mut count) = (vec![0.0; bins], vec![0u32; bins]);
    // (i·step) mod period, kept by subtraction: a remainder per sample costs more than
    // the rest of the loop, and the rounding gathered over a window is ~1e-12 period.
    let mut at = 0.0;
    let per_time = bins as f64 / period;
    for v in values {
        if v.is_finite() {
            let b = ((at * per_time) as usize).min(bins - 1);
            sum[b] += v / scale;
            count[b] += 1;
        }
        at += step;
        while at >= period {
            at -= period;
        }
    }
    let mean = |b: usize| sum[b] / f64::from(count[b]);
    let best = (0..bins)
        .filter(|&b| count[b] > 0)
        .max_by(|&a, &b| mean(a).total_cmp(&mean(b)))?;
    let offset = (best as f64 + 0.5) * period / bins as f64;
    let span = (values.len() - 1) as f64 * step;
    let repeats = ((span - offset) / period).floor().max(0.0);
    Some(start + offset + repeats * period)
}

/// Finds the periods of evenly spaced `values` (`step` seconds apart): on the whole,
/// and, where it holds stops, on its longest busy stretch ([`STILL_STEPS`]); held
/// readings only at periods they can show (`held_readings`).
pub fn detect_on_grid(values: &[f64], step: f64, config: &PeriodConfig) -> PeriodOutcome {
    search(values, step, config, runs::hold(values))
}

/// [`detect_on_grid`] of `values` whose readings are held `hold` steps.
fn search(values: &[f64], step: f64, config: &PeriodConfig, hold: usize) -> PeriodOutcome {
    let held = held_readings(hold, config);
    detect_whole_and_busy(values, step, held.as_ref().unwrap_or(config))
}

/// [`detect_on_grid`] at every period `config` searches.
fn detect_whole_and_busy(values: &[f64], step: f64, config: &PeriodConfig) -> PeriodOutcome {
    let outcome = detect_whole(values, step, config);
    let long = STILL_STEPS.max(values.len() / STILL_SHARE);
    let Some((active, stopped)) = prepare::busy_stretch(values, long) else {
        return outcome;
    };
    // Stopped for half the series or more, the stretch alone must show six cycles: a
    // job that worked for a quarter of the window does (memory ramped every 12.3 s for
    // 115 of 460 s), while a few blips between long stops repeat at most three times.
    let busy = if 2 * stopped >= values.len() {
        let six = PeriodConfig {
            min_cycles: config.min_cycles.max(MOSTLY_STOPPED_CYCLES),
            ..config.clone()
        };
        detect_whole(active, step, &six)
    } else {
        detect_whole(active, step, config)
    };
    match (outcome, busy) {
        (PeriodOutcome::Periodic(whole), PeriodOutcome::Periodic(busy))
            if multiple_of(&busy[0], &whole[0]) =>
        {
            PeriodOutcome::Periodic(busy)
        }
        (whole @ PeriodOutcome::Periodic(_), _) => whole,
        (_, busy @ PeriodOutcome::Periodic(_)) => busy,
        (whole, _) => whole,
    }
}

/// For readings held `hold` steps each ([`runs::hold`]), the config searching only
/// periods of [`HELD_READINGS`] readings or more. Holding a reading mirrors the
/// spectrum of its cycles about every multiple of the reading rate; the mirror images
/// of a slow cycle lie near those multiples, where the hold's own spectrum is near
/// zero, and there they stood out from their background and took the periodogram
/// test from the cycle itself (a 35 s cycle read every 3 s). A square wave's runs are
/// half its cycle, which stays inside the search.
fn held_readings(hold: usize, config: &PeriodConfig) -> Option<PeriodConfig> {
    let shortest = HELD_READINGS * hold as f64;
    (shortest > config.shortest_period()).then(|| PeriodConfig {
        min_period_steps: shortest,
        fit_in_time: false,
        ..config.clone()
    })
}

/// Readings a period of held readings must span. Under 2 (the reading rate's
/// Nyquist), so that a cycle of a few readings keeps the harmonics that pin its
/// period (at 2, a 30 s cycle read every 10 s, refined on its fundamental alone, came
/// out at 30.6-30.9 s); over 1, so that the images of every cycle longer than three
/// readings, within a third of the reading rate of its multiples, are left out.
const HELD_READINGS: f64 = 1.5;

/// Whether `busy`, found on a busy stretch, is 2 or 3 times `whole`'s period (within
/// 3%) and repeats more strongly there: the stop lifted the whole's autocorrelation at
/// a fraction of the cycle (run5: 0.45 at 30 s and 0.47 at 60 s of a 60 s cycle).
fn multiple_of(busy: &Period, whole: &Period) -> bool {
    let ratio = busy.period_seconds / whole.period_seconds;
    let near = |k: f64| (ratio - k).abs() <= 0.03 * k;
    (near(2.0) || near(3.0)) && busy.strength > whole.strength
}

/// Cycles the busy stretch of a series stopped for half its length or more must hold.
const MOSTLY_STOPPED_CYCLES: f64 = 6.0;

/// Shortest stop ([`prepare::longest_active`]) that splits a series: a job
/// stopped between its cycles buries their spectrum under the stop's (or lifts the
/// autocorrelation at a fraction of the cycle), while its longest busy stretch still
/// shows them (joining the stretches would break their phase at each stop).
pub const STILL_STEPS: usize = 12;

/// A stop must also be at least this share (1/10) of the series: shorter still
/// stretches are more likely part of the cycle (an evaluation pass) than a stop.
pub const STILL_SHARE: usize = 10;

/// [`detect_on_grid`] on all of `values`.
fn detect_whole(values: &[f64], step: f64, config: &PeriodConfig) -> PeriodOutcome {
    detect_whole_once(values, step, config, Alternation::Search)
}

/// Most of the periodogram's power that may lie faster than the shortest period
/// searched before the series is taken to alternate every step ([`without_alternation`]).
/// White noise puts a fifth there; a cycle of 2.5 steps or more lies within the search.
const MAX_FAST_SHARE: f64 = 0.5;

/// Whether [`detect_whole_once`] may set a two-step alternation aside.
#[derive(Clone, Copy, PartialEq)]
enum Alternation {
    Search,
    SetAside,
}

/// The periods of a series that alternates every step, most of its power faster than
/// the shortest period searched: a line fitted to it leaves a ramp of its own, whose
/// leakage, alone in a band the alternation leaves empty, passed the periodogram's
/// test while every even lag repeated. They are searched on the means of neighbouring
/// pairs, which cancel the alternation and keep the slower cycles.
fn without_alternation(values: &[f64], step: f64, config: &PeriodConfig) -> PeriodOutcome {
    let means: Vec<f64> = values.windows(2).map(|w| w[0] / 2.0 + w[1] / 2.0).collect();
    match detect_whole_once(&means, step, config, Alternation::SetAside) {
        PeriodOutcome::NoPeriod { reason } => PeriodOutcome::none(format!(
            "alternates every step, a period of 2 steps, shorter than the {} searched; \
             without the alternation, {reason}",
            config.shortest_period()
        )),
        periodic => periodic,
    }
}

/// Whether `values` (scaled to a largest magnitude of 1) alternate every step: the
/// autocorrelation at one step at most −0.5 and at two steps at least 0.5. The
/// forecaster offers such a series a season of two steps, which the detector does not
/// report (it is shorter than 2.5 steps).
pub fn alternates(values: &[f64]) -> bool {
    acf::about_mean(values, 1) <= -0.5 && acf::about_mean(values, 2) >= 0.5
}

/// [`detect_whole`], which may set a two-step alternation aside once.
fn detect_whole_once(
    values: &[f64],
    step: f64,
    config: &PeriodConfig,
    alternation: Alternation,
) -> PeriodOutcome {
    let n = values.len();
    if n < config.min_points.max(8) {
        return PeriodOutcome::none(format!(
            "too short: {n} points on the {step} s grid, need at least {}",
            config.min_points.max(8)
        ));
    }
    let mut x = values.to_vec();
    let detrended = prepare::detrend(&mut x);
    // a train of events is told by its pulses at their full height, before the clip
    let unclipped = x.clone();
    // The conditioned series is scaled to a largest magnitude of 1, so the floor is
    // relative: what a line fit leaves of a constant or a straight series is rounding.
    let variance = if detrended {
        prepare::clip_residuals(&mut x)
    } else {
        0.0
    };
    if !variance.is_finite() || variance <= 1e-20 {
        return PeriodOutcome::none("flat: no variation besides a straight line");
    }
    let min_cycles = config.min_cycles.max(1.0);
    let k_min = min_cycles.ceil() as usize;
    let k_max = (n as f64 / config.shortest_period()).floor() as usize;
    if k_max < k_min + 2 {
        return PeriodOutcome::none(format!(
            "too short: {n} points cannot show {min_cycles} cycles of any period"
        ));
    }
    let spectra = Spectra::of(&x);
    let Some(whitened) = significance::whiten(&spectra.power, k_min, k_max) else {
        return PeriodOutcome::none("too short for a periodogram");
    };
    if alternation == Alternation::Search && whitened.fast_share > MAX_FAST_SHARE {
        return without_alternation(values, step, config);
    }
    candidates::test(&unclipped, &x, &spectra, &whitened, step, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::recorded;

    /// Runs of (value, steps), one value per step.
    fn runs_of(runs: &[(f64, usize)]) -> Vec<f64> {
        runs.iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n))
            .collect()
    }

    #[test]
    fn a_job_that_worked_for_a_quarter_of_the_window_shows_its_cycle() {
        // memory ramped and freed every 12.3 steps for 115 of 460 steps, idle before
        // and after (H200 recording run14); stops over half the series hid it
        let mut y = runs_of(&[(0.53, 120)]);
        y.extend((0..115).map(|t| 0.8 + 5.8 * ((t as f64 % 12.3) / 12.3)));
        y.extend(runs_of(&[(0.71, 225)]));
        let out = detect_periods(&Series::from_values(&y, 1.0), &PeriodConfig::default());
        assert!(
            out.periods()
                .iter()
                .any(|p| (p.period_seconds - 12.3).abs() <= 0.25),
            "{out:?}"
        );
    }

    /// How many windows of `width` samples of `series`, one every `every` from `from`,
    /// show `period` (seconds) within 2%, and how many there are.
    fn windows_found(
        series: &Series,
        from: usize,
        width: usize,
        every: usize,
        period: f64,
    ) -> (usize, usize) {
        let starts: Vec<usize> = (from..series.points.len().saturating_sub(width))
            .step_by(every)
            .collect();
        let found = starts
            .iter()
            .filter(|&&a| {
                let window = Series::from_points(series.points[a..a + width].to_vec());
                detect_periods(&window, &PeriodConfig::default())
                    .periods()
                    .iter()
                    .any(|p| (p.period_seconds - period).abs() <= 0.02 * period)
            })
            .count();
        (found, starts.len())
    }

    #[test]
    fn a_cycle_read_every_few_seconds_is_found_from_six_cycles() {
        // run17 (H200): a training job's evaluation pass every 35 s. Its own SM use is
        // NVML's mean over each 5 s; the GPU's SM activity, read every second, is taken
        // as a reader every 3 s would see it (each 3 s mean, held). Six cycles each.
        let own = recorded("run17", "process_sm_utilization-train", 481);
        let mut three = recorded("run17", "gpu_sm_active", 487);
        for block in three.points.chunks_mut(3) {
            let mean = block.iter().map(|p| p.1).sum::<f64>() / block.len() as f64;
            block.iter_mut().for_each(|p| p.1 = mean);
        }
        // 21 of 21 and 16 of 22; searched at every period as before, 17 and 8
        for (name, series, share) in [
            ("own SM use, 5 s", &own, 0.95),
            ("GPU SM activity, 3 s", &three, 0.6),
        ] {
            let (found, windows) = windows_found(series, 20, 210, 12, 35.0);
            assert!(
                found as f64 >= share * windows as f64,
                "{name}: {found} of {windows}"
            );
        }
    }

    #[test]
    fn held_readings_report_their_cycle_and_offer_its_exact_repeat_to_forecast() {
        // run18: a 35 s cycle read every 10 s (3.5 readings), whose readings repeat
        // exactly every 70 s; searched at every period, 70.1 s was reported
        let series = recorded("run18", "process_sm_utilization-train", 500);
        let segment = grid::longest(grid::segments(&series.points, None, 10).unwrap());
        let config = PeriodConfig::default();
        let (found, seasons) = detect_on_grid_with_seasons(&segment.values, segment.step, &config);
        assert_eq!(
            found,
            detect_on_grid(&segment.values, segment.step, &config)
        );
        let near = |p: f64, want: f64| (p - want).abs() <= 0.02 * want;
        assert!(
            found.periods().iter().any(|p| near(p.period_seconds, 35.0)),
            "{found:?}"
        );
        assert!(seasons.iter().any(|&p| near(p, 35.0)), "{seasons:?}");
        assert!(seasons.iter().any(|&p| near(p, 70.0)), "{seasons:?}");
    }

    #[test]
    fn blips_between_long_stops_are_no_cycle() {
        // an idle process's SM readings (run2), 1-2% now and then, held 10 steps: its
        // longest stretch between stops holds three blips about 40 steps apart
        let y = runs_of(&[
            (0.0, 11),
            (0.01, 10),
            (0.0, 70),
            (0.01, 10),
            (0.02, 10),
            (0.0, 40),
            (0.01, 10),
            (0.0, 140),
            (0.01, 10),
            (0.0, 80),
            (0.01, 10),
            (0.0, 10),
            (0.02, 10),
            (0.0, 30),
            (0.02, 10),
            (0.0, 40),
            (0.01, 10),
            (0.0, 10),
        ]);
        let out = detect_periods(&Series::from_values(&y, 1.0), &PeriodConfig::default());
        assert!(out.periods().is_empty(), "{out:?}");
    }

    fn detect(values: &[f64]) -> PeriodOutcome {
        detect_on_grid(values, 60.0, &PeriodConfig::default())
    }

    /// [`detect_whole`] on the longest stretch of `series` on its grid, as
    /// [`detect_periods`] would see it without the busy-stretch search.
    fn detect_whole_series(series: &Series, config: &PeriodConfig) -> PeriodOutcome {
        let segments = grid::segments(&series.points, None, config.max_fill_steps).unwrap();
        let grid = grid::longest(segments);
        detect_whole(&grid.values, grid.step, config)
    }

    /// Asserts that the first `n` samples of a recorded series show no period as a
    /// whole, and `period` (within `tolerance` s) once searched between their stops.
    fn found_between_stops(run: &str, name: &str, n: usize, period: f64, tolerance: f64) {
        let series = recorded(run, name, n);
        let config = PeriodConfig::default();
        let whole = detect_whole_series(&series, &config);
        assert!(whole.periods().is_empty(), "{name}: {whole:?}");
        let out = detect_periods(&series, &config);
        assert!(
            out.periods()
                .iter()
                .any(|p| (p.period_seconds - period).abs() < tolerance),
            "{name}: {out:?}"
        );
    }

    #[test]
    fn a_job_stopped_between_its_cycles_keeps_its_period() {
        // run5's DRAM activity: a training job with an evaluation pass every 60 s ran
        // 280 s, stopped for 110 s and resumed; its first 477 samples. The stop's step
        // buries the cycles in the spectrum of the whole; the 280 s before it show them.
        found_between_stops("run5", "gpu_dram_active", 477, 60.0, 1.2);
    }

    #[test]
    fn a_stop_that_halves_the_cycle_of_the_whole_is_seen_through() {
        // all of run5's GPU utilization: the whole, with the 110 s stop, repeats at
        // 30 s as strongly as at 60 s; the busy stretch before the stop shows 60 s
        let series = recorded("run5", "gpu_utilization", usize::MAX);
        let config = PeriodConfig::default();
        let whole = detect_whole_series(&series, &config);
        assert!(
            whole
                .periods()
                .iter()
                .any(|p| (p.period_seconds - 30.0).abs() < 0.6),
            "{whole:?}"
        );
        let out = detect_periods(&series, &config);
        let first = out.periods().first().map(|p| p.period_seconds);
        assert!(first.is_some_and(|p| (p - 60.0).abs() < 1.2), "{out:?}");
    }

    #[test]
    fn a_job_stopped_while_the_gpu_stays_above_its_floor_keeps_its_period() {
        // run6: the training job (40 s cycle) stopped for 120 s while the other jobs
        // held the GPU at 130 W and its SM clock at its 1,980 MHz boost; neither is the
        // floor (75 W and 345 MHz before the jobs started). The first 356 samples.
        for name in ["gpu_power_watts", "gpu_clock_hz-sm"] {
            found_between_stops("run6", name, 357, 40.0, 1.0);
        }
    }

    #[test]
    fn a_weak_fast_cycle_under_a_strong_slow_one_is_found() {
        let y: Vec<f64> = (0..2000)
            .map(|i| {
                let slow = 10.0 * (2.0 * std::f64::consts::PI * i as f64 / 97.3).sin();
                slow + 0.3 * (i % 7) as f64 + 0.05 * ((i * 7919) % 13) as f64
            })
            .collect();
        let out = detect(&y);
        for truth in [97.3 * 60.0, 7.0 * 60.0] {
            assert!(
                out.periods()
                    .iter()
                    .any(|p| (p.period_seconds - truth).abs() < 0.02 * truth),
                "{truth} missing from {out:?}"
            );
        }
    }

    #[test]
    fn the_last_peak_is_when_the_cycle_bursts_whatever_the_window() {
        // a 5-minute cycle bursting at 120-150 s past each multiple of 300 s, seen from
        // two windows that start at different points of the cycle
        for start in [1_767_225_600.0, 1_767_225_600.0 + 77.0 * 15.0] {
            let points: Vec<(f64, f64)> = (0..480)
                .map(|i| {
                    let t = start + 15.0 * f64::from(i);
                    let burst = (120.0..150.0).contains(&t.rem_euclid(300.0));
                    (t, if burst { 0.9 } else { 0.05 })
                })
                .collect();
            let out = detect_periods(&Series::from_points(points), &PeriodConfig::default());
            let p = out.periods()[0];
            assert!((p.period_seconds - 300.0).abs() < 3.0, "{out:?}");
            let peak = p.last_peak_seconds.unwrap();
            let end = start + 479.0 * 15.0;
            // in the window's last period, and in a burst
            assert!(peak <= end && peak > end - 300.0 - 15.0, "{peak} vs {end}");
            let phase = peak.rem_euclid(300.0);
            assert!((110.0..160.0).contains(&phase), "{phase}");
        }
        // degenerate input: no peak rather than a made-up one
        assert_eq!(last_peak(&[0.0; 100], 0.0, 15.0, 300.0), None);
        assert_eq!(last_peak(&[1.0; 10], 0.0, 15.0, 300.0), None);
        assert!(last_peak(&[f64::MAX, -f64::MAX].repeat(50), 0.0, 1.0, 2.0).is_some());
    }

    #[test]
    fn flat_short_and_straight_series_have_no_period_and_say_why() {
        let reason = |o: PeriodOutcome| match o {
            PeriodOutcome::NoPeriod { reason } => reason,
            PeriodOutcome::Periodic(p) => panic!("made-up period {p:?}"),
        };
        assert!(reason(detect(&[5.0; 500])).starts_with("flat"));
        let line: Vec<f64> = (0..500).map(|i| 3.0 + 0.1 * i as f64).collect();
        assert!(reason(detect(&line)).starts_with("flat"));
        assert!(reason(detect(&[1.0, 2.0, 1.0, 2.0])).starts_with("too short"));
        let series = Series::from_points(vec![(0.0, 1.0)]);
        let r = reason(detect_periods(&series, &PeriodConfig::default()));
        assert!(r.contains("unusable"), "{r}");
    }

    /// A noisy 24-step cycle around 10, 600 points.
    fn cycle() -> Vec<f64> {
        (0..600)
            .map(|i| {
                10.0 + (2.0 * std::f64::consts::PI * i as f64 / 24.0).sin()
                    + 0.05 * (((i * 7919) % 101) as f64 / 101.0 - 0.5)
            })
            .collect()
    }

    /// The periods [`detect`] finds, in its steps of 60 s.
    fn steps_found(values: &[f64]) -> Vec<f64> {
        detect(values)
            .periods()
            .iter()
            .map(|p| p.period_seconds / 60.0)
            .collect()
    }

    fn assert_finds_the_cycle(values: &[f64]) {
        let out = detect(values);
        let p = out.periods().first().unwrap_or_else(|| panic!("{out:?}"));
        assert!((p.period_seconds - 1440.0).abs() < 1440.0 * 0.02, "{out:?}");
        assert!(p.strength.is_finite() && p.confidence.is_finite());
    }

    #[test]
    fn one_absurd_sample_does_not_hide_the_period() {
        for spike in [1.7e308, -1.7e308, f64::MAX, 1e200, -1e200] {
            let mut y = cycle();
            y[300] = spike;
            assert_finds_the_cycle(&y);
        }
        let mut at_the_end = cycle();
        at_the_end[599] = 1e200;
        assert_finds_the_cycle(&at_the_end);
    }

    #[test]
    fn a_short_period_is_not_reported_again_at_half_its_length() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        for noise in [0.0, 0.3] {
            let sawtooth: Vec<f64> = (0..600)
                .map(|i| (i % 5) as f64 + noise * (rng.gen::<f64>() - 0.5))
                .collect();
            let steps = steps_found(&sawtooth);
            assert!(
                steps.len() == 1 && (steps[0] - 5.0).abs() < 0.01,
                "{noise}: {steps:?}"
            );
        }
    }

    #[test]
    fn a_series_that_alternates_every_step_has_no_slower_period() {
        for n in [600, 601] {
            let alternating: Vec<f64> = (0..n).map(|i| [1.0, -1.0][i % 2]).collect();
            let PeriodOutcome::NoPeriod { reason } = detect(&alternating) else {
                panic!("{n} values: {:?}", detect(&alternating));
            };
            assert!(reason.starts_with("alternates every step"), "{reason}");
        }
    }

    #[test]
    fn a_cycle_under_an_alternation_is_found_and_a_fast_one_is_kept() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let values: Vec<f64> = (0..600)
            .map(|i| {
                let day = (std::f64::consts::TAU * i as f64 / 24.0).sin();
                10.0 * [1.0, -1.0][i % 2] + day + 0.05 * (rng.gen::<f64>() - 0.5)
            })
            .collect();
        let found = steps_found(&values);
        let first = found.first().expect("the 24-step cycle");
        assert!((first - 24.0).abs() < 0.48, "{found:?}");

        let fast: Vec<f64> = (0..600)
            .map(|i| (std::f64::consts::TAU * i as f64 / 2.6).sin())
            .collect();
        let found = steps_found(&fast);
        let first = found.first().expect("the 2.6-step cycle");
        assert!((first - 2.6).abs() < 0.052, "{found:?}");
    }

    #[test]
    fn values_near_the_f64_limits_are_analysed_not_panicked_on() {
        let alternating: Vec<f64> = (0..600)
            .map(|i| if i % 2 == 0 { 1e308 } else { -1e308 })
            .collect();
        // The same answer as for ±1: the analysis does not depend on the magnitude.
        let unit: Vec<f64> = alternating.iter().map(|v| v / 1e308).collect();
        let out = detect(&alternating);
        assert_eq!(out, detect(&unit));
        assert!(out.periods().is_empty(), "{out:?}");
        let huge: Vec<f64> = cycle().iter().map(|v| v * 1.5e307).collect();
        assert_finds_the_cycle(&huge);
        let near_max: Vec<f64> = (0..600)
            .map(|i| if i % 24 < 12 { f64::MAX } else { -f64::MAX })
            .collect();
        assert_finds_the_cycle(&near_max);
    }

    #[test]
    fn subnormal_series_keep_their_period() {
        let square: Vec<f64> = (0..600)
            .map(|i| if i % 24 < 12 { 5e-324 } else { 1e-323 })
            .collect();
        assert_finds_the_cycle(&square);
        let sine: Vec<f64> = cycle().iter().map(|v| (v - 10.0) * 1e-310).collect();
        assert_finds_the_cycle(&sine);
        assert!(detect(&[5e-324; 600]).periods().is_empty());
    }
}
