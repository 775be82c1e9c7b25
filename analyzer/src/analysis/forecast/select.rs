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
/// season and the validation stretch (`validate` steps) if that is more.
fn window<'a>(y: &'a [f64], seasons: &[Season], validate: usize) -> &'a [f64] {
    let longest = seasons.iter().map(|s| s.bins()).max().unwrap_or(0);
    let w = FIT_POINTS.max(3 * longest + validate).min(y.len());
    &y[y.len() - w..]
}

/// Origins whose training data holds two cycles of every season kept, and the seasons
/// kept: the longest are given up, one by one, when no origin leaves room for them.
fn plan(n: usize, h: usize, seasons: &[Season]) -> Option<(Origins, Vec<Season>)> {
    let mut kept: Vec<Season> = seasons.to_vec();
    loop {
        let longest = kept.iter().map(|s| s.period()).fold(0.0, f64::max);
        let need = MIN_TRAIN.max((2.0 * longest).ceil() as usize + 2);
        if let Some(o) = Origins::plan(n, h, need) {
            return Some((o, kept));
        }
        if kept.is_empty() {
            return None;
        }
        let at = kept
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.period().total_cmp(&b.1.period()))
            .map(|(i, _)| i)
            .expect("a season");
        kept.remove(at);
    }
}

/// Forecasts `y` by the candidate (or mean of three) with the lowest validation error;
/// `dominant` (detected or given) is ETS's season, `seasons` all the candidate seasons.
pub fn forecast_validated(
    y: &[f64],
    seasons: &[Season],
    dominant: Option<Season>,
    h: usize,
) -> Forecast {
    let y = window(y, seasons, validation::ORIGINS * h);
    let Some((origins, seasons)) = plan(y.len(), h, seasons) else {
        return forecast_by_aicc(y, dominant, h);
    };
    let train = &y[..origins.at[0]];
    let bounds = Bounds::of(y);
    let post = |p: &mut Path| p.point.iter_mut().for_each(|v| *v = bounds.clamp(*v));
    let dominant = dominant.filter(|s| fits(train.len(), s.period()));
    let all = candidates::build(train, &seasons, dominant, origins.steps);
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
    let y_fit = window(y, season.as_slice(), 0);
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
