//! Sawtooth series: memory that grows and is freed, a counter that wraps. A trend
//! fitted to the current ramp, extrapolated, runs past the level where the series has
//! always been reset; nothing in the history supports a value above its highest peak.
//! And a reset no model times can come at any step: the bands reach down to where the
//! series resets to once that has become likely enough ([`Resets`]).

/// A one-step fall of more than this share of the window's range is a reset.
pub const RESET_SHARE: f64 = 0.5;

/// Fewest resets that make a sawtooth.
pub const MIN_RESETS: usize = 2;

/// The range of `y` when it climbs gradually: a positive, finite range that no
/// one-step rise exceeds [`RESET_SHARE`] of (a series that jumps up as it drops
/// switches levels instead of resetting).
fn climbs_gradually(y: &[f64]) -> Option<f64> {
    let (min, max) = crate::analysis::extent::extent(y);
    let range = max - min;
    let gradual = range > 0.0
        && range.is_finite()
        && y.windows(2).all(|w| w[1] - w[0] <= RESET_SHARE * range);
    gradual.then_some(range)
}

/// Whether `y` climbs gradually and falls by more than [`RESET_SHARE`] of its range in
/// one step at least [`MIN_RESETS`] times: it climbs and drops at once.
pub fn is_sawtooth(y: &[f64]) -> bool {
    climbs_gradually(y).is_some_and(|range| {
        let big = RESET_SHARE * range;
        y.windows(2).filter(|w| w[0] - w[1] > big).count() >= MIN_RESETS
    })
}

/// A reset: a one-step fall of at least this share of the range, landing within this
/// share of the range of where such falls land (the median). A cache freed before it
/// grew far falls by little, but to the same floor as one freed at its peak; the floor
/// is where the falls land, not the series' minimum, which may be a moment before the
/// jobs started.
pub const FLOOR_SHARE: f64 = 0.1;

/// How a sawtooth resets: how often (per step) and to what level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resets {
    /// Resets per step so far.
    pub rate: f64,
    /// The level resets fall to.
    pub floor: f64,
}

impl Resets {
    /// The resets of `y`; `None` unless it climbs gradually (never by more than
    /// [`RESET_SHARE`] of its range in one step) and has reset at least [`MIN_RESETS`]
    /// times.
    pub fn of(y: &[f64]) -> Option<Resets> {
        let range = climbs_gradually(y)?;
        let near = FLOOR_SHARE * range;
        let mut landings: Vec<f64> = y
            .windows(2)
            .filter(|w| w[0] - w[1] > near)
            .map(|w| w[1])
            .collect();
        if landings.len() < MIN_RESETS {
            return None;
        }
        let mid = landings.len() / 2;
        let floor = *landings.select_nth_unstable_by(mid, f64::total_cmp).1;
        let count = landings
            .iter()
            .filter(|v| (*v - floor).abs() <= near)
            .count();
        (count >= MIN_RESETS).then(|| Resets {
            rate: count as f64 / (y.len() - 1) as f64,
            floor,
        })
    }

    /// Lowers the `coverage` band's lower edge to the floor from the step at which a
    /// reset has become likelier than the band's lower tail ((1 - coverage) / 2). A
    /// ramp's forecast continues the ramp; the actual value is that or, once the series
    /// has reset, near its floor: the band of such a mixture reaches the floor as soon
    /// as the reset's chance exceeds the tail, however sure the ramp is.
    pub fn lower_band(&self, coverage: f64, lower: &mut [f64]) {
        let tail = (1.0 - coverage) / 2.0;
        let mut no_reset = 1.0;
        for l in lower.iter_mut() {
            no_reset *= 1.0 - self.rate;
            if 1.0 - no_reset >= tail {
                *l = l.min(self.floor);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sawtooth_band_reaches_its_floor_once_a_reset_is_likelier_than_its_tail() {
        // ramps of 70 steps from 10 to 79: a reset every 70 steps, to 10
        let saw: Vec<f64> = (0..700).map(|i| 10.0 + (i % 70) as f64).collect();
        let resets = Resets::of(&saw).expect("a sawtooth");
        assert_eq!(resets.floor, 10.0);
        assert!((resets.rate - 9.0 / 699.0).abs() < 1e-12, "{resets:?}");
        // 1 - (1 - 9/699)^j passes 2.5% at step 2 and 10% at step 9
        let mut lower95 = vec![50.0; 20];
        resets.lower_band(0.95, &mut lower95);
        assert_eq!(&lower95[..1], &[50.0]);
        assert!(lower95[1..].iter().all(|l| *l == 10.0), "{lower95:?}");
        let mut lower80 = vec![50.0; 20];
        resets.lower_band(0.80, &mut lower80);
        assert!(lower80[..8].iter().all(|l| *l == 50.0), "{lower80:?}");
        assert!(lower80[8..].iter().all(|l| *l == 10.0), "{lower80:?}");
        // a band already below the floor stays where it is; a level switch is no sawtooth
        let mut low = vec![5.0; 20];
        resets.lower_band(0.95, &mut low);
        assert!(low.iter().all(|l| *l == 5.0));
        let switches: Vec<f64> = (0..300)
            .map(|i| if (i / 50) % 2 == 0 { 100.0 } else { 0.0 })
            .collect();
        assert_eq!(Resets::of(&switches), None);
    }

    #[test]
    fn ramps_that_reset_are_a_sawtooth_and_level_switches_are_not() {
        let saw: Vec<f64> = (0..300).map(|i| (i % 70) as f64).collect();
        assert!(is_sawtooth(&saw));
        let once: Vec<f64> = (0..100).map(|i| (i % 70) as f64).collect();
        assert!(!is_sawtooth(&once), "one reset is not a pattern");
        let switches: Vec<f64> = (0..300)
            .map(|i| if (i / 50) % 2 == 0 { 100.0 } else { 0.0 })
            .collect();
        assert!(!is_sawtooth(&switches));
        assert!(!is_sawtooth(&[1.0; 50]));
    }
}
