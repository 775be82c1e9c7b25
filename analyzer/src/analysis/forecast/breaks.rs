//! Breaks: one-step changes far larger than the series' usual steps (memory freed, a
//! job starting or ending, a regime switch). A trend estimated across a break mixes
//! the ramp before it with the drop itself, and extrapolates that mixture; the trend
//! models are run on the data since the last break only ([`since_last_break`]).

/// A one-step change of more than this many large steps is a break. A large step is the
/// 99th percentile of the absolute first differences, as for spikes, so changes that
/// recur often (bursts) set the scale and do not count.
pub const BREAK_STEPS: f64 = 10.0;

/// Fewest points since the last break from which a trend is estimated; with fewer the
/// trend models hold the last value.
pub const MIN_SEGMENT: usize = 10;

/// The part of `y` after its last break (all of `y` without one).
pub fn since_last_break(y: &[f64]) -> &[f64] {
    if y.len() < 3 {
        return y;
    }
    let d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let mut sizes = d.clone();
    let at = ((sizes.len() - 1) as f64 * 0.99).floor() as usize;
    let large = *sizes.select_nth_unstable_by(at, f64::total_cmp).1;
    let limit = BREAK_STEPS * large;
    match d.iter().rposition(|v| *v > limit) {
        Some(i) => &y[i + 1..],
        None => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_starts_the_segment_and_ordinary_steps_do_not() {
        // a slow ramp freed twice; the last reset 30 steps before the end
        let y: Vec<f64> = (0..530)
            .map(|i| {
                1.0 + 0.01
                    * (if i < 250 {
                        i
                    } else if i < 500 {
                        i - 250
                    } else {
                        i - 500
                    }) as f64
            })
            .collect();
        assert_eq!(since_last_break(&y).len(), 30);
        let noisy: Vec<f64> = (0..300).map(|i| ((i * 7919) % 13) as f64).collect();
        assert_eq!(since_last_break(&noisy).len(), 300);
    }
}
