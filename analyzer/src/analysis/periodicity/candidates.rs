//! The tests a conditioned series' candidates go through, in order: the periodogram's
//! single peaks, each confirmed on a hill of the autocorrelation; else fundamentals whose
//! harmonics together stand out ([`harmonics`]); else, in the time domain, a train of
//! events, a comb of weak pulses, or a cycle fitted by least squares. The first test
//! that finds a period ends the search.

use super::{
    acf, comb, events, harmonics, multiple, prepare, refine, regression, significance, spectrum,
    Period, PeriodConfig, PeriodOutcome,
};
use acf::HillRule;
use significance::Whitened;
use spectrum::Spectra;

/// The periods of the conditioned series `x` (`y` before its outliers were clipped),
/// from its spectra and their whitened periodogram, or why there is none.
pub(super) fn test(
    y: &[f64],
    x: &[f64],
    spectra: &Spectra,
    whitened: &Whitened,
    step: f64,
    config: &PeriodConfig,
) -> PeriodOutcome {
    let mut found = test_candidates(x, spectra, whitened, step, config);
    if found.periods.is_empty() {
        test_harmonic_sums(x, spectra, whitened, step, config, &mut found);
    }
    if found.periods.is_empty() {
        test_in_time(y, x, spectra, step, config, &mut found);
    }
    finish(found)
}

/// Periodogram peaks examined per series, strongest first.
const MAX_CANDIDATES: usize = 12;

/// What the candidate loop saw, for the outcome and its reason.
struct Found {
    periods: Vec<Period>,
    best_p: f64,
    significant_without_hill: Vec<f64>,
}

/// The periodogram's peaks, strongest first: each significant by the whitened Fisher
/// test and confirmed on a hill of the autocorrelation (or of what the periods already
/// accepted leave unexplained), taken to the multiple it is a harmonic of, and refined.
fn test_candidates(
    x: &[f64],
    spectra: &Spectra,
    w: &Whitened,
    step: f64,
    config: &PeriodConfig,
) -> Found {
    let n = spectra.n as f64;
    let rule = HillRule {
        min_height: config.min_strength,
        min_prominence: config.min_prominence,
    };
    let max_lag = n / config.min_cycles.max(1.0);
    let mut found = Found {
        periods: Vec::new(),
        best_p: 1.0,
        significant_without_hill: Vec::new(),
    };
    // A candidate whose hill the full autocorrelation lacks gets a second chance on the
    // autocorrelation of what the accepted periods leave unexplained: a strong slow
    // cycle otherwise buries the hills of a weaker fast one.
    let mut residual: Option<Vec<f64>> = None;
    let mut residual_acf: Option<Vec<f64>> = None;
    let (mut rest_sum, mut rest_m) = (w.total, w.count());
    for peak in w.strongest_peaks(MAX_CANDIDATES) {
        let p = significance::fisher_p(peak.ratio / rest_sum, rest_m);
        rest_sum -= peak.ratio;
        rest_m -= 1;
        found.best_p = found.best_p.min(p);
        if p > config.alpha {
            break;
        }
        let t0 = spectral_period(&spectra.power, peak.k);
        if near_accepted(&found.periods, t0 * step) {
            continue;
        }
        let half = (1.5 * t0 * t0 / n).max(1.5);
        let usable =
            |h: &acf::Hill| h.lag >= config.shortest_period() && h.lag <= max_lag && h.is_own(t0);
        let hill = acf::confirm(spectra.acf(), t0, half, rule)
            .filter(usable)
            .or_else(|| {
                let r = residual.as_ref()?;
                let tolerance = (0.15 * t0 / n).max(0.003);
                if harmonic_of_accepted(&found.periods, t0 * step, tolerance) {
                    // Removing a cycle whose period is not a whole number of steps
                    // leaves binning residue at its harmonics: no evidence of its own.
                    return None;
                }
                let racf = residual_acf.get_or_insert_with(|| spectrum::autocorrelation(r));
                acf::confirm(racf, t0, half, rule).filter(usable)
            });
        let Some(hill) = hill else {
            found.significant_without_hill.push(t0 * step);
            continue;
        };
        let lifted = lift(x, spectra, w, t0, hill, rule, max_lag);
        let (t0, hill) = (lifted.lag, lifted.hill);
        let harmonics = harmonic_count(w, n / t0).max(lifted.multiple);
        let steps = if lifted.multiple > 1 || (n / t0 < FEW_CYCLES && harmonics > 1) {
            1.0 / refine::harmonic_peak_frequency(x, 1.0 / t0, 0.5 / n, harmonics)
        } else {
            refined_period(x, t0)
        };
        if near_accepted(&found.periods, steps * step) {
            continue;
        }
        prepare::remove_cycle(residual.get_or_insert_with(|| x.to_vec()), steps);
        residual_acf = None;
        found.periods.push(Period {
            period_seconds: steps * step,
            strength: hill.height,
            confidence: (1.0 - p).clamp(0.0, 1.0),
            last_peak_seconds: None,
        });
        if found.periods.len() >= config.max_periods {
            break;
        }
    }
    found
}

