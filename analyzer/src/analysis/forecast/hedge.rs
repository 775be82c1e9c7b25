//! Hedging the choice. On series driven by jobs (a cluster's share of GPUs held, nodes
//! busy, jobs started) no model knows much more than the current level: the winner of
//! four validation blocks is often the model that happened to fit the last level
//! shift, and it extrapolates that luck (a trend across a weekend, a day's median across
//! a job that just started). The hedge replaces the chosen forecast at each step by the
//! median of itself, the smoothed current level and that level reverting to the
//! window's median ([`hedge`]): the two simple forecasts outvote a wild one, and agree
//! with a sound one. It is used only on series that move in steps
//! ([`moves_in_steps`]), where it would have done no worse in the same validation
//! ([`worth_it`]), so a model that validation trusts keeps its shape; never on a
//! sawtooth, whose ramps are trends by their nature.

use super::candidates::median;
use super::candidates::Path;
use super::resets::is_sawtooth;
use super::validation::{self, Choice, Origins};

/// The current level is the median of the last horizon / `LEVEL_SHARE` values (at least
/// [`MIN_LEVEL`]): an hour for a day ahead, past a single noisy count or a blip.
pub const LEVEL_SHARE: usize = 48;
/// Fewest values in the current level's median.
pub const MIN_LEVEL: usize = 3;
/// The reversion halves the level's distance from the window's median every horizon /
/// `HALF_LIFE_SHARE` steps: jobs end and new ones arrive on the scale of hours.
pub const HALF_LIFE_SHARE: usize = 4;

/// Whether to hedge `choice`: its hedged validation forecasts (each origin's path
/// hedged on the data before it, then `post`) err no more than the choice did.
pub fn worth_it(y: &[f64], choice: &Choice, origins: &Origins, post: &dyn Fn(&mut Path)) -> bool {
    // A ramp that resets (memory grown and freed) is a trend by its nature; the hedge's
    // flat members would hold it back. A series that moves continuously may follow a
    // shape that no level describes.
    if is_sawtooth(y) || !moves_in_steps(y) {
        return false;
    }
    let hedged: Vec<Path> = origins
        .at
        .iter()
        .zip(&choice.paths)
        .map(|(&o, p)| {
            let mut p = p.clone();
            hedge(&y[..o], &mut p.point);
            post(&mut p);
            p
        })
        .collect();
    validation::mae(y, &origins.at, &hedged) <= choice.mae
}

/// Share of unchanged steps from which a series moves in steps.
pub const STEP_SHARE: f64 = 0.5;

/// Whether at least [`STEP_SHARE`] of the steps of `y` leave it exactly unchanged: a
/// series driven by discrete events (jobs holding GPUs, counts of jobs started), whose
/// level, not its path, is what persists.
pub fn moves_in_steps(y: &[f64]) -> bool {
    y.len() > 1 && super::pinned::still_share(y) >= STEP_SHARE
}

/// Replaces each point forecast after `y` by the median of itself, the current level of
/// `y` and the level's reversion to the median of `y`.
pub fn hedge(y: &[f64], point: &mut [f64]) {
    if y.is_empty() {
        return;
    }
    let h = point.len();
    let k = (h / LEVEL_SHARE).max(MIN_LEVEL).min(y.len());
    let level = median(y[y.len() - k..].to_vec());
    let centre = median(y.to_vec());
    let half_life = (h / HALF_LIFE_SHARE).max(1) as f64;
    for (j, p) in point.iter_mut().enumerate() {
        let reverted = centre + (level - centre) * 0.5f64.powf((j + 1) as f64 / half_life);
        *p = median_of_three(*p, level, reverted);
    }
}

fn median_of_three(a: f64, b: f64, c: f64) -> f64 {
    a.max(b).min(a.min(b).max(c))
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
        assert!(rising[0] > 20.0 && rising[0] < 21.0, "{}", rising[0]);
        assert!(
            (55.0..=63.0).contains(&rising[287]),
            "{}: the reversion",
            rising[287]
        );
        assert!(rising.windows(2).all(|w| w[1] >= w[0]));
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
        }
    }

    #[test]
    fn the_hedge_is_used_only_where_it_validated_no_worse() {
        let origins = Origins {
            at: vec![400, 450, 500, 550],
            steps: 50,
        };
        let path = |f: &dyn Fn(usize) -> f64| Path {
            point: (1..=50).map(f).collect(),
            var: vec![1.0; 50],
        };
        // a level that holds (and moves in steps): a model that drifted away is hedged
        let flat: Vec<f64> = (0..600)
            .map(|t| [30.0, 31.0, 32.0, 31.0][(t / 10) % 4])
            .collect();
        let drifting = choice(&flat, &origins, vec![path(&|j| 31.0 + j as f64); 4]);
        assert!(worth_it(&flat, &drifting, &origins, &|_| {}));
        // a clean cycle (each value held two steps) forecast exactly by its model: the
        // hedge would flatten it
        let wave = |t: usize| 50.0 + 40.0 * ((t / 2 * 2) as f64 * 0.3).sin();
        let cycle: Vec<f64> = (0..600).map(wave).collect();
        let exact: Vec<Path> = origins
            .at
            .iter()
            .map(|&o| path(&|j| wave(o + j - 1)))
            .collect();
        let exact = choice(&cycle, &origins, exact);
        assert!(moves_in_steps(&cycle) && !is_sawtooth(&cycle));
        assert!(!worth_it(&cycle, &exact, &origins, &|_| {}));
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
