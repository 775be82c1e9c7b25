//! Hedging the choice. On series driven by jobs (a cluster's share of GPUs held, nodes
//! busy, jobs started) no model knows much more than the current level: the winner of
//! four validation blocks is often the model that happened to fit the last level
//! shift, and it extrapolates that luck (a trend across a weekend, a day's median across
//! a job that just started). The hedge replaces the chosen forecast at each step by the
//! median of itself, the smoothed current level, that level reverting to the window's
//! median, and what followed the series' past values nearest the current one
//! ([`analog`]) ([`hedge`]): the simple forecasts outvote a wild one, and agree with a
//! sound one. It is used only on series that move in steps
//! ([`moves_in_steps`]), where it would have done better on origins the choice was not
//! made on ([`worth_it`]), so a model that validation trusts keeps its shape; never on
//! a sawtooth, whose ramps are trends by their nature. Where the steps are jobs' and
//! no season was detected, four validation blocks cannot tell luck from skill, and
//! every choice but naive is hedged ([`unasked`]).

use super::analog;
use super::candidates::median;
use super::candidates::Path;
use super::resets::is_sawtooth;
use super::validation::{self, Choice, Origins};
use crate::analysis::periodicity::acf;
use crate::analysis::runs;

/// The current level is the median of the last horizon / `LEVEL_SHARE` values (at least
/// [`MIN_LEVEL`]): an hour for a day ahead, past a single noisy count or a blip.
pub const LEVEL_SHARE: usize = 48;
/// Fewest values in the current level's median.
pub const MIN_LEVEL: usize = 3;
/// The lag, horizon / `HALF_LIFE_SHARE` steps, at which the series' autocorrelation
/// sets how fast the level reverts ([`half_life`]): jobs end and new ones arrive on the
/// scale of hours.
pub const HALF_LIFE_SHARE: usize = 4;

/// Whether to hedge `choice`: hedged, the forecasts of the choices made without each
/// origin (`Choice::held_out`, hedged on the data before it, then `post`) erred less
/// there than unhedged; where they erred alike, the choice's own forecasts hedged
/// erred no more. The choice won validation on its origins, partly by luck, and on
/// those same origins the hedge, which won nothing, looks worse than it is.
pub fn worth_it(y: &[f64], choice: &Choice, origins: &Origins, post: &dyn Fn(&mut Path)) -> bool {
    // A ramp that resets (memory grown and freed) is a trend by its nature; the hedge's
    // flat members would hold it back. A series that moves continuously may follow a
    // shape that no level describes.
    if is_sawtooth(y) || !moves_in_steps(y) {
        return false;
    }
    let hedged_mae = |paths: &[Path]| {
        let adjust = |data: &[f64], p: &mut Path| {
            hedge(data, &mut p.point);
            post(p);
        };
        let hedged = validation::adjusted(y, &origins.at, paths, &adjust);
        validation::mae(y, &origins.at, &hedged)
    };
    if !choice.held_out.is_empty() {
        let (hedged, plain) = (
            hedged_mae(&choice.held_out),
            validation::mae(y, &origins.at, &choice.held_out),
        );
        if hedged != plain {
            return hedged < plain;
        }
    }
    hedged_mae(&choice.paths) <= choice.mae
}

/// Longest hold of a reading ([`runs::hold`]) on a series whose steps are jobs': NVML's
/// per-process utilization, read every 5 or 10 s and scraped every second, also moves
/// in steps, and its runs are the reading's.
pub const MAX_JOB_HOLD: usize = 2;

/// Whether to hedge a choice without asking validation: `y` moves in steps that jobs
/// make (not a held reading's, not a sawtooth's), no season was detected
/// (`season_detected`), and the choice is not naive alone (`naive`), which the hedge
/// would pull off the level it holds. On the tenants set's development seeds, hedging
/// the choices [`worth_it`] had refused (on the luck of four blocks) took the share
/// held from 0.9987 to 0.9904 of naive's MAE; with a season the choice keeps its
/// shape, which a cycle of jobs (the H100 recordings' per-process SM) needs
/// (`docs/validation/analyzer/forecast-eval-session46.md`, section 4).
pub fn unasked(y: &[f64], season_detected: bool, naive: bool) -> bool {
    !season_detected
        && !naive
        && moves_in_steps(y)
        && !is_sawtooth(y)
        && runs::hold(y) <= MAX_JOB_HOLD
}

/// Share of unchanged steps from which a series moves in steps.
pub const STEP_SHARE: f64 = 0.5;

/// Whether at least [`STEP_SHARE`] of the steps of `y` leave it exactly unchanged: a
/// series driven by discrete events (jobs holding GPUs, counts of jobs started), whose
/// level, not its path, is what persists.
pub fn moves_in_steps(y: &[f64]) -> bool {
    y.len() > 1 && super::pinned::still_share(y) >= STEP_SHARE
}

