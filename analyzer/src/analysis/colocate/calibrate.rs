//! Fitting the model's constants to measured pairs: least squares over each side's
//! normalized progress, by a grid search that narrows around the best point (two
//! constants per mode, so a grid is exact enough and needs no derivatives).

use serde::{Deserialize, Serialize};

use super::{mps, time_slicing, Constants, Demand, Mode};

/// One measured pair: both sides' demands alone and their progress together in `mode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// The sharing mode measured (time-slicing or uncapped MPS).
    pub mode: Mode,
    /// The first program's name.
    pub a: String,
    /// The second program's name.
    pub b: String,
    /// The first program's demands, measured alone.
    pub demand_a: Demand,
    /// The second program's demands, measured alone.
    pub demand_b: Demand,
    /// The first program's measured progress beside the second.
    pub progress_a: f64,
    /// The second program's measured progress beside the first.
    pub progress_b: f64,
}

/// The model's prediction for an observation's pair and mode.
pub fn predicted(o: &Observation, c: &Constants) -> (f64, f64) {
    match o.mode {
        Mode::TimeSlicing => time_slicing::progress(&o.demand_a, &o.demand_b, c),
        Mode::Mps => mps::progress(&o.demand_a, &o.demand_b, c),
        Mode::Mig => (1.0, 1.0),
    }
}

/// The sum of squared errors of both sides over `observations`.
pub fn squared_error(observations: &[&Observation], c: &Constants) -> f64 {
    observations
        .iter()
        .map(|o| {
            let (pa, pb) = predicted(o, c);
            (pa - o.progress_a).powi(2) + (pb - o.progress_b).powi(2)
        })
        .sum()
}

/// The ranges searched for each constant, in [`Constants::NAMES`] order.
pub const RANGES: [(f64, f64); 4] = [(0.0, 0.2), (0.0, 2.0), (0.0, 0.95), (0.0, 3.0)];

/// Constants fitted to `observations`, starting from `start`: the time-slicing pair
/// from the time-slicing observations, the MPS pair from the MPS ones; a mode without
/// observations keeps `start`'s values.
pub fn fit(observations: &[Observation], start: &Constants) -> Constants {
    let mut v = start.to_vec();
    for (mode, first) in [(Mode::TimeSlicing, 0), (Mode::Mps, 2)] {
        let of_mode: Vec<&Observation> = observations.iter().filter(|o| o.mode == mode).collect();
        if of_mode.is_empty() {
            continue;
        }
        let (x, y) = grid_fit(&of_mode, v, first);
        v[first] = x;
        v[first + 1] = y;
    }
    Constants::from_vec(v)
}

/// Searches constants `first` and `first + 1` on a 21×21 grid, 6 times, each time
/// on a grid a fifth as wide around the best point.
fn grid_fit(obs: &[&Observation], mut v: [f64; 4], first: usize) -> (f64, f64) {
    let (mut lo, mut hi) = (
        [RANGES[first].0, RANGES[first + 1].0],
        [RANGES[first].1, RANGES[first + 1].1],
    );
    const N: usize = 20;
    for _ in 0..6 {
        let mut best = (f64::INFINITY, v[first], v[first + 1]);
        for i in 0..=N {
            for j in 0..=N {
                v[first] = lo[0] + (hi[0] - lo[0]) * i as f64 / N as f64;
                v[first + 1] = lo[1] + (hi[1] - lo[1]) * j as f64 / N as f64;
                let e = squared_error(obs, &Constants::from_vec(v));
                if e < best.0 {
                    best = (e, v[first], v[first + 1]);
                }
            }
        }
        for (k, centre) in [best.1, best.2].into_iter().enumerate() {
            let (full_lo, full_hi) = if k == 0 {
                RANGES[first]
            } else {
                RANGES[first + 1]
            };
            let half = (hi[k] - lo[k]) / 10.0;
            lo[k] = (centre - half).max(full_lo);
            hi[k] = (centre + half).min(full_hi);
        }
        v[first] = best.1;
        v[first + 1] = best.2;
    }
    (v[first], v[first + 1])
}
