//! Exponential smoothing with additive errors (the ETS(A,·,·) family).
//!
//! Trend none, additive or damped additive; season none or additive with period m.
//! Initial states come from a classical decomposition of the fitting window (a
//! least-squares line, then the mean detrended value at each phase of the season), so
//! the optimiser searches only the smoothing parameters: α, β, γ, φ, each a logistic
//! transform of a free variable so that the admissible region (0 < β < α,
//! 0 < γ < 1 - α, 0.8 ≤ φ ≤ 0.98) needs no constraint handling. The SSE of one-step
//! errors is minimised by Nelder–Mead with a bounded evaluation count.

use super::optimize::{nelder_mead, nelder_mead_valued};
use std::borrow::Cow;

/// The trend component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trend {
    /// Level only.
    None,
    /// Level plus a slope.
    Additive,
    /// A slope that fades by φ per step.
    Damped,
}

thread_local! {
    /// The states of steps 0.. of the seasons asked for last. A series' decompositions
    /// and ETS windows ask for one or two seasons' states over windows of many lengths,
    /// and a window's states are the first of a longer window's (step t's state depends
    /// on t alone: `for_each_bin` gives `bin`'s state from any offset), so each is found
    /// once per series instead of once per window.
    static STATES: std::cell::RefCell<Vec<(Season, Vec<u32>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Seasons whose states [`STATES`] keeps.
const CACHED_SEASONS: usize = 4;
/// Longest window whose states are kept (a megabyte per season); longer ones are found
/// each time.
const CACHED_STEPS: usize = 1 << 18;

/// An additive season of a possibly fractional number of steps. Its states are
/// `round(period)` phase bins; step t uses the bin of its phase `(t / period) mod 1`,
/// so a period of 37.3 steps stays aligned over many cycles instead of drifting by
/// 0.3 steps a cycle, as a 37-state season would.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Season {
    period: f64,
    /// `round(period)`, kept: [`Season::bin`] runs once per step of every pass.
    bins: usize,
}

impl Season {
    /// A season of `period` steps; `None` below 2 steps.
    pub fn new(period: f64) -> Option<Season> {
        (period.is_finite() && period >= 2.0).then(|| Season {
            period,
            bins: period.round() as usize,
        })
    }

    /// The period in steps.
    pub fn period(&self) -> f64 {
        self.period
    }

    /// Number of seasonal states.
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// The states used at steps 0..n of the window.
    pub fn bins_of(&self, n: usize) -> Vec<u32> {
        if n > CACHED_STEPS {
            return self.bins_found(n);
        }
        STATES.with(|cache| {
            let mut cache = cache.borrow_mut();
            let at = match cache.iter().position(|(s, _)| s == self) {
                Some(at) => at,
                None => {
                    if cache.len() == CACHED_SEASONS {
                        cache.remove(0);
                    }
                    cache.push((*self, Vec::new()));
                    cache.len() - 1
                }
            };
            let states = &mut cache[at].1;
            let known = states.len();
            if known < n {
                // windows come shortest first (the earliest origin's): extended, not
                // found again
                self.for_each_bin(known, n - known, |_, k| states.push(k as u32));
            }
            states[..n].to_vec()
        })
    }

    /// [`Season::bins_of`], found step by step.
    fn bins_found(&self, n: usize) -> Vec<u32> {
        let mut bins = Vec::with_capacity(n);
        self.for_each_bin(0, n, |_, k| bins.push(k as u32));
        bins
    }

    /// Calls `f(i, k)` for i in 0..n with the state `k` of step `offset + i`, that of
    /// [`Season::bin`], without a division per step: a counter for a whole number of
    /// steps, a product otherwise; two loops, so neither tests which it is per step.
    pub fn for_each_bin(&self, offset: usize, n: usize, mut f: impl FnMut(usize, usize)) {
        let m = self.bins;
        if self.period.fract() == 0.0 {
            let mut k = offset % m;
            for i in 0..n {
                f(i, k);
                k = if k + 1 == m { 0 } else { k + 1 };
            }
        } else {
            self.for_each_fractional_bin(offset, n, f);
        }
    }

    /// [`Season::for_each_bin`] for a fractional period. A step's position in cycles is
    /// the position at the last of every 1,024th step, divided as in [`Season::phase`],
    /// plus the steps since times `1 / period`: each step's own, with no division and no
    /// chain from step to step. It differs from the division's by rounding only, by
    /// below 2e-8 of a state on any grid (each term within 2^-52 relative, positions
    /// below 5e6 steps). Its floor is `bin`'s wherever it is more than [`PHASE_EDGE`]
    /// inside a state; nearer an edge, `bin` decides.
    fn for_each_fractional_bin(&self, offset: usize, n: usize, mut f: impl FnMut(usize, usize)) {
        let states = self.bins as f64;
        let per_step = 1.0 / self.period;
        for block in (0..n).step_by(1024) {
            let anchor = (offset + block) as f64 / self.period;
            for i in block..n.min(block + 1024) {
                let q = anchor + (i - block) as i64 as f64 * per_step;
                let x = (q - (q as i64) as f64) * states;
                let k = x as i64;
                let inside = x - k as f64;
                if inside > PHASE_EDGE && inside < 1.0 - PHASE_EDGE {
                    f(i, k as usize);
                } else {
                    f(i, self.bin(offset + i));
                }
            }
        }
    }

    /// The state used at step `t` of the window.
    pub fn bin(&self, t: usize) -> usize {
        ((self.phase(t) + 1e-9) as usize).min(self.bins - 1)
    }

    /// Where step `t` falls in its cycle, in states: `(t / period) mod 1` times the
    /// number of states.
    fn phase(&self, t: usize) -> f64 {
        // `fract()` by a truncating conversion, the same value for any step count,
        // without the call to `trunc` that a CPU without SSE4.1 makes
        let q = t as f64 / self.period;
        (q - (q as u64) as f64) * self.bins as f64
    }
}

/// How far inside a state a step's position found without a division must be for its
/// floor to be the state ([`Season::for_each_bin`]): fifty times the most it and the
/// division's can differ (2e-8), and far above the 1e-9 that [`Season::bin`] adds.
const PHASE_EDGE: f64 = 1e-6;

/// Which model of the family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EtsSpec {
    /// The trend component.
    pub trend: Trend,
    /// The season, or `None`.
    pub season: Option<Season>,
}

