//! A comb over the values: the period of short pulses too weak to stand out one by one.
//!
//! Six dips of 3 to 4 standard deviations of the noise, a step wide, are too weak for a
//! train of events (each must stand [`super::events::EVENT_Z`] out) and spread their
//! power over every harmonic; summed along a comb of six teeth one period apart they
//! stand 7 to 10 standard deviations out, where white noise's tallest comb stays near
//! 5. The sum runs over the series' robust z-scores after a running median has taken
//! out what is slower than a pulse, clipped so one outlier cannot carry a comb, for
//! pulses one to [`MAX_WIDTH`] steps wide, and periods that fit 6 to 12 times (more
//! cycles leave enough harmonics to the spectrum). A series that wanders (AR(1), a
//! random walk) lines up its slow swings on some comb: such series, with a lag-1
//! autocorrelation of [`MAX_LAG1`] or more, are left alone. Bursts at random times
//! fill a few teeth of some comb: a comb with more than a few values beyond the clip,
//! on its side, off its teeth is none (outliers of the other side say nothing against
//! a train of dips).

use statrs::distribution::{ContinuousCDF, Normal};

use super::acf::about_mean;
use super::prepare::{median_in_place, running_median};

/// Least comb sum, in standard deviations of the z-scores' sum. In a prototype of this
/// search (a numpy scratch script, not committed; without the rule on values off the
/// comb) over 900 aperiodic series of the impulsive bench's development seeds (white
/// noise, trends, steps, single bursts, AR(1), random walks; 50 to 1,600 values), none
/// under the lag-1 limit reached it; 7.0 let two through.
pub const COMB_Z: f64 = 7.5;

/// Series whose lag-1 autocorrelation is at least this are not searched: their slow
/// swings make combs as tall as pulses do.
pub const MAX_LAG1: f64 = 0.5;

/// Longest series searched: the search sums about 1.4·n² values per pulse width, 1.5 ms
/// for 256 values (2,000 series of white noise: 0.1 -> 3.0 s of CPU). 256 values hold
/// six cycles of periods up to 42 steps, most of the short pulses the spectrum misses.
pub const MAX_VALUES: usize = 256;

/// Widest pulse searched, in steps.
pub const MAX_WIDTH: usize = 3;

/// z-scores are clipped here, so no single value carries a comb of six.
const CLIP: f64 = 4.0;

/// Fewest teeth of a comb, and the most cycles searched.
const MIN_TEETH: usize = 6;
const MAX_CYCLES: f64 = 12.0;

/// A comb that found a period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comb {
    /// The period in steps.
    pub period: f64,
    /// The comb's sum, in standard deviations (dips count as high as spikes).
    pub z: f64,
    /// Combs searched, both signs and every width.
    pub searched: usize,
}

impl Comb {
    /// About how often a search as wide finds a comb as tall in noise: the normal tail
    /// beyond `z`, times the combs searched. A rough figure, not a calibrated one: in
    /// the prototype, white noise's tallest comb (series of 50 to 1,600 values) had a
    /// median of 4.8, where this predicts about 4.4 for a search of 40,000 combs.
    pub fn p_value(&self) -> f64 {
        let tail = Normal::new(0.0, 1.0).map_or(0.0, |d| d.sf(self.z));
        (tail * self.searched as f64).min(1.0)
    }
}

/// The tallest comb in `y` (detrended, not clipped) with a period in
/// `min_period..=max_period` steps, when it stands [`COMB_Z`] out.
pub fn find(y: &[f64], min_period: f64, max_period: f64) -> Option<Comb> {
    let n = y.len();
    let wanders = || about_mean(y, 1) >= MAX_LAG1;
    if !(2 * MIN_TEETH..=MAX_VALUES).contains(&n) || wanders() {
        return None;
    }
    let shortest = (n as f64 / MAX_CYCLES).max(min_period).max(3.0);
    let longest = (n as f64 / MIN_TEETH as f64).min(max_period);
    if shortest > longest {
        return None;
    }
    let mut best: Option<Comb> = None;
    let mut searched = 0;
    // the window is the same for every width once half the shortest period exceeds it
    let mut single: Option<(usize, Vec<f64>)> = None;
    for width in 1..=MAX_WIDTH {
        let window = ((shortest / 2.0) as usize).max(2 * width + 3) | 1;
        if single.as_ref().is_none_or(|(w, _)| *w != window) {
            single = Some((window, residual_scores(y, window)?));
        }
        let (_, z1) = single.as_ref()?;
        let summed;
        let z = if width == 1 {
            z1
        } else {
            summed = summed_scores(z1, width)?;
            &summed
        };
        let found = tallest(z, shortest, longest, width);
        searched += found.searched;
        if best.is_none_or(|b| found.z > b.z) {
            best = Some(found);
        }
    }
    best.map(|b| Comb { searched, ..b })
        .filter(|b| b.z >= COMB_Z)
}