/// Replaces each point forecast after `y` by the median of four (the mean of the middle
/// two): itself, the current level of `y`, the level's reversion to the median of `y`,
/// and the median of what followed the past values of `y` nearest its last
/// ([`analog::analogues`]); of the first three where the analogues are too few. The
/// reversion's half-life is a model of how the level moves; the analogues are how it
/// did move from there, which reverts from a level the series left quickly and holds
/// one it stayed at. On the tenants set (development
/// seeds 1-6 and 11-30, means of per-seed rows) the fourth member took the share held
/// from 0.9900 to 0.9748 of naive's MAE and the nodes busy from 0.9855 to 0.9740
/// (`docs/validation/analyzer/forecast-eval-session50.md`).
pub fn hedge(y: &[f64], point: &mut [f64]) {
    hedge_by(y, point, true);
}

/// [`hedge`], with the analogues where `with_analogues` (where they are enough).
fn hedge_by(y: &[f64], point: &mut [f64], with_analogues: bool) {
    if y.is_empty() {
        return;
    }
    let h = point.len();
    let k = (h / LEVEL_SHARE).max(MIN_LEVEL).min(y.len());
    let level = median(y[y.len() - k..].to_vec());
    let centre = median(y.to_vec());
    let half_life = half_life(y, centre, h);
    // analogues nearer the last value than half way to the centre: the others are
    // nearer the series' usual course, which the reversion already stands for
    let last = y[y.len() - 1];
    let analogues = with_analogues
        .then(|| analog::analogues(y, h, (centre - last).abs() / 2.0))
        .flatten();
    for (j, p) in point.iter_mut().enumerate() {
        let reverted = centre + (level - centre) * 0.5f64.powf((j + 1) as f64 / half_life);
        *p = match &analogues {
            Some(a) => median_of_four([*p, level, reverted, a[j]]),
            None => median_of_three(*p, level, reverted),
        };
    }
}

/// Steps in which the level's distance from `centre` halves, as it did in `y`: the
/// half-life of an AR(1) with `y`'s autocorrelation about `centre` at the lag horizon /
/// [`HALF_LIFE_SHARE`], between horizon / [`LEVEL_SHARE`] and four horizons (the lag
/// itself where `y` is too short to measure it). GPUs held
/// by long jobs stay held (a slow reversion, near the level); a count of jobs started
/// scatters about its usual value (a fast one).
fn half_life(y: &[f64], centre: f64, h: usize) -> f64 {
    let lag = (h / HALF_LIFE_SHARE).max(1);
    let (shortest, longest) = ((h / LEVEL_SHARE).max(1) as f64, 4.0 * h as f64);
    if y.len() <= 2 * lag {
        return lag as f64;
    }
    let r = acf::about(y, centre, lag);
    if r <= 0.0 {
        return shortest;
    }
    (lag as f64 * 0.5f64.ln() / r.ln()).clamp(shortest, longest)
}

fn median_of_three(a: f64, b: f64, c: f64) -> f64 {
    a.max(b).min(a.min(b).max(c))
}