/// A confirmed candidate at lag `t0`, or the multiple of it whose hill shows it to be
/// a harmonic ([`multiple::lift`]); the multiples' hills are looked for within half
/// the candidate's lag of them, like its own.
fn lift(
    x: &[f64],
    spectra: &Spectra,
    w: &Whitened,
    t0: f64,
    hill: acf::Hill,
    rule: HillRule,
    max_lag: f64,
) -> multiple::Lifted {
    let n = x.len() as f64;
    multiple::lift(x, w, t0, hill, |lag| {
        let half = (1.5 * lag * lag / n).max(1.5).min(0.5 * t0);
        acf::confirm(spectra.acf(), lag, half, rule).filter(|h| h.lag <= max_lag)
    })
}

/// When no single peak made a period: fundamentals whose harmonics together stand out
/// ([`harmonics`]), each confirmed on the autocorrelation like a single peak. The
/// first confirmed one is reported, at the shortest lag that repeats as strongly (a
/// harmonic sum at half the fundamental also collects every true harmonic).
fn test_harmonic_sums(
    x: &[f64],
    spectra: &Spectra,
    w: &Whitened,
    step: f64,
    config: &PeriodConfig,
    found: &mut Found,
) {
    let n = spectra.n as f64;
    let rule = HillRule {
        min_height: config.min_strength,
        min_prominence: config.min_prominence,
    };
    let max_lag = n / config.min_cycles.max(1.0);
    // A lag under the shortest period searched has no hill of its own, whatever its
    // window reaches: the window of a lag of 2 steps holds the hills of lags nearly
    // twice as long, and halving to it reported periods under 2.5 steps. A lag must
    // also have a hill within half of it: a window of ±1.5 steps, widened to whole
    // lags, reaches the hill of twice a lag under 3.5 steps, and a sine of 5.17 steps
    // was halved twice, to 2.58, on its own hill at 5.17 (a sine of 2.6 steps, whose
    // hill at 3 whole steps is lower than at 5, is still halved to on that one).
    let shortest = config.shortest_period();
    let hill_at = |t: f64| {
        let half = (1.5 * t * t / n).max(1.5);
        let hill = acf::confirm(spectra.acf(), t, half, rule)
            .filter(|h| t >= shortest && h.lag >= shortest && h.lag <= max_lag)?;
        // the narrower window is searched only when the hill found is not the lag's own
        let own = hill.is_own(t)
            || acf::confirm(spectra.acf(), t, half.min(0.5 * t), rule).is_some_and(|h| h.is_own(t));
        own.then_some(hill)
    };
    // Candidates up to a corrected p of 1 (a sum as extreme as the whole search yields
    // about once under noise); those not significant at `alpha` must show the stronger
    // evidence of a series that repeats at several multiples of the lag.
    for c in harmonics::candidates(&spectra.power, w, RELAXED_P.max(config.alpha)) {
        found.best_p = found.best_p.min(c.p);
        let significant = c.p <= config.alpha;
        let Some(hill) = hill_at(n / c.k) else {
            if significant {
                found.significant_without_hill.push(n / c.k * step);
            }
            continue;
        };
        // A sum of two harmonics can pass on the second alone. A fundamental without
        // power of its own is then that harmonic's multiple, and the half is taken
        // wherever it has a hill at all: the octave rule compares hills read at whole
        // lags, where a cycle of a few steps stands higher at twice its period (a sine
        // of 3.38 steps: 0.76 of its height at lag 3, 0.90 at 7). Longer sums are a
        // pulse train's, whose fundamental at low SNR may stand as low.
        let half = n / c.k / 2.0;
        let (t, hill, halved) = (c.harmonics == 2 && w.ratio_near(c.k) < HARMONIC_LEVEL)
            .then(|| hill_at(half))
            .flatten()
            .map_or((n / c.k, hill, 1.0), |h| (half, h, 2.0));
        let (t0, hill, divisor) = acf::shortest_fraction(t, hill, OCTAVE_HEIGHT, hill_at);
        let divisor = divisor * halved;
        // ceil(ceil(s / a) / b) = ceil(s / ab): one division for the whole descent
        let summed = (c.harmonics as f64 / divisor).ceil() as usize;
        if !significant && !acf::repeats(spectra.acf(), &hill, REPEAT_Z, REPEATS) {
            continue;
        }
        let lifted = lift(x, spectra, w, t0, hill, rule, max_lag);
        let (t0, hill) = (lifted.lag, lifted.hill);
        // A fraction of the sum's fundamental is no spectral estimate of its own; one
        // further from its own hill than the refinement reaches (a quarter of a
        // Fourier bin) is refined from the hill: in a few points the sum's leakage
        // lands between lags (a sine of 3 steps in 18 points: summed at 5.14, halved
        // to 2.57, refined to 2.77 beside its hill at 3).
        let t0 = if divisor > 1.0 && hill.is_own(t0) && (1.0 / hill.lag - 1.0 / t0).abs() > 0.25 / n
        {
            hill.lag
        } else {
            t0
        };
        // the candidate's harmonics are every `multiple`-th of the longer period's
        let summed = summed * lifted.multiple;
        let f = refine::harmonic_peak_frequency(x, 1.0 / t0, 0.25 / n, summed);
        found.periods.push(Period {
            period_seconds: step / f,
            strength: hill.height,
            confidence: (1.0 - c.p).clamp(0.0, 1.0),
            last_peak_seconds: None,
        });
        return;
    }
}

