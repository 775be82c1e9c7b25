//! Several seasons at once (a day and a week; iteration bursts and a day), removed by
//! an MSTL-style decomposition, so that a non-seasonal model can follow the rest.
//!
//! Each season's profile is the mean, at each of its phases, of the series less a
//! moving-average trend and the other seasons' profiles; two passes over the seasons,
//! shortest first, let the profiles settle (a weekly profile first absorbs the daily
//! one, and gives it back on the second pass). The trend is a centred moving average
//! over the longest season, computed from prefix sums: O(n) per pass, far cheaper than
//! LOESS, and it follows level shifts within one cycle.

use std::borrow::Cow;

use super::ets::Season;

/// Passes over the seasons.
const PASSES: usize = 2;

/// The values a decomposition works on: the series itself, whose profile adds to the
/// level, or its logarithms, whose profile is a ratio that scales with the level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// The values as they are.
    Linear,
    /// The natural logarithms of the values plus `shift` (every sum positive).
    Log {
        /// Added before the logarithm: lifts a count that reaches zero.
        shift: f64,
    },
}

impl Scale {
    /// `y` on this scale.
    pub fn of(self, y: &[f64]) -> Cow<'_, [f64]> {
        match self {
            Scale::Linear => Cow::Borrowed(y),
            Scale::Log { shift } => Cow::Owned(y.iter().map(|v| (v + shift).ln()).collect()),
        }
    }
}

/// Additive seasonal profiles of a window of data.
#[derive(Debug, Clone, PartialEq)]
pub struct Seasonals {
    seasons: Vec<(Season, Vec<f64>)>,
    len: usize,
    /// Each season's phase bin at steps `0..len`, as the profiles were estimated with:
    /// [`Seasonals::adjust`] reads them instead of dividing once per step and season.
    bins: Vec<Vec<u32>>,
}

impl Seasonals {
    /// Decomposes `y` with `seasons` (each must fit twice in `y`).
    pub fn of(y: &[f64], seasons: &[Season]) -> Seasonals {
        Seasonals::of_growing(y, seasons, &mut Growing::default())
    }

    /// [`Seasonals::of`], continuing `growing`'s sums where `y` extends the values they
    /// were taken over (a later origin's prefix of the same part of a series): with one
    /// season the profile's sums take the same values in the same order either way, so
    /// only the new steps are read.
    pub fn of_growing(y: &[f64], seasons: &[Season], growing: &mut Growing) -> Seasonals {
        let n = y.len();
        let mut sorted = seasons.to_vec();
        sorted.sort_by(|a, b| a.period().total_cmp(&b.period()));
        let longest = sorted.last().map_or(1, |s| s.bins());
        // Phase bins once per season: the passes below read them many times.
        let bins: Vec<Vec<u32>> = sorted.iter().map(|s| s.bins_of(n)).collect();
        let over = full_windows(n, longest);
        let profiles = if let [season] = sorted[..] {
            // One season has nothing to settle against: one pass, on `y` itself. Its
            // sums carry over to a longer `y` only where every window is whole (a cut
            // window's average changes as `y` grows).
            let mut once = Growing::default();
            let growing = if over.start == 0 { &mut once } else { growing };
            vec![growing.profile(y, season, &bins[0], over)]
        } else {
            settled_profiles(y, &sorted, &bins, over)
        };
        Seasonals {
            seasons: sorted.into_iter().zip(profiles).collect(),
            len: n,
            bins,
        }
    }

    /// The seasonal sum at step `t` of the window (t ≥ len extrapolates).
    pub fn at(&self, t: usize) -> f64 {
        self.seasons.iter().map(|(s, p)| p[s.bin(t)]).sum()
    }

    /// `y` (the window decomposed, or a prefix of it) without its seasons.
    pub fn adjust(&self, y: &[f64]) -> Vec<f64> {
        if y.len() > self.len {
            return y.iter().enumerate().map(|(t, v)| v - self.at(t)).collect();
        }
        y.iter()
            .enumerate()
            .map(|(t, v)| {
                let sum: f64 = self
                    .seasons
                    .iter()
                    .zip(&self.bins)
                    .map(|((_, p), b)| p[b[t] as usize])
                    .sum();
                v - sum
            })
            .collect()
    }

    /// The seasonal sums for the `h` steps after the window.
    pub fn extend(&self, h: usize) -> Vec<f64> {
        (self.len..self.len + h).map(|t| self.at(t)).collect()
    }
}