/// The mean of the middle two of `v`.
fn median_of_four(mut v: [f64; 4]) -> f64 {
    v.sort_by(f64::total_cmp);
    (v[1] + v[2]) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_three_is_the_middle_value() {
        for (a, b, c) in [
            (1.0, 2.0, 3.0),
            (3.0, 1.0, 2.0),
            (2.0, 3.0, 1.0),
            (2.0, 2.0, 5.0),
        ] {
            let mut v = [a, b, c];
            v.sort_by(f64::total_cmp);
            assert_eq!(median_of_three(a, b, c), v[1]);
        }
    }

    #[test]
    fn the_median_of_four_is_the_mean_of_the_middle_two() {
        assert_eq!(median_of_four([4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median_of_four([2.0, 2.0, 9.0, -7.0]), 2.0);
        assert_eq!(median_of_four([1.0, 1.0, 1.0, 5.0]), 1.0);
    }

    #[test]
    fn a_trend_across_a_level_is_outvoted() {
        // a cluster's share near 60% for days, now at 20% for the last few hours: a
        // trend model extrapolating the fall below 0 is outvoted by the level (the
        // reversion is above it), and one rising past the reversion follows that
        let mut y: Vec<f64> = (0..2000).map(|t| 60.0 + (t % 7) as f64).collect();
        y.extend([20.0; 48]);
        let mut falling: Vec<f64> = (1..=288).map(|j| 20.0 - 0.2 * j as f64).collect();
        hedge(&y, &mut falling);
        assert!(falling.iter().all(|p| *p == 20.0), "{falling:?}");
        let mut rising: Vec<f64> = (1..=288).map(|j| 20.0 + 1.0 * j as f64).collect();
        hedge(&y, &mut rising);
        assert!(rising[0] > 20.0 && rising[0] <= 21.0, "{}", rising[0]);
        assert!(
            (55.0..=63.0).contains(&rising[287]),
            "{}: the reversion",
            rising[287]
        );
        assert!(rising.windows(2).all(|w| w[1] >= w[0]));
    }

    #[test]
    fn a_level_the_series_always_left_is_hedged_towards_where_it_went() {
        // a cluster at 30 that rose to 50 for 100 steps at a time and came back each
        // time, now at 50 again: a choice holding 50 is kept for the next step, but a
        // day ahead the analogues (every earlier 50 was 30 by then) pull it down
        let mut y = Vec::new();
        for _ in 0..20 {
            y.extend([30.0; 300]);
            y.extend([50.0; 100]);
        }
        y.extend([30.0; 300]);
        y.extend([50.0; 10]);
        let mut held = vec![50.0; 288];
        hedge(&y, &mut held);
        assert_eq!(held[0], 50.0);
        assert!(held[287] > 30.0 && held[287] < 45.0, "{}", held[287]);
        // without the analogues, the level and the choice outvote the reversion
        let mut three = vec![50.0; 288];
        hedge_by(&y, &mut three, false);
        assert_eq!(three[287], 50.0);
    }

    #[test]
    fn a_level_held_by_long_jobs_reverts_slower_than_a_scattered_count() {
        // both about a median of 10, a day ahead at 5 min (lag 72): GPUs held in
        // stretches of a day, and a count of jobs started that scatters
        let values = [4.0, 10.0, 16.0, 10.0];
        let held: Vec<f64> = (0..4032).map(|t| values[(t / 288) % 4]).collect();
        let scattered: Vec<f64> = (0..4032u64)
            .map(|t| values[(t.wrapping_mul(2_654_435_761) >> 13) as usize % 4])
            .collect();
        let (slow, fast) = (
            half_life(&held, 10.0, 288),
            half_life(&scattered, 10.0, 288),
        );
        assert!(slow > 72.0 && fast <= 72.0, "{slow} {fast}");
        assert_eq!(fast, 6.0, "no autocorrelation: the shortest");
        // too short to measure at the lag: the lag itself
        assert_eq!(half_life(&[1.0, 2.0, 3.0, 4.0], 2.5, 8), 2.0);
        // the hedge of a rise from the held level's low stretch follows the slower
        // reversion: further from the centre after an hour
        let mut y = held.clone();
        y.extend([4.0; 36]);
        let mut rising = vec![20.0; 288];
        hedge(&y, &mut rising);
        let mut z = scattered.clone();
        z.extend([4.0; 36]);
        let mut rising_fast = vec![20.0; 288];
        hedge(&z, &mut rising_fast);
        assert!(
            rising[12] < rising_fast[12],
            "{} {}",
            rising[12],
            rising_fast[12]
        );
    }

    #[test]
    fn a_forecast_between_level_and_reversion_is_kept() {
        // level 5, window median 1: the reversion falls from 3 towards 1, the forecast
        // of 4 lies between them at every step
        let y = [1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0];
        let mut point = vec![4.0; 4];
        hedge(&y, &mut point);
        assert!(point.iter().all(|p| *p == 4.0), "{point:?}");
    }

    /// A choice that forecast `paths` from `origins` of `y`, scored as validation does.
    fn choice(y: &[f64], origins: &Origins, paths: Vec<Path>) -> Choice {
        Choice {
            members: vec![0],
            mae: validation::mae(y, &origins.at, &paths),
            candidate_mae: vec![],
            standardised: vec![],
            paths,
            held_out: vec![],
        }
    }

    /// Four origins of 50 steps, at 400 to 550.
    fn four_origins() -> Origins {
        Origins {
            at: vec![400, 450, 500, 550],
            steps: 50,
        }
    }

    /// The 50 steps `f(1..=50)`, with unit variance.
    fn path(f: impl Fn(usize) -> f64) -> Path {
        Path {
            point: (1..=50).map(f).collect(),
            var: vec![1.0; 50],
        }
    }

    /// 600 steps of a level that holds about 31, moving in steps of ten.
    fn held_level() -> Vec<f64> {
        (0..600)
            .map(|t| [30.0, 31.0, 32.0, 31.0][(t / 10) % 4])
            .collect()
    }

    #[test]
    fn the_steps_of_jobs_are_hedged_unasked_and_held_readings_are_not() {
        use crate::analysis::fixtures::{jobs_held, Noise};
        for seed in 1..=5 {
            let y = jobs_held(2016, seed);
            assert!(unasked(&y, false, false), "seed {seed}");
            assert!(!unasked(&y, true, false), "seed {seed}: a season detected");
            assert!(!unasked(&y, false, true), "seed {seed}: naive");
            // read every 10 steps and held: the runs are the reading's
            let read: Vec<f64> = (0..y.len()).map(|t| y[t / 10 * 10]).collect();
            assert!(!unasked(&read, false, false), "seed {seed}: held readings");
            // a reading that moves every step
            let mut e = Noise(seed);
            let noisy: Vec<f64> = y.iter().map(|v| v + e.normal()).collect();
            assert!(!unasked(&noisy, false, false), "seed {seed}: continuous");
        }
    }

    #[test]
    fn the_hedge_is_used_only_where_it_validated_no_worse() {
        let origins = four_origins();
        // a level that holds (and moves in steps): a model that drifted away is hedged
        let flat = held_level();
        let drifting = choice(&flat, &origins, vec![path(|j| 31.0 + j as f64); 4]);
        assert!(worth_it(&flat, &drifting, &origins, &|_| {}));
        // a clean cycle (each value held two steps) forecast exactly by its model: the
        // hedge would flatten it
        let wave = |t: usize| 50.0 + 40.0 * ((t / 2 * 2) as f64 * 0.3).sin();
        let cycle: Vec<f64> = (0..600).map(wave).collect();
        let exact: Vec<Path> = origins
            .at
            .iter()
            .map(|&o| path(|j| wave(o + j - 1)))
            .collect();
        let exact = choice(&cycle, &origins, exact);
        assert!(moves_in_steps(&cycle) && !is_sawtooth(&cycle));
        assert!(!worth_it(&cycle, &exact, &origins, &|_| {}));
    }

    #[test]
    fn the_hedge_is_judged_on_the_origins_the_choice_was_not_made_on() {
        let origins = four_origins();
        // a level that holds, moving in steps; the choice forecast its own origins
        // exactly (that is how it won them), and on those the hedge looks worse
        let flat = held_level();
        let exact: Vec<Path> = origins
            .at
            .iter()
            .map(|&o| path(|j| flat[o + j - 1]))
            .collect();
        let mut lucky = choice(&flat, &origins, exact.clone());
        assert!(!worth_it(&flat, &lucky, &origins, &|_| {}));
        // the choices made without each origin drifted away there: hedged
        lucky.held_out = vec![path(|j| 31.0 + j as f64); 4];
        assert!(worth_it(&flat, &lucky, &origins, &|_| {}));
        // held-out forecasts the hedge leaves as they are (already hedged) tell
        // nothing: the choice's own origins decide
        lucky.held_out = origins
            .at
            .iter()
            .zip(&exact)
            .map(|(&o, p)| {
                let mut p = p.clone();
                hedge(&flat[..o], &mut p.point);
                p
            })
            .collect();
        assert!(!worth_it(&flat, &lucky, &origins, &|_| {}));
    }

    #[test]
    fn series_that_move_in_steps_are_told_from_continuous_ones() {
        // nodes busy: a count that holds between job starts and ends
        let nodes: Vec<f64> = (0..500).map(|t| ((t / 7) % 5) as f64).collect();
        assert!(moves_in_steps(&nodes));
        let wave: Vec<f64> = (0..500).map(|t| (t as f64 * 0.1).sin()).collect();
        assert!(!moves_in_steps(&wave));
        assert!(!moves_in_steps(&[1.0]));
    }

    #[test]
    fn a_continuous_series_is_not_hedged() {
        // the same drifting choice as on the held level, on a level with noise in
        // every step: no hedge
        let origins = Origins {
            at: vec![400, 450, 500, 550],
            steps: 50,
        };
        let noisy: Vec<f64> = (0..600)
            .map(|t| 30.0 + 0.01 * ((t * 7919) % 13) as f64)
            .collect();
        let drifting = Path {
            point: (1..=50).map(|j| 31.0 + j as f64).collect(),
            var: vec![1.0; 50],
        };
        let c = choice(&noisy, &origins, vec![drifting; 4]);
        assert!(!worth_it(&noisy, &c, &origins, &|_| {}));
    }

    #[test]
    fn a_sawtooth_keeps_its_ramp() {
        // memory growing and freed every 150 steps; a choice that missed the ramp and
        // a hedge that would have helped it are not used
        // (in steps of 5, held for 5 samples: it moves in steps)
        let saw: Vec<f64> = (0..600).map(|t| 1.0 + (t % 150 / 5 * 5) as f64).collect();
        let origins = Origins {
            at: vec![400, 450, 500, 550],
            steps: 50,
        };
        let wild = Path {
            point: vec![500.0; 50],
            var: vec![1.0; 50],
        };
        let c = choice(&saw, &origins, vec![wild; 4]);
        assert!(is_sawtooth(&saw) && moves_in_steps(&saw));
        assert!(!worth_it(&saw, &c, &origins, &|_| {}));
    }
}
