//! Harmonic regression: the period of a short series whose cycle, fitted by least
//! squares, explains more of it than chance would.
//!
//! Six cycles of a few steps are 18 to 60 values. Their periodogram has a bin per
//! cycle over the window, so a cycle's power lands between bins and a pulse's spreads
//! over harmonics that fold back below Nyquist; the autocorrelation read at whole lags
//! misses a cycle of 3.4 steps. A fit in the time domain has neither problem: for each
//! trial period, a line plus the fundamental and its second harmonic (folded or not,
//! they are the cycle's own columns at its own phases) are fitted to the values, and
//! the F-test of that fit against the line alone scores it. The best trial period's
//! p-value is corrected for the independent periods searched (a Fourier frequency
//! each). A series that wanders (AR(1), a random walk) fits some slow cycle better than
//! white noise would: the fit at the best period is judged again on the series less φ
//! times its previous value (Cochrane–Orcutt), φ the lag-1 autocorrelation of what the
//! fit left and then of the series, and must pass every time. That takes the wandering
//! out and keeps a cycle whose residuals are white.
//! `docs/analysis.md` (periodicity, step 5) says how it was chosen.

use statrs::distribution::{ContinuousCDF, FisherSnedecor};

/// Longest series searched: the scan costs about 3n trial periods of a six-column fit
/// each (n² work); past 256 values the cycles are long enough for the spectrum.
const MAX_VALUES: usize = 256;

/// Fewest values searched: below, a fit of six columns has too few degrees of freedom
/// left to judge it.
const MIN_VALUES: usize = 12;

/// Fewest cycles of a trial period in the series.
const MIN_CYCLES: f64 = 6.0;

/// Least share of the second harmonic's fit that the fundamental's must reach. A fit
/// whose fundamental carries nothing is another cycle's: its second harmonic, folded
/// or not, is that cycle's fundamental (a sine of 4.36 steps fits as well at 2.58,
/// whose second harmonic folds onto it, or at 8.72). A pulse's harmonics are as
/// strong as its fundamental; a sawtooth's second is a quarter of it.
const FUNDAMENTAL_SHARE: f64 = 0.25;

/// Largest corrected p-value of a reported fit.
const FIT_P: f64 = 1e-3;

/// Trial periods advance by period / (STEPS_PER_LOBE · n): a fit's peak is about
/// period / n wide (relative), so eight trials per peak.
const STEPS_PER_LOBE: f64 = 8.0;

/// Halvings of the trial step around the best trial period.
const HALVINGS: usize = 6;

/// A fit that found a period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The period in steps.
    pub period: f64,
    /// The F-test's p-value, corrected for the periods searched.
    pub p: f64,
}

/// The period in `min_period..=max_period` steps (and at most n / [`MIN_CYCLES`]) whose
/// fitted cycle explains `y` best, when its corrected p-value is under [`FIT_P`].
pub fn find(y: &[f64], min_period: f64, max_period: f64) -> Option<Fit> {
    let n = y.len();
    let longest = max_period.min(n as f64 / MIN_CYCLES);
    let searchable = (MIN_VALUES..=MAX_VALUES).contains(&n) && min_period > 0.0;
    if !searchable || min_period > longest {
        return None;
    }
    let mut fitter = Fitter::new(n);
    let (period, p) = best_period(&mut fitter, y, min_period, longest);
    let p = wandering(&mut fitter, y, period)
        .into_iter()
        .filter(|phi| *phi > 0.0)
        .fold(p, |p, phi| p.max(fitter.score(y, period, phi).p));
    let trials = (n as f64 * (1.0 / min_period - 1.0 / longest)).max(1.0);
    // 1 − (1 − p)^trials, exact for small p
    let corrected = -(trials * (-p).ln_1p()).exp_m1();
    (corrected < FIT_P).then_some(Fit {
        period,
        p: corrected,
    })
}

/// `period` (in steps) of a comb of pulses in `y` ([`super::comb`]), refined: the
/// best fitted period within [`REFINED_WITHIN`] of it, in a series of fewer than
/// [`REFINED_UNDER`] values. The comb's trial periods are a grid, 0.5/n apart
/// (relative): 2.4% in 21 values.
pub fn refined(y: &[f64], period: f64) -> f64 {
    if !(MIN_VALUES..REFINED_UNDER).contains(&y.len()) {
        return period;
    }
    let (shortest, longest) = (
        period * (1.0 - REFINED_WITHIN),
        period * (1.0 + REFINED_WITHIN),
    );
    match best_period(&mut Fitter::new(y.len()), y, shortest, longest) {
        (fitted, p) if p < 1.0 => fitted,
        _ => period,
    }
}