/// The profiles of two or more `seasons` (shortest first, `bins` their phase bins):
/// each the phase means of `y` less the other seasons' profiles and its trend, over
/// [`PASSES`] passes so that the profiles settle.
fn settled_profiles(
    y: &[f64],
    seasons: &[Season],
    bins: &[Vec<u32>],
    over: std::ops::Range<usize>,
) -> Vec<Vec<f64>> {
    let longest = seasons.last().map_or(1, |s| s.bins());
    let mut profiles: Vec<Vec<f64>> = seasons.iter().map(|s| vec![0.0; s.bins()]).collect();
    let mut rest = vec![0.0; y.len()];
    for _ in 0..PASSES {
        for k in 0..seasons.len() {
            // The series without the other seasons, then without its trend.
            rest.copy_from_slice(y);
            for (j, (b, p)) in bins.iter().zip(&profiles).enumerate() {
                if j != k {
                    for (r, bin) in rest.iter_mut().zip(b) {
                        *r -= p[*bin as usize];
                    }
                }
            }
            let trend = MovingAverage::of(&rest, longest);
            let m = seasons[k].bins();
            profiles[k] = phase_means(&rest, &trend, &bins[k], m, over.clone());
        }
    }
    profiles
}

/// The steps whose centred window of width `w` lies inside `0..n`: near the ends the
/// average covers part of a cycle and carries the season into the trend. All steps
/// when fewer remain.
fn full_windows(n: usize, w: usize) -> std::ops::Range<usize> {
    let (lo, hi) = (w / 2, n.saturating_sub(w - w / 2));
    if hi > lo + w {
        lo..hi
    } else {
        0..n
    }
}

/// `y` averaged over `w` steps centred on each (fewer at the ends).
pub(super) fn centred_average(y: &[f64], w: usize) -> Vec<f64> {
    let average = MovingAverage::of(y, w);
    (0..y.len()).map(|t| average.at(t)).collect()
}

/// Centred moving average of width `w` (shrinking at the ends), read step by step
/// from prefix sums: the profile reads it only over the full windows.
#[derive(Debug, Default)]
struct MovingAverage {
    prefix: Vec<f64>,
    w: usize,
}

impl MovingAverage {
    fn of(y: &[f64], w: usize) -> MovingAverage {
        let mut average = MovingAverage {
            prefix: Vec::with_capacity(y.len() + 1),
            w,
        };
        average.extend(y);
        average
    }

    /// The average of the values so far and then `more`.
    fn extend(&mut self, more: &[f64]) {
        if self.prefix.is_empty() {
            self.prefix.push(0.0);
        }
        // The running sum in a local, not read back from the vector: the chain of
        // additions is then the loop's only wait.
        let mut sum = *self.prefix.last().unwrap_or(&0.0);
        self.prefix.extend(more.iter().map(|v| {
            sum += v;
            sum
        }));
    }

    /// The average at step `t`.
    fn at(&self, t: usize) -> f64 {
        let n = self.prefix.len() - 1;
        let half = self.w / 2;
        let lo = t.saturating_sub(half);
        let hi = (t + self.w - half).min(n);
        (self.prefix[hi] - self.prefix[lo]) / (hi - lo) as f64
    }
}

/// Mean of `y - trend` over steps `over` at each of `m` phase bins (`bins[t]` is step
/// t's), centred on zero.
fn phase_means(
    y: &[f64],
    trend: &MovingAverage,
    bins: &[u32],
    m: usize,
    over: std::ops::Range<usize>,
) -> Vec<f64> {
    let mut sums = PhaseSums::new(m);
    sums.add(y, trend, bins, over);
    sums.centred_means()
}

/// Sums and counts of `y - trend` at each phase bin.
#[derive(Debug, Clone, Default)]
struct PhaseSums {
    sum: Vec<f64>,
    count: Vec<usize>,
}

impl PhaseSums {
    fn new(m: usize) -> Self {
        PhaseSums {
            sum: vec![0.0; m],
            count: vec![0; m],
        }
    }

    /// Adds steps `over`, in order.
    fn add(
        &mut self,
        y: &[f64],
        trend: &MovingAverage,
        bins: &[u32],
        over: std::ops::Range<usize>,
    ) {
        for t in over {
            let b = bins[t] as usize;
            self.sum[b] += y[t] - trend.at(t);
            self.count[b] += 1;
        }
    }

    /// The mean at each bin, less the mean of the means.
    fn centred_means(&self) -> Vec<f64> {
        let m = self.sum.len();
        let mut p: Vec<f64> = self
            .sum
            .iter()
            .zip(&self.count)
            .map(|(s, c)| s / (*c).max(1) as f64)
            .collect();
        let mean = p.iter().sum::<f64>() / m as f64;
        p.iter_mut().for_each(|v| *v -= mean);
        p
    }
}

/// One season's profile sums over a series that grows: the validation origins'
/// prefixes, each the one before it and a horizon more. Whole windows' averages read
/// only the values up to them, so a longer prefix's sums are the shorter one's, then
/// its new steps (the same additions in the same order as from the start).
#[derive(Debug, Default)]
pub struct Growing {
    /// The values summed over, and their running sums.
    values: Vec<f64>,
    trend: MovingAverage,
    season: Option<Season>,
    sums: PhaseSums,
    /// Steps before this are in `sums`.
    upto: usize,
}

