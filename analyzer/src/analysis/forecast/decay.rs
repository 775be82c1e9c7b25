//! A deviation that fades: the rest of a seasonal decomposition (the series without its
//! day and week) wanders around its recent level, a warm afternoon or a busy evening
//! lasting some hours, then gone. Simple smoothing carries today's deviation into
//! every hour of the next two days; an AR(1) on the deviation from the last cycle's
//! mean lets it fade at the rate it faded before, towards that mean.

use super::candidates::Path;

/// Fewest values the level and the fade are estimated from: a lag-one correlation of
/// fewer is mostly noise.
pub const MIN_WINDOW: usize = 32;

/// Largest fade per step: a deviation that never fades is a level shift, which the
/// smoothing candidates follow.
pub const MAX_PHI: f64 = 0.99;

/// The AR(1) forecast of `h` steps after `rest`: the mean `mu` of its last `window`
/// values (at least [`MIN_WINDOW`], at most all), plus the last deviation from it times
/// `phi^j`, where `phi` is the deviations' lag-one correlation (0 to [`MAX_PHI`]). The
/// variance is the mean's, plus the deviations' own in the share that has faded.
pub fn decay(rest: &[f64], window: usize, h: usize) -> Path {
    let w = window.max(MIN_WINDOW).min(rest.len());
    let recent = &rest[rest.len() - w..];
    let Some(&last) = recent.last() else {
        return Path {
            point: vec![0.0; h],
            var: vec![0.0; h],
        };
    };
    let mu = recent.iter().sum::<f64>() / w as f64;
    let dev: Vec<f64> = recent.iter().map(|v| v - mu).collect();
    let spread = dev.iter().map(|d| d * d).sum::<f64>();
    let lagged = dev.windows(2).map(|p| p[0] * p[1]).sum::<f64>();
    let phi = if spread > 0.0 {
        (lagged / spread).clamp(0.0, MAX_PHI)
    } else {
        0.0
    };
    let s2 = spread / w as f64;
    let (mut point, mut var) = (Vec::with_capacity(h), Vec::with_capacity(h));
    let mut fade = 1.0;
    for _ in 0..h {
        fade *= phi;
        point.push(mu + (last - mu) * fade);
        var.push(s2 * (1.0 - fade * fade) + s2 / w as f64);
    }
    Path { point, var }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deviation_fades_towards_the_mean_at_its_own_rate() {
        // deviations that halve each step around 10: the forecast after a deviation
        // of +8 halves towards 10
        let mut rest = Vec::new();
        for _ in 0..20 {
            rest.extend([18.0, 14.0, 12.0, 11.0, 10.5, 10.25, 2.0, 6.0, 8.0, 9.0]);
        }
        rest.extend([18.0]);
        let p = decay(&rest, 201, 6);
        let mu = rest.iter().sum::<f64>() / rest.len() as f64;
        let first = (p.point[0] - mu) / (18.0 - mu);
        assert!(first > 0.3 && first < 0.8, "{first}: about a half");
        assert!(p.point.windows(2).all(|w| w[1] < w[0] && w[1] > mu));
        assert!(p.var.windows(2).all(|w| w[1] >= w[0]));
    }

    #[test]
    fn a_deviation_with_no_memory_forecasts_the_mean_and_a_constant_its_value() {
        // alternating deviations: negative lag-one correlation, no fade to follow
        let alternating: Vec<f64> = (0..100).map(|t| 5.0 + [1.0, -1.0][t % 2]).collect();
        let p = decay(&alternating, 100, 3);
        assert_eq!(p.point, vec![5.0; 3]);
        let p = decay(&[7.0; 50], 40, 3);
        assert_eq!(p.point, vec![7.0; 3]);
        assert_eq!(p.var, vec![0.0; 3]);
        assert_eq!(decay(&[], 40, 2).point, vec![0.0; 2]);
    }

    #[test]
    fn the_level_is_the_last_cycles_not_the_whole_histories() {
        // a level of 0 for 500 steps, then 10 (± a little) for the last 100: the
        // forecast is near 10, the mean of the window, not of all
        let rest: Vec<f64> = (0..600)
            .map(|t| {
                if t < 500 {
                    0.0
                } else {
                    10.0 + ((t * 7919) % 5) as f64 * 0.1
                }
            })
            .collect();
        let p = decay(&rest, 100, 48);
        assert!(
            p.point.iter().all(|v| (v - 10.2).abs() < 0.3),
            "{:?}",
            p.point
        );
    }
}