impl EtsSpec {
    /// The conventional name, e.g. `ets(A,Ad,A)`.
    pub fn name(&self) -> String {
        let t = match self.trend {
            Trend::None => "N",
            Trend::Additive => "A",
            Trend::Damped => "Ad",
        };
        let s = if self.season.is_some() { "A" } else { "N" };
        format!("ets(A,{t},{s})")
    }

    fn dims(&self) -> usize {
        1 + usize::from(self.trend != Trend::None)
            + usize::from(self.season.is_some())
            + usize::from(self.trend == Trend::Damped)
    }

    /// Estimated quantities: smoothing parameters, initial states and the variance.
    fn parameter_count(&self) -> usize {
        let states =
            1 + usize::from(self.trend != Trend::None) + self.season.map_or(0, |s| s.bins() - 1);
        self.dims() + states + 1
    }
}

/// Smoothing parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Params {
    alpha: f64,
    beta: f64,
    gamma: f64,
    phi: f64,
}

/// State at some time: level, slope and the seasonal values by phase bin.
#[derive(Debug, Clone, PartialEq)]
struct State {
    level: f64,
    slope: f64,
    season: Vec<f64>,
}

/// A model with its fitted smoothing parameters, to be run over any window: the
/// validated candidates fit once and run from each origin, so a run over the whole
/// training data (an [`EtsFit`]) would go unread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EtsModel {
    /// The model.
    pub spec: EtsSpec,
    params: Params,
}

/// A model run over its data, ready to forecast from the end of it.
#[derive(Debug, Clone, PartialEq)]
pub struct EtsFit {
    /// The model and its parameters.
    pub model: EtsModel,
    end: State,
    /// Window index of the step after the data.
    next_step: usize,
    /// Sum of squared one-step errors.
    pub sse: f64,
    /// Points fitted.
    pub n: usize,
    /// AICc of the fit.
    pub aicc: f64,
}

fn logistic(u: f64) -> f64 {
    1.0 / (1.0 + (-u).exp())
}

