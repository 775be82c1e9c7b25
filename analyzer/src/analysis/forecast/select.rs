//! Choosing the model: by rolling-origin validation (the default) or by AICc (the
//! earlier single-model method). Both work on a series scaled to ±1 and return periods
//! in steps; the caller scales back.

use super::bounds::Bounds;
use super::candidates::{self, Candidate, Path};
use super::ets::{self, EtsSpec, Season, Trend};
use super::intervals;
use super::linear::LinearFit;
use super::validation::{self, Origins};
use super::{fits, Forecast, FIT_POINTS};

/// Evaluations the optimiser may spend per model (AICc method).
const MAX_EVALS: usize = 40;
/// Fewest points a candidate is trained on.
const MIN_TRAIN: usize = 10;
/// Normal quantiles of the central 80% and 95%.
const Z80: f64 = 1.281_551_565_544_600_5;
const Z95: f64 = 1.959_963_984_540_054;

/// The fitting window: the most recent [`FIT_POINTS`] steps, or three of the longest
/// season if that is more.
fn window<'a>(y: &'a [f64], seasons: &[Season]) -> &'a [f64] {
    let longest = seasons.iter().map(|s| s.bins()).max().unwrap_or(0);
    let w = FIT_POINTS.max(3 * longest).min(y.len());
    &y[y.len() - w..]
}

/// Forecasts `y` by the candidate (or mean of three) with the lowest validation error.
pub fn forecast_validated(y: &[f64], seasons: &[Season], h: usize) -> Forecast {
    let y = window(y, seasons);
    let Some(origins) = Origins::plan(y.len(), h, MIN_TRAIN) else {
        return forecast_by_aicc(y, seasons.first().copied(), h);
    };
    let train = &y[..origins.at[0]];
    let seasons: Vec<Season> = seasons
        .iter()
        .copied()
        .filter(|s| fits(train.len(), s.period()))
        .collect();
    let bounds = Bounds::of(y);
    let post = |p: &mut Path| p.point.iter_mut().for_each(|v| *v = bounds.clamp(*v));
    let all = candidates::build(train, &seasons);
    let choice = validation::choose(y, &all, &origins, &post);
    let members: Vec<&dyn Candidate> = choice.members.iter().map(|&i| all[i].as_ref()).collect();
    let paths: Vec<Path> = members
        .iter()
        .map(|c| {
            let mut p = c.forecast(y, h);
            post(&mut p);
            p
        })
        .collect();
    let path = validation::average(paths.iter().map(std::slice::from_ref))
        .pop()
        .expect("one path");
    let model = match members.as_slice() {
        [one] => one.name(),
        many => {
            let names: Vec<String> = many.iter().map(|c| c.name()).collect();
            format!("mean({})", names.join(", "))
        }
    };
    let band = |coverage: f64, z: f64| {
        let k = validation::calibration(&choice.standardised, coverage, z) * z;
        let (lower, upper): (Vec<f64>, Vec<f64>) = path
            .point
            .iter()
            .zip(&path.var)
            .map(|(p, v)| {
                let w = k * v.max(0.0).sqrt();
                (bounds.clamp(p - w), bounds.clamp(p + w))
            })
            .unzip();
        (lower, upper)
    };
    let (lower_80, upper_80) = band(0.80, Z80);
    let (lower_95, upper_95) = band(0.95, Z95);
    Forecast {
        model,
        period_seconds: members.iter().find_map(|c| c.period()),
        step_seconds: 1.0,
        point: path.point,
        lower_80,
        upper_80,
        lower_95,
        upper_95,
    }
}

/// Forecasts `y` by the lowest-AICc model: ETS with `season` (trend none, additive,
/// damped) or the least-squares line; analytic normal intervals.
pub fn forecast_by_aicc(y: &[f64], season: Option<Season>, h: usize) -> Forecast {
    let y_fit = window(y, season.as_slice());
    let line = LinearFit::fit(y_fit);
    let mut best: (f64, String, Option<Season>, Vec<f64>, Vec<f64>) = {
        let (p, v) = line.forecast(h);
        (line.aicc(), "linear".to_string(), None, p, v)
    };
    if y_fit.len() >= 10 {
        for trend in [Trend::None, Trend::Additive, Trend::Damped] {
            let spec = EtsSpec { trend, season };
            let fit = ets::fit(y_fit, spec, MAX_EVALS);
            if fit.aicc < best.0 {
                let (p, v) = fit.forecast(h);
                best = (fit.aicc, spec.name(), season, p, v);
            }
        }
    }
    let (_, model, m, point, var) = best;
    let b80 = intervals::band(&point, &var, 0.80);
    let b95 = intervals::band(&point, &var, 0.95);
    Forecast {
        model,
        period_seconds: m.map(|s| s.period()),
        step_seconds: 1.0,
        point,
        lower_80: b80.lower,
        upper_80: b80.upper,
        lower_95: b95.lower,
        upper_95: b95.upper,
    }
}