impl Growing {
    /// The centred profile of `y` with `season` over its whole windows `over`.
    fn profile(
        &mut self,
        y: &[f64],
        season: Season,
        bins: &[u32],
        over: std::ops::Range<usize>,
    ) -> Vec<f64> {
        let extends = self.season == Some(season)
            && self.values.len() <= y.len()
            && self.upto <= over.end
            && self
                .values
                .iter()
                .zip(y)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        if !extends {
            *self = Growing {
                season: Some(season),
                sums: PhaseSums::new(season.bins()),
                upto: over.start,
                trend: MovingAverage::of(&[], season.bins()),
                values: Vec::new(),
            };
        }
        self.trend.extend(&y[self.values.len()..]);
        self.values.extend_from_slice(&y[self.values.len()..]);
        self.sums
            .add(y, &self.trend, bins, self.upto.max(over.start)..over.end);
        self.upto = over.end;
        self.sums.centred_means()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjusting_by_the_kept_phase_bins_is_adjusting_by_the_seasons() {
        // fractional and whole periods, one season and two: the bins kept from the
        // estimate give the same digits as each step's phase computed again
        let y: Vec<f64> = (0..2000)
            .map(|t| (t as f64 * 0.137).sin() + 0.3 * ((t * 7919) % 17) as f64)
            .collect();
        for seasons in [
            vec![Season::new(45.8).unwrap()],
            vec![Season::new(24.0).unwrap(), Season::new(168.0).unwrap()],
            vec![Season::new(12.3).unwrap(), Season::new(97.0).unwrap()],
        ] {
            let s = Seasonals::of(&y, &seasons);
            let by_phase: Vec<f64> = y.iter().enumerate().map(|(t, v)| v - s.at(t)).collect();
            assert_eq!(s.adjust(&y), by_phase);
            assert_eq!(s.adjust(&y[..1500]), by_phase[..1500]);
        }
    }

    #[test]
    fn a_profile_continued_over_longer_prefixes_is_the_one_found_afresh() {
        // prefixes growing by a horizon (the origins), then shorter (found again), then
        // another series of the same length, a window too short for whole averages,
        // two seasons, and a fractional season
        let y: Vec<f64> = (0..3000)
            .map(|t| {
                (t as f64 * 0.26).sin() * 5.0 + 0.01 * t as f64 + ((t * 7919) % 17) as f64 * 0.1
            })
            .collect();
        let other: Vec<f64> = y.iter().map(|v| v * 1.5 + 2.0).collect();
        let day = [Season::new(24.0).unwrap()];
        let frac = [Season::new(37.3).unwrap()];
        let both = [Season::new(24.0).unwrap(), Season::new(168.0).unwrap()];
        let mut growing = Growing::default();
        let cases: Vec<(&[f64], &[Season])> = vec![
            (&y[..2000], &day),
            (&y[..2048], &day),
            (&y[..2096], &day),
            (&y[..3000], &day),
            (&y[..1500], &day),
            (&other[..1500], &day),
            (&other[..1600], &frac),
            (&other[..1700], &frac),
            (&y[..40], &day),
            (&y[..2000], &both),
            (&other[..1800], &frac),
        ];
        for (prefix, seasons) in cases {
            let grown = Seasonals::of_growing(prefix, seasons, &mut growing);
            assert_eq!(
                grown,
                Seasonals::of(prefix, seasons),
                "{} steps, {seasons:?}",
                prefix.len()
            );
            if let [season] = seasons {
                // the one pass over the whole prefix, step by step
                let (n, w) = (prefix.len(), season.bins());
                let trend = MovingAverage::of(prefix, w);
                let bins = season.bins_of(n);
                let once = phase_means(prefix, &trend, &bins, w, full_windows(n, w));
                assert_eq!(grown.seasons[0].1, once, "{n} steps, {seasons:?}");
            }
        }
    }

    #[test]
    fn a_day_and_a_week_are_separated() {
        // hourly: a daily wave and a weekend dip, three weeks
        let day = |t: usize| (2.0 * std::f64::consts::PI * t as f64 / 24.0).sin();
        let week = |t: usize| if (t / 24) % 7 >= 5 { -1.0 } else { 0.4 };
        let y: Vec<f64> = (0..24 * 21).map(|t| 10.0 + day(t) + week(t)).collect();
        let s = Seasonals::of(
            &y,
            &[Season::new(168.0).unwrap(), Season::new(24.0).unwrap()],
        );
        let next = s.extend(168);
        for (j, v) in next.iter().enumerate() {
            let t = y.len() + j;
            let truth = day(t) + week(t) - (5.0 * 0.4 - 2.0) / 7.0;
            assert!((v - truth).abs() < 0.1, "step {j}: {v} against {truth}");
        }
    }
}