fn params_from(spec: &EtsSpec, u: &[f64]) -> Params {
    let mut it = u.iter().copied();
    let alpha = 1e-4 + (1.0 - 2e-4) * logistic(it.next().unwrap_or(0.0));
    let beta = if spec.trend != Trend::None {
        0.999 * alpha * logistic(it.next().unwrap_or(0.0))
    } else {
        0.0
    };
    let gamma = if spec.season.is_some() {
        0.999 * (1.0 - alpha) * logistic(it.next().unwrap_or(0.0))
    } else {
        0.0
    };
    let phi = match spec.trend {
        Trend::Damped => 0.8 + 0.18 * logistic(it.next().unwrap_or(0.0)),
        _ => 1.0,
    };
    Params {
        alpha,
        beta,
        gamma,
        phi,
    }
}

/// The free variables of `spec` nearest `p` (the inverse of [`params_from`]; a
/// parameter `p`'s model lacks starts as [`start_point`] would).
fn warm_point(spec: &EtsSpec, p: &Params) -> Vec<f64> {
    let logit = |v: f64| {
        let v = v.clamp(1e-6, 1.0 - 1e-6);
        (v / (1.0 - v)).ln()
    };
    let alpha = p.alpha.clamp(1e-4, 1.0 - 1e-4);
    let mut u = vec![logit((alpha - 1e-4) / (1.0 - 2e-4))];
    if spec.trend != Trend::None {
        let share = if p.beta > 0.0 {
            p.beta / (0.999 * alpha)
        } else {
            0.05
        };
        u.push(logit(share));
    }
    if spec.season.is_some() {
        let share = if p.gamma > 0.0 {
            p.gamma / (0.999 * (1.0 - alpha))
        } else {
            0.02
        };
        u.push(logit(share));
    }
    if spec.trend == Trend::Damped {
        let phi = if p.phi < 1.0 { p.phi } else { 0.97 };
        u.push(logit((phi - 0.8) / 0.18));
    }
    u
}

/// Free-variable start with α = `alpha`, β/α 0.05, γ/(1-α) 0.02, φ ≈ 0.93.
fn start_point(spec: &EtsSpec, alpha: f64) -> Vec<f64> {
    let logit = |p: f64| (p / (1.0 - p)).ln();
    let mut u = vec![logit(alpha)];
    if spec.trend != Trend::None {
        u.push(logit(0.05));
    }
    if spec.season.is_some() {
        u.push(logit(0.02));
    }
    if spec.trend == Trend::Damped {
        u.push(1.0);
    }
    u
}

/// Levels of α tried before the simplex starts: smooth, moderate, nearly a random walk.
const ALPHA_STARTS: [f64; 3] = [0.02, 0.2, 0.8];

/// A classical decomposition of the fitting window: a least-squares line and the
/// mean detrended value at each phase of the season (centred on zero).
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    intercept: f64,
    slope: f64,
    profile: Vec<f64>,
    /// The seasonal state of each step of the window (none without a season): found
    /// once, read by every evaluation of the optimiser and by each run.
    bins: Vec<u32>,
}

impl Decomposition {
    /// The decomposition of `y` with `season` (none: the line only).
    pub fn of(y: &[f64], season: Option<Season>) -> Decomposition {
        let (intercept, slope) = super::linear::least_squares_line(y);
        let bins = season.map_or_else(Vec::new, |s| s.bins_of(y.len()));
        let profile = match season {
            Some(season) => {
                let m = season.bins();
                let (mut sum, mut count) = (vec![0.0; m], vec![0usize; m]);
                for (i, (v, &b)) in y.iter().zip(&bins).enumerate() {
                    let b = b as usize;
                    sum[b] += v - intercept - slope * i as f64;
                    count[b] += 1;
                }
                let mut s: Vec<f64> = sum
                    .iter()
                    .zip(&count)
                    .map(|(s, c)| s / (*c).max(1) as f64)
                    .collect();
                let mean = s.iter().sum::<f64>() / m as f64;
                s.iter_mut().for_each(|v| *v -= mean);
                s
            }
            None => Vec::new(),
        };
        Decomposition {
            intercept,
            slope,
            profile,
            bins,
        }
    }