/// How far (relative) [`refined`] looks: a comb's trial periods are half a step apart
/// at its last tooth, 3% of a cycle of 3.3 steps over six.
const REFINED_WITHIN: f64 = 0.03;

/// [`refined`] looks at series of fewer values than this, where the comb's trial
/// periods are 1% apart or more (half the 2% a period is judged by). Over more, the
/// comb pins a train of pulses a step wide better than two harmonics do: refined, one
/// of spikes every 9.98 steps in 64 values moved from within 2% to 2.1% off (and
/// trains of events, dips every 15.7 and 20.2 steps in 96 and 123 values, 2-3% off).
const REFINED_UNDER: usize = 50;

/// How much of each value's predecessor to take out before the fit is judged again:
/// the lag-1 autocorrelation of what the fit leaves, and of the series itself (what
/// the fit leaves of a wandering series can be whiter than the series, its slow swings
/// fitted as the cycle: AR(1) at 0.5 fitted cycles of 12 and 18 steps in 74 and 119
/// values on the first alone).
fn wandering(fitter: &mut Fitter, y: &[f64], period: f64) -> [f64; 2] {
    [
        fitter.residual_lag1(y, period),
        super::acf::about_mean(y, 1),
    ]
}

/// The trial period in `shortest..=longest` with the smallest p-value whose
/// fundamental carries its share ([`FUNDAMENTAL_SHARE`]), and that p-value (1 when
/// no trial does): a scan of [`STEPS_PER_LOBE`] trials per peak, then the step halved
/// [`HALVINGS`] times around the best.
fn best_period(fitter: &mut Fitter, y: &[f64], shortest: f64, longest: f64) -> (f64, f64) {
    let n = y.len() as f64;
    let mut best = (shortest, 1.0);
    let mut consider = |period: f64, best: &mut (f64, f64)| {
        let score = fitter.score(y, period, 0.0);
        if score.p < best.1 && score.fundamental >= FUNDAMENTAL_SHARE * score.second {
            *best = (period, score.p);
        }
    };
    let mut period = shortest;
    while period <= longest {
        consider(period, &mut best);
        period *= 1.0 + period / (STEPS_PER_LOBE * n);
    }
    let mut step = best.0 * best.0 / (STEPS_PER_LOBE * n);
    for _ in 0..HALVINGS {
        step /= 2.0;
        let at = best.0;
        for trial in [at - step, at + step] {
            if (shortest..=longest).contains(&trial) {
                consider(trial, &mut best);
            }
        }
    }
    best
}

/// Columns of the fit: a constant, a line, and the sine and cosine of the fundamental
/// and of its second harmonic.
const COLUMNS: usize = 6;

/// Columns of the line, the fit the cycle's is tested against.
const LINE: usize = 2;

/// A column left with less than this share of its length, once the earlier ones are
/// taken out, adds nothing (the second harmonic of a cycle of 4 steps is at Nyquist,
/// whose sine is zero at every step).
const DEPENDENT: f64 = 1e-9;

/// A fit at one period.
struct Score {
    /// The F-test's p-value of the cycle against the line alone.
    p: f64,
    /// The sum of squares the fundamental explains beyond the line.
    fundamental: f64,
    /// The sum of squares the second harmonic explains beyond both.
    second: f64,
}

/// Least squares by modified Gram–Schmidt on buffers reused across trial periods.
struct Fitter {
    /// The fit's columns, orthonormalized (a dependent one emptied).
    columns: Vec<Vec<f64>>,
    /// The values fitted (whitened like the columns).
    work: Vec<f64>,
}

impl Fitter {
    fn new(n: usize) -> Self {
        Self {
            columns: vec![vec![0.0; n]; COLUMNS],
            work: vec![0.0; n],
        }
    }

    /// The fit of the cycle of `period` steps to `y` less `phi` times its previous
    /// value (the columns likewise).
    fn score(&mut self, y: &[f64], period: f64, phi: f64) -> Score {
        self.fit(y, period, phi);
        let target = &self.work;
        // Gram–Schmidt keeps the order: the line, then the fundamental, then the second
        // harmonic, each what the earlier columns leave.
        let mut shares = [0.0; 3];
        let mut kept = 0usize;
        for (c, q) in self.columns.iter().enumerate() {
            if !q.is_empty() {
                shares[c / 2] += dot(q, target).powi(2);
                kept += 1;
            }
        }
        let [line, fundamental, second] = shares;
        let rss = dot(target, target) - line - fundamental - second;
        let (d1, d2) = (kept.saturating_sub(LINE), target.len().saturating_sub(kept));
        let p = if d1 == 0 || d2 < 3 || rss <= 0.0 {
            1.0
        } else {
            let f = ((fundamental + second) / d1 as f64) / (rss / d2 as f64);
            FisherSnedecor::new(d1 as f64, d2 as f64).map_or(1.0, |d| d.sf(f.max(0.0)))
        };
        Score {
            p,
            fundamental,
            second,
        }
    }