/// When neither a peak nor a harmonic sum made a period, tests in the time domain: a
/// regular train of events ([`events`]), else a comb of weak pulses ([`comb`]), in the
/// detrended series `y` (not clipped): the period of short pulses a few cycles long; a
/// comb's is refined by a fit in time to the conditioned series `x`
/// ([`regression::refined`]). Else, where `config` allows it, the cycle that such a
/// fit explains beyond chance ([`regression::find`], on `x`: one outlier would pull a
/// least-squares fit): a cycle of a few steps over a few dozen values.
fn test_in_time(
    y: &[f64],
    x: &[f64],
    spectra: &Spectra,
    step: f64,
    config: &PeriodConfig,
    found: &mut Found,
) {
    let min_period = config.shortest_period();
    let max_period = y.len() as f64 / config.min_cycles.max(1.0);
    let Some((period, p)) = events::find(y, min_period, max_period)
        .map(|train| (train.period, train.p_value()))
        .or_else(|| {
            comb::find(y, min_period, max_period)
                .map(|c| (regression::refined(x, c.period), c.p_value()))
        })
        .or_else(|| {
            config
                .fit_in_time
                .then(|| regression::find(x, min_period, max_period))
                .flatten()
                .map(|fit| (fit.period, fit.p))
        })
    else {
        return;
    };
    // the period falls between two lags: its strength is the higher of their two
    let acf = spectra.acf();
    let at = |lag: f64| acf.get(lag as usize).copied().unwrap_or(0.0);
    found.periods.push(Period {
        period_seconds: period * step,
        strength: at(period.floor()).max(at(period.ceil())).clamp(0.0, 1.0),
        confidence: 1.0 - p,
        last_peak_seconds: None,
    });
}

/// Least whitened ordinate (three backgrounds) of a harmonic a period is refined on
/// ([`harmonic_count`]), and of a harmonic sum's fundamental for it to be a cycle's
/// own.
const HARMONIC_LEVEL: f64 = 3.0;