    /// The seasonal states of steps `from..n` of a window of `n` steps with `season`:
    /// this decomposition's own where it is of such a window, as it is for every
    /// caller here; found again otherwise.
    fn bins_from(&self, season: Option<Season>, n: usize, from: usize) -> Option<Cow<'_, [u32]>> {
        let season = season?;
        Some(if self.bins.len() == n {
            Cow::Borrowed(&self.bins[from..])
        } else {
            Cow::Owned(season.bins_of(n).split_off(from))
        })
    }

    /// The state just before step `t` of the window, as the decomposition sees it.
    fn state_before(&self, t: usize, trend: Trend) -> State {
        let slope = if trend == Trend::None {
            0.0
        } else {
            self.slope
        };
        State {
            level: self.intercept + self.slope * (t as f64 - 1.0),
            slope,
            season: self.profile.clone(),
        }
    }
}

/// Runs the recursions over `y`, each value with its seasonal state in `bins` (`None`
/// without a season); returns the SSE (infinite if it diverges).
fn filter(y: &[f64], bins: Option<&[u32]>, p: &Params, state: &mut State) -> f64 {
    let step = Step::new(p);
    let (mut l, mut b) = (state.level, state.slope);
    let mut sse = 0.0;
    match bins {
        None => {
            for &v in y {
                let e = step.advance(&mut l, &mut b, v);
                sse += e * e;
            }
        }
        Some(bins) => {
            let states = &mut state.season[..];
            for (v, &k) in y.iter().zip(bins) {
                let k = k as usize;
                let s = states[k];
                let e = step.advance(&mut l, &mut b, v - s);
                sse += e * e;
                states[k] = s + p.gamma * e;
            }
        }
    }
    state.level = l;
    state.slope = b;
    if sse.is_finite() {
        sse
    } else {
        f64::INFINITY
    }
}

/// One step of the level and slope recursions, its coefficients worked out once.
///
/// Written as the error, `l + φb + αe` with `e = y - s - l - φb` made each new level
/// wait on the old one through a product and five sums; as `(1 - α)l + (1 - α)φb +
/// α(y - s)`, and the slope `φb + βe` as `(1 - β)φb - βl + β(y - s)`, through a product
/// and two (`y - s` does not depend on them). The optimiser runs this loop for most of
/// a fit's time.
struct Step {
    alpha: f64,
    beta: f64,
    phi: f64,
    /// 1 - α.
    keep_level: f64,
    /// (1 - α)φ.
    keep_level_slope: f64,
    /// (1 - β)φ.
    keep_slope: f64,
}

impl Step {
    fn new(p: &Params) -> Self {
        Step {
            alpha: p.alpha,
            beta: p.beta,
            phi: p.phi,
            keep_level: 1.0 - p.alpha,
            keep_level_slope: (1.0 - p.alpha) * p.phi,
            keep_slope: (1.0 - p.beta) * p.phi,
        }
    }

    /// Moves level `l` and slope `b` past `deseasoned` (the value less its seasonal
    /// state) and returns the one-step error.
    fn advance(&self, l: &mut f64, b: &mut f64, deseasoned: f64) -> f64 {
        let e = deseasoned - (*l + self.phi * *b);
        let level = self.keep_level * *l + (self.alpha * deseasoned + self.keep_level_slope * *b);
        *b = self.keep_slope * *b + (self.beta * deseasoned - self.beta * *l);
        *l = level;
        e
    }
}