    /// The lag-1 autocorrelation of what the fit at `period` leaves of `y`.
    fn residual_lag1(&mut self, y: &[f64], period: f64) -> f64 {
        self.fit(y, period, 0.0);
        let rest = &mut self.work;
        for q in self.columns.iter().filter(|q| !q.is_empty()) {
            let c = dot(q, rest);
            rest.iter_mut().zip(q).for_each(|(r, v)| *r -= c * v);
        }
        let var = dot(rest, rest);
        if var <= 0.0 {
            return 0.0;
        }
        dot(&rest[1..], &rest[..rest.len() - 1]) / var
    }

    /// The columns at `period` orthonormalized and `y` in `work`, both less `phi`
    /// times their previous row.
    fn fit(&mut self, y: &[f64], period: f64, phi: f64) {
        self.fill(y.len(), period, phi);
        orthonormalize(&mut self.columns);
        self.work.clear();
        self.work.extend_from_slice(y);
        less_previous(&mut self.work, phi);
    }

    /// The columns at `period`, less `phi` times their previous row.
    fn fill(&mut self, n: usize, period: f64, phi: f64) {
        let w = std::f64::consts::TAU / period;
        let mid = (n as f64 - 1.0) / 2.0;
        for (c, column) in self.columns.iter_mut().enumerate() {
            column.resize(n, 0.0);
            for (i, v) in column.iter_mut().enumerate() {
                let t = i as f64;
                *v = match c {
                    0 => 1.0,
                    1 => (t - mid) / n as f64,
                    2 => (w * t).cos(),
                    3 => (w * t).sin(),
                    4 => (2.0 * w * t).cos(),
                    _ => (2.0 * w * t).sin(),
                };
            }
            less_previous(column, phi);
        }
    }
}

/// `v` less `phi` times its previous value, in place: one row shorter unless `phi` is
/// 0 (the first row has no previous one).
fn less_previous(v: &mut Vec<f64>, phi: f64) {
    if phi != 0.0 {
        for i in (1..v.len()).rev() {
            v[i] -= phi * v[i - 1];
        }
        v.remove(0);
    }
}