/// Clipped robust z-scores of what a running median of `window` values leaves;
/// `None` where the values do not vary.
fn residual_scores(y: &[f64], window: usize) -> Option<Vec<f64>> {
    let rest: Vec<f64> = y
        .iter()
        .zip(running_median(y, window))
        .map(|(v, m)| v - m)
        .collect();
    clipped_scores(&rest)
}

/// `z` summed over `width` neighbours and scored again (neighbours of a wandering
/// series move together).
fn summed_scores(z: &[f64], width: usize) -> Option<Vec<f64>> {
    let summed: Vec<f64> = (0..z.len())
        .map(|i| {
            z[i.saturating_sub(width / 2)..(i + width - width / 2).min(z.len())]
                .iter()
                .sum()
        })
        .collect();
    clipped_scores(&summed)
}

/// Robust z-scores (median, MAD × 1.4826) clipped to ±[`CLIP`]; `None` without spread.
fn clipped_scores(x: &[f64]) -> Option<Vec<f64>> {
    let mut buf = x.to_vec();
    let level = median_in_place(&mut buf);
    for v in buf.iter_mut() {
        *v = (*v - level).abs();
    }
    let spread = median_in_place(&mut buf) * 1.4826;
    (spread > 0.0 && spread.is_finite()).then(|| {
        x.iter()
            .map(|v| ((v - level) / spread).clamp(-CLIP, CLIP))
            .collect()
    })
}

/// The comb of the largest |sum| / √teeth over periods `shortest..=longest` and every
/// whole phase, periods half a step apart at the last tooth; no comb (a score of 0)
/// when the values beyond the clip on the comb's side (below it for dips) lie mostly
/// off it. Bursts at random times, each beyond the clip, fill a few teeth of some comb
/// by chance, but most of them lie elsewhere; a train's pulses lie on its teeth.
fn tallest(z: &[f64], shortest: f64, longest: f64, width: usize) -> Comb {
    let n = z.len();
    let teeth_of = |phase: usize, period: f64| {
        (0..)
            .map(move |k| (phase as f64 + k as f64 * period).round() as usize)
            .take_while(move |&at| at < n)
    };
    let (mut best, mut best_phase, mut searched, mut sign) = (0.0, 0, 0, 1.0);
    let mut best_period = shortest;
    let mut period = shortest;
    while period <= longest {
        for phase in 0..period.ceil() as usize {
            let (mut sum, mut teeth) = (0.0, 0usize);
            for at in teeth_of(phase, period) {
                sum += z[at];
                teeth += 1;
            }
            if teeth >= MIN_TEETH {
                searched += 2;
                let score = f64::abs(sum) / (teeth as f64).sqrt();
                if score > best {
                    (best, best_phase, best_period) = (score, phase, period);
                    sign = sum.signum();
                }
            }
        }
        period += 0.5 * period / n as f64;
    }
    let mut on = vec![false; n];
    let mut teeth = 0;
    for at in teeth_of(best_phase, best_period) {
        teeth += 1;
        on[at.saturating_sub(width)..(at + width + 1).min(n)].fill(true);
    }
    let off = (0..n).filter(|&i| !on[i] && sign * z[i] >= CLIP).count();
    let score = if off > (teeth / 4).max(1) { 0.0 } else { best };
    Comb {
        period: best_period,
        z: score,
        searched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| (0..12).map(|_| rng.gen::<f64>()).sum::<f64>() - 6.0)
            .collect()
    }

    const DIPS_PERIOD: f64 = 10.7;

    /// Six dips of 4 noise deviations, a step wide, every [`DIPS_PERIOD`] steps.
    fn six_weak_dips() -> Vec<f64> {
        let mut y = noise(66, 3);
        for k in 0..6 {
            y[(2.0 + k as f64 * DIPS_PERIOD).round() as usize] -= 4.0;
        }
        y
    }

    fn assert_finds_the_dips(y: &[f64]) {
        let comb = find(y, 2.5, 11.0).expect("a comb");
        assert!(
            (comb.period - DIPS_PERIOD).abs() < 0.02 * DIPS_PERIOD,
            "{comb:?}"
        );
    }

    #[test]
    fn six_weak_dips_a_step_wide_make_a_comb() {
        assert_finds_the_dips(&six_weak_dips());
    }

    #[test]
    fn spikes_off_a_comb_of_dips_do_not_hide_it() {
        let mut y = six_weak_dips();
        for at in [7, 29, 51] {
            y[at] += 20.0;
        }
        assert_finds_the_dips(&y);
        for at in [7, 29] {
            y[at] -= 40.0;
        }
        assert_eq!(
            find(&y, 2.5, 11.0),
            None,
            "dips off the comb count against it"
        );
    }

    #[test]
    fn noise_and_wandering_series_make_none() {
        for seed in 0..40 {
            assert_eq!(
                find(&noise(200, seed), 2.5, 33.0),
                None,
                "white noise {seed}"
            );
        }
        let mut walk = vec![0.0];
        for v in noise(300, 9) {
            walk.push(walk.last().unwrap() + v);
        }
        assert!(about_mean(&walk, 1) >= MAX_LAG1);
        assert_eq!(find(&walk, 2.5, 50.0), None);
    }
}