/// The corrected Akaike information criterion of a Gaussian fit with `k` estimates.
pub fn aicc(sse: f64, n: usize, k: usize) -> f64 {
    let (nf, kf) = (n as f64, k as f64);
    if n <= k + 1 || sse.is_nan() || sse <= 0.0 {
        return if sse == 0.0 && n > k + 1 {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    nf * (sse / nf).ln() + 2.0 * kf + 2.0 * kf * (kf + 1.0) / (nf - kf - 1.0)
}

/// Steps the optimiser's objective runs over (the most recent of the window): three
/// weeks of hourly data (a weekly season's three cycles are 504 steps), eight and a
/// half hours at one minute. 768 cost a third more per evaluation; its parameters
/// forecast the evaluation set's classes within 0.002 MASE of these and the H100
/// recordings identically (`docs/validation/analyzer/forecast-eval-session15.md`).
pub const OPTIMISE_POINTS: usize = 512;

/// Fits `spec` to `y` with at most `max_evals` SSE evaluations. The objective runs over
/// the last [`OPTIMISE_POINTS`] steps from the decomposition's state there, which
/// bounds the cost whatever the window and season; the chosen parameters are then run
/// over the whole window for the final states, SSE and AICc.
pub fn fit(y: &[f64], spec: EtsSpec, max_evals: usize) -> EtsFit {
    let decomposition = Decomposition::of(y, spec.season);
    optimise(y, spec, max_evals, &decomposition, None).run_from(y, &decomposition)
}

/// Simplex steps from a warm start: a quarter of those from the cold starts.
const WARM_SCALE: f64 = 0.25;

/// [`fit`]'s parameters, without the run over `y`: from `decomposition`, `y`'s with
/// `spec`'s season (models that differ only in trend share it), and where `near` is
/// given from its parameters (a model `spec` nests or extends: the damped trend from
/// the additive one): the optimum is close, so the three starts and most of the search
/// are not needed.
pub fn optimise(
    y: &[f64],
    spec: EtsSpec,
    max_evals: usize,
    decomposition: &Decomposition,
    near: Option<&EtsModel>,
) -> EtsModel {
    let near = near.map(|m| &m.params);
    let start = y.len().saturating_sub(OPTIMISE_POINTS);
    let opt_init = decomposition.state_before(start, spec.trend);
    let bins = decomposition.bins_from(spec.season, y.len(), start);
    let mut objective = |u: &[f64]| {
        let mut st = opt_init.clone();
        filter(
            &y[start..],
            bins.as_deref(),
            &params_from(&spec, u),
            &mut st,
        )
    };
    let (u, _) = match near {
        Some(p) => nelder_mead(&mut objective, &warm_point(&spec, p), WARM_SCALE, max_evals),
        None => {
            let (value, start_u) = ALPHA_STARTS
                .iter()
                .map(|a| start_point(&spec, *a))
                .map(|u| (objective(&u), u))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .expect("at least one start");
            let budget = max_evals.saturating_sub(ALPHA_STARTS.len());
            nelder_mead_valued(&mut objective, (&start_u, value), 1.0, budget)
        }
    };
    EtsModel {
        spec,
        params: params_from(&spec, &u),
    }
}

impl EtsModel {
    /// The model run over `y` (initial states from `y`'s decomposition): forecasting
    /// from any origin without optimising again.
    pub fn run(&self, y: &[f64]) -> EtsFit {
        self.run_from(y, &Decomposition::of(y, self.spec.season))
    }

    /// [`EtsModel::run`] from `start`, the decomposition of `y` with this model's season
    /// (shared by models that differ only in trend).
    pub fn run_from(&self, y: &[f64], start: &Decomposition) -> EtsFit {
        let mut end = start.state_before(0, self.spec.trend);
        let bins = start.bins_from(self.spec.season, y.len(), 0);
        let sse = filter(y, bins.as_deref(), &self.params, &mut end);
        EtsFit {
            model: *self,
            end,
            next_step: y.len(),
            sse,
            n: y.len(),
            aicc: aicc(sse, y.len(), self.spec.parameter_count()),
        }
    }

    /// The level smoothing parameter α.
    pub fn alpha(&self) -> f64 {
        self.params.alpha
    }
}

impl EtsFit {
    /// Point forecasts and prediction variances for steps 1..=h after the data.
    pub fn forecast(&self, h: usize) -> (Vec<f64>, Vec<f64>) {
        let (p, spec) = (&self.model.params, &self.model.spec);
        let sigma2 = self.sse / self.n as f64;
        let m = spec.season.map_or(0, |s| s.bins());
        let mut point = Vec::with_capacity(h);
        let mut var = Vec::with_capacity(h);
        let (mut damp_sum, mut phi_pow) = (0.0, 1.0);
        let mut acc = 0.0;
        for j in 1..=h {
            phi_pow *= p.phi;
            damp_sum += phi_pow;
            let s = spec.season.map_or(0.0, |season| {
                self.end.season[season.bin(self.next_step + j - 1)]
            });
            point.push(self.end.level + damp_sum * self.end.slope + s);
            var.push(sigma2 * (1.0 + acc));
            let seasonal_hit = m > 0 && j % m == 0;
            let c = p.alpha + p.beta * damp_sum + if seasonal_hit { p.gamma } else { 0.0 };
            acc += c * c;
        }
        (point, var)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_without_division_gives_every_step_the_state_of_its_own_division() {
        // periods near a whole step, long and short ones, and one that puts steps on
        // a state's edge (23.5: every other cycle starts exactly between two states)
        for period in [
            2.5,
            23.5,
            23.7,
            37.3,
            1439.7,
            10_079.9,
            24.000_001,
            3.000_000_1,
        ] {
            let season = Season::new(period).unwrap();
            for offset in [0, 1, 1023, 1_000_003] {
                let mut seen = Vec::new();
                season.for_each_bin(offset, 5_000, |i, k| seen.push((i, k)));
                let own: Vec<(usize, usize)> =
                    (0..5_000).map(|i| (i, season.bin(offset + i))).collect();
                assert_eq!(seen, own, "period {period}, offset {offset}");
            }
        }
    }

    #[test]
    fn the_rearranged_recursions_are_the_error_forms() {
        // the textbook updates, level and slope moved by the one-step error
        let reference = |y: &[f64], bins: &[u32], p: &Params, state: &mut State| {
            let (mut l, mut b, mut sse) = (state.level, state.slope, 0.0);
            for (v, &k) in y.iter().zip(bins) {
                let s = state.season[k as usize];
                let e = v - (l + p.phi * b + s);
                sse += e * e;
                l += p.phi * b + p.alpha * e;
                b = p.phi * b + p.beta * e;
                state.season[k as usize] = s + p.gamma * e;
            }
            (state.level, state.slope) = (l, b);
            sse
        };
        let y: Vec<f64> = (0..600)
            .map(|t| {
                50.0 + 0.1 * t as f64 + 9.0 * (t as f64 * 0.26).sin() + ((t * 7919) % 17) as f64
            })
            .collect();
        let bins: Vec<u32> = (0..600).map(|t| (t % 24) as u32).collect();
        let start = State {
            level: 48.0,
            slope: 0.2,
            season: (0..24).map(|k| k as f64 - 12.0).collect(),
        };
        for (alpha, beta, gamma, phi) in [
            (0.3, 0.05, 0.1, 0.95),
            (0.9, 0.5, 0.05, 0.8),
            (0.01, 0.0, 0.6, 0.0),
        ] {
            let p = Params {
                alpha,
                beta,
                gamma,
                phi,
            };
            let (mut ours, mut theirs) = (start.clone(), start.clone());
            let sse = filter(&y, Some(&bins), &p, &mut ours);
            let want = reference(&y, &bins, &p, &mut theirs);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(close(sse, want), "{p:?}: sse {sse} against {want}");
            assert!(
                close(ours.level, theirs.level) && close(ours.slope, theirs.slope),
                "{p:?}"
            );
            assert!(
                ours.season
                    .iter()
                    .zip(&theirs.season)
                    .all(|(a, b)| close(*a, *b)),
                "{p:?}"
            );
        }
    }

    #[test]
    fn the_states_kept_from_a_longer_window_are_the_shorter_windows_own() {
        // windows short and long, seasons whole and fractional, more seasons than are
        // kept (each evicted and found again), and one window too long to keep
        let seasons: Vec<Season> = [24.0, 37.3, 1440.0, 167.9, 12.5, 60.0]
            .iter()
            .map(|&p| Season::new(p).unwrap())
            .collect();
        for n in [100, 5000, 2047, 3000, 1, 0, 9000, 1025] {
            for s in &seasons {
                let each: Vec<u32> = (0..n).map(|t| s.bin(t) as u32).collect();
                assert_eq!(s.bins_of(n), each, "period {}, {n} steps", s.period());
            }
        }
        let long = CACHED_STEPS + 3;
        assert_eq!(seasons[1].bins_of(long), seasons[1].bins_found(long));
        assert_eq!(
            seasons[1].bins_of(10)[..],
            seasons[1].bins_found(long)[..10]
        );
    }

    #[test]
    fn every_seasonal_state_is_the_one_the_forecast_reads() {
        // γ = 1 and a fixed level of 0: each state becomes the last value seen in its
        // bin, so after a few cycles the states are the cycle, bin 0 included (it was
        // skipped where an accumulated phase fell short of 1 at the wrap), for a whole
        // number of steps and for a fractional period, from any offset
        let p = Params {
            alpha: 0.0,
            beta: 0.0,
            gamma: 1.0,
            phi: 1.0,
        };
        for (period, offset) in [(24.0, 0), (24.0, 7), (168.0, 1000), (23.5, 3)] {
            let season = Season::new(period).unwrap();
            let m = season.bins();
            let y: Vec<f64> = (0..4 * m)
                .map(|t| 1.0 + season.bin(offset + t) as f64)
                .collect();
            let mut state = State {
                level: 0.0,
                slope: 0.0,
                season: vec![0.0; m],
            };
            let bins: Vec<u32> = (0..y.len())
                .map(|t| season.bin(offset + t) as u32)
                .collect();
            filter(&y, Some(&bins), &p, &mut state);
            let cycle: Vec<f64> = (0..m).map(|k| 1.0 + k as f64).collect();
            assert_eq!(state.season, cycle, "period {period}, offset {offset}");
        }
    }

    #[test]
    fn a_shared_decomposition_reruns_exactly_as_a_fresh_one() {
        // what the three trends share (candidates::EtsStarts) must change no digit
        let season = Season::new(23.7);
        let y: Vec<f64> = (0..900)
            .map(|t| {
                5.0 + 0.01 * t as f64 + (t as f64 * 0.265).sin() + 0.1 * ((t * 7919) % 13) as f64
            })
            .collect();
        let spec = |trend| EtsSpec { trend, season };
        let train = &y[..700];
        let model = fit(train, spec(Trend::Damped), 30).model;
        let window = &y[100..850];
        let shared = Decomposition::of(window, season);
        assert_eq!(model.run(window), model.run_from(window, &shared));
        let own = Decomposition::of(train, season);
        let additive = optimise(train, spec(Trend::Additive), 15, &own, Some(&model));
        let fresh = Decomposition::of(train, season);
        let cold = optimise(train, additive.spec, 15, &fresh, Some(&model));
        assert_eq!(
            additive, cold,
            "a shared decomposition of the training data is its own"
        );
    }

    #[test]
    fn a_warm_start_recovers_the_parameters_it_starts_from() {
        let spec = EtsSpec {
            trend: Trend::Damped,
            season: Season::new(24.0),
        };
        let p = params_from(&spec, &[0.3, -1.2, 0.7, 0.4]);
        let q = params_from(&spec, &warm_point(&spec, &p));
        for (a, b) in [
            (p.alpha, q.alpha),
            (p.beta, q.beta),
            (p.gamma, q.gamma),
            (p.phi, q.phi),
        ] {
            assert!((a - b).abs() < 1e-9, "{p:?} against {q:?}");
        }
        // from an undamped trend, φ starts below 1 (where the damped model can be)
        let undamped = params_from(
            &EtsSpec {
                trend: Trend::Additive,
                season: None,
            },
            &[0.0, 0.0],
        );
        let damped = EtsSpec {
            trend: Trend::Damped,
            season: None,
        };
        let phi = params_from(&damped, &warm_point(&damped, &undamped)).phi;
        assert!((phi - 0.97).abs() < 1e-9, "{phi}");
    }

    #[test]
    fn a_clean_season_with_trend_is_extended() {
        let m = 12;
        let f = |i: usize| {
            10.0 + 0.1 * i as f64 + (2.0 * std::f64::consts::PI * i as f64 / m as f64).sin()
        };
        let y: Vec<f64> = (0..240).map(f).collect();
        let spec = EtsSpec {
            trend: Trend::Additive,
            season: Season::new(m as f64),
        };
        let fit = fit(&y, spec, 200);
        let (point, var) = fit.forecast(24);
        for (j, p) in point.iter().enumerate() {
            assert!(
                (p - f(240 + j)).abs() < 0.05,
                "step {j}: {p} vs {}",
                f(240 + j)
            );
        }
        assert!(var[23] >= var[0]);
        assert_eq!(spec.name(), "ets(A,A,A)");
    }

    #[test]
    fn variance_grows_with_the_horizon_for_a_random_walk_like_fit() {
        let y: Vec<f64> = (0..200)
            .map(|i| ((i * 7919) % 13) as f64 + i as f64 * 0.0)
            .collect();
        let fit = fit(
            &y,
            EtsSpec {
                trend: Trend::None,
                season: None,
            },
            100,
        );
        let (_, var) = fit.forecast(10);
        assert!(var.windows(2).all(|w| w[1] >= w[0]));
    }
}