/// Modified Gram–Schmidt in place: each column made orthogonal to the earlier ones and
/// of unit length, or emptied when nothing of it is left ([`DEPENDENT`]).
fn orthonormalize(columns: &mut [Vec<f64>]) {
    for c in 0..columns.len() {
        let (done, rest) = columns.split_at_mut(c);
        let column = &mut rest[0];
        let length = dot(column, column);
        for q in done.iter().filter(|q| !q.is_empty()) {
            let d = dot(q, column);
            column.iter_mut().zip(q).for_each(|(v, u)| *v -= d * u);
        }
        let left = dot(column, column);
        if left <= DEPENDENT * length || left == 0.0 {
            column.clear();
        } else {
            let norm = left.sqrt();
            column.iter_mut().for_each(|v| *v /= norm);
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::periodicity::impulsive_tests::{normal, walk};
    use rand_chacha::ChaCha8Rng;

    /// A sine of `period` steps over `cycles` cycles plus noise of `noise` times its
    /// amplitude.
    fn noisy_sine(period: f64, cycles: f64, seed: u64, noise: f64) -> Vec<f64> {
        let n = (period * cycles).ceil() as usize;
        walk(n, seed, |_, i, r| {
            (std::f64::consts::TAU * i as f64 / period + 0.4).sin() + noise * normal(r)
        })
    }

    fn sine(period: f64, cycles: f64, seed: u64) -> Vec<f64> {
        noisy_sine(period, cycles, seed, 1.0 / 3.0)
    }

    #[test]
    fn a_cycle_of_a_few_steps_is_fitted_to_its_period() {
        for (period, seed) in [(3.37, 1), (4.36, 2), (5.81, 3), (7.42, 4)] {
            let y = sine(period, 6.0, seed);
            let fit = find(&y, 2.5, y.len() as f64 / 3.0).expect("a fit");
            assert!(
                (fit.period / period - 1.0).abs() <= 0.02,
                "{period}: fitted {fit:?}"
            );
            assert!(fit.p < FIT_P);
        }
    }

    /// A sine fits as well at a period whose second harmonic is the sine (twice its
    /// period, or 2.58 steps for 4.36, whose harmonic folds onto it). Without the
    /// fundamental's share ([`FUNDAMENTAL_SHARE`]), 4 of these 200 sines were fitted at
    /// 2.50-2.58 steps (and the sine of 3.37 steps above at 2.83); none with it.
    #[test]
    fn a_sine_is_fitted_at_its_own_period_not_where_a_harmonic_lands_on_it() {
        let mut wrong = Vec::new();
        for i in 0..200u64 {
            let period = 3.0 + 5.0 * (i as f64 * 0.618).fract();
            let y = noisy_sine(period, 6.0 + (i % 4) as f64, 200 + i, 0.5);
            if let Some(fit) = find(&y, 2.5, y.len() as f64 / 3.0) {
                let ratio = fit.period / period;
                if (ratio - 0.5).abs() < 0.1 || (ratio - 2.0).abs() < 0.2 {
                    wrong.push((period, fit.period));
                }
            }
        }
        assert!(wrong.is_empty(), "fitted at a fold or a double: {wrong:?}");
    }

    /// Short aperiodic series (20-120 values, 100 of each kind): series that wander
    /// (AR(1), random walks) fit slow cycles better than white noise does, and the fit
    /// is judged again on what is left once each value's share of the previous one is
    /// taken out.
    #[test]
    fn short_aperiodic_series_fit_no_cycle() {
        type Kind = fn(f64, usize, &mut ChaCha8Rng) -> f64;
        let kinds: [(&str, Kind); 6] = [
            ("white noise", |_, _, r| normal(r)),
            ("AR(1) 0.5", |v, _, r| 0.5 * v + normal(r)),
            ("AR(1) 0.95", |v, _, r| 0.95 * v + normal(r)),
            ("random walk", |v, _, r| v + normal(r)),
            ("trend", |_, i, r| 0.05 * i as f64 + normal(r)),
            ("level shifts", |_, i, r| {
                [(7, 2.0), (30, -3.0), (61, 1.5)]
                    .iter()
                    .filter(|(at, _)| i >= *at)
                    .map(|s| s.1)
                    .sum::<f64>()
                    + normal(r)
            }),
        ];
        for (name, next) in kinds {
            let fitted: Vec<(usize, f64)> = (0..100u64)
                .filter_map(|seed| {
                    let y = walk(20 + (seed as usize * 37) % 101, 300 + seed, next);
                    find(&y, 2.5, y.len() as f64 / 3.0).map(|f| (y.len(), f.period))
                })
                .collect();
            assert!(fitted.len() <= 1, "{name}: cycles fitted {fitted:?}");
        }
    }

    /// A comb's period is a point of its grid, up to 3% off for a few cycles of a few
    /// steps; the fit takes it within 1% of the cycle's where two harmonics describe
    /// the cycle (a sine; sharper shapes sampled over a few cycles fit a range of
    /// periods: a sawtooth of 4.81 steps in 29 values, noise-free, fits best at 5.0).
    #[test]
    fn a_combs_period_is_refined_to_the_fitted_cycle() {
        for (period, seed) in [(3.37, 8), (4.81, 9), (6.9, 10)] {
            let y = noisy_sine(period, 6.0, seed, 0.2);
            for off in [0.975, 1.025] {
                let got = refined(&y, off * period);
                assert!(
                    (got / period - 1.0).abs() < 0.01,
                    "{period} from {off}: {got}"
                );
            }
        }
        assert_eq!(
            refined(&[0.0; 30], 4.0),
            4.0,
            "nothing fits: left as it was"
        );
        assert_eq!(refined(&vec![1.0; 300], 4.0), 4.0, "too long to search");
    }

    #[test]
    fn too_short_too_long_or_an_empty_range_is_not_searched() {
        let y = sine(3.37, 3.0, 5);
        assert_eq!(find(&y, 2.5, 100.0), None, "11 values");
        let y = sine(40.0, 7.0, 6);
        assert_eq!(find(&y, 2.5, 100.0), None, "280 values");
        let y = sine(4.0, 10.0, 7);
        assert_eq!(find(&y, 9.0, 8.0), None, "empty range");
        assert_eq!(find(&[0.0; 40], 2.5, 10.0), None, "flat");
    }
}