/// Largest corrected p-value of a harmonic-sum candidate that may still be confirmed,
/// by [`acf::repeats`], when it is not significant at the configured level. Short
/// series of narrow pulses (6 cycles of under 200 points) carry too few harmonics
/// above the noise to pass the corrected test although their autocorrelation repeats.
const RELAXED_P: f64 = 1.0;

/// Autocorrelation hills a relaxed candidate needs, at 1, 2, …, this many times its
/// lag (those within two thirds of the series).
const REPEATS: usize = 3;

/// Least height of each of those hills, in standard errors of white noise's
/// autocorrelation at that lag (1/√(n − lag)): 2.5 kept false positives on the
/// development set's aperiodic kinds near where they were (1.0% against 0.8%).
pub const REPEAT_Z: f64 = 2.5;

/// Below this many cycles a period is refined on its harmonics together: the
/// fundamental alone pins a non-sinusoidal shape to a few percent only.
const FEW_CYCLES: f64 = 12.0;

/// Harmonics of a fundamental at `k` cycles worth refining on: the highest j ≤ 8 whose
/// whitened ordinate near j·k stands [`HARMONIC_LEVEL`] high (1 when none does).
fn harmonic_count(w: &Whitened, k: f64) -> usize {
    (2..=8usize)
        .filter(|&j| w.ratio_at((j as f64 * k).round() as usize) >= HARMONIC_LEVEL)
        .max()
        .unwrap_or(1)
}

/// A lag a whole fraction of a confirmed one replaces it when its autocorrelation
/// hill is at least this share as high: the series repeats there already.
pub const OCTAVE_HEIGHT: f64 = 0.7;

/// Whether `seconds` is within `tolerance` (relative) of an accepted period divided by
/// 2, 3, …. The spectral estimate of a period of T steps out of n is good to about
/// 0.05·T/n, so the caller's tolerance is three times that, and at least 0.3%: a
/// genuine second period rarely falls so close to a harmonic.
fn harmonic_of_accepted(periods: &[Period], seconds: f64, tolerance: f64) -> bool {
    periods.iter().any(|q| {
        let h = (q.period_seconds / seconds).round();
        h >= 2.0 && (q.period_seconds / h - seconds).abs() < tolerance * seconds
    })
}

/// Whether `seconds` is within 3% of a period already accepted.
fn near_accepted(periods: &[Period], seconds: f64) -> bool {
    periods
        .iter()
        .any(|q| (q.period_seconds - seconds).abs() < 0.03 * q.period_seconds)
}

/// The period in steps: the periodogram maximiser near the spectral estimate `t0`.
/// The autocorrelation confirmed that something repeats near `t0`, but with several
/// periods its hills mix (a burst hill can sit closer to `t0` than the slow cycle's
/// own), so the spectrum, which separates them, sets the value.
fn refined_period(x: &[f64], t0: f64) -> f64 {
    let n = x.len() as f64;
    1.0 / refine::peak_frequency(x, 1.0 / t0, 0.5 / n)
}

/// The period (in steps) of Fourier peak k, refined by a parabola through the log
/// power of the zero-padded bins 2k-1, 2k, 2k+1.
fn spectral_period(power: &[f64], k: usize) -> f64 {
    let j = 2 * k;
    let ln = |i: usize| power[i].max(1e-300).ln();
    let (a, b, c) = (ln(j - 1), ln(j), ln((j + 1).min(power.len() - 1)));
    let denom = a - 2.0 * b + c;
    let shift = if denom < 0.0 {
        0.5 * (a - c) / denom
    } else {
        0.0
    };
    let bin = j as f64 + shift.clamp(-1.0, 1.0);
    (power.len() - 1) as f64 * 2.0 / bin
}

fn finish(mut found: Found) -> PeriodOutcome {
    if !found.periods.is_empty() {
        found
            .periods
            .sort_by(|a, b| b.strength.total_cmp(&a.strength));
        return PeriodOutcome::Periodic(found.periods);
    }
    if let Some(t) = found.significant_without_hill.first() {
        return PeriodOutcome::none(format!(
            "aperiodic: the periodogram peak near {t:.1} s is not repeated by the autocorrelation"
        ));
    }
    PeriodOutcome::none(format!(
        "aperiodic: no periodogram peak is significant (smallest p = {:.3})",
        found.best_p
    ))
}
