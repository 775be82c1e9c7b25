//! Calibration errors of the choice as it would have been made without them. The
//! chosen model's own validation errors are the smallest of all candidates' by
//! construction: with many candidates and few validation blocks (an hourly series, two
//! days ahead, four blocks) the winner is partly the luckiest, and bands sized on its
//! errors cover less than they claim. Here each validation block is held out in turn,
//! the choice is made on the other blocks exactly as [`super::validation::choose`]
//! makes it, and that choice's errors on the held-out block are the ones kept. Where
//! one model wins every way (a stable daily shape at 1 min) they are the same errors.

use super::candidates::Path;
use super::validation::{pick, standardise, Backtest, Pick};

/// The choices made on all origins but one, each origin held out in turn; none with a
/// single origin, where there is nothing to hold out.
pub(super) fn held_out(y: &[f64], origins: &[usize], tests: &[Backtest]) -> Vec<Pick> {
    if origins.len() < 2 || tests.is_empty() {
        return Vec::new();
    }
    (0..origins.len())
        .map(|held| pick(y, origins, tests, Some(held)))
        .collect()
}

/// The forecast from each origin of the choice made without it (`held`, from
/// [`held_out`]), with or without the combination's `slack`: the choice scored where
/// it had no luck of its own.
pub(super) fn paths(held: &[Pick], tests: &[Backtest], slack: bool) -> Vec<Path> {
    held.iter()
        .enumerate()
        .map(|(k, p)| p.path(k, slack, tests).clone())
        .collect()
}

/// Standardised errors against `truth` of the held-out choices' forecasts (from
/// [`paths`], one per origin); with none, the errors of `chosen`. `truth` is the series
/// but where it had its holidays made ordinary.
pub(super) fn standardised(
    truth: &[f64],
    origins: &[usize],
    held_out: &[Path],
    chosen: &[Path],
) -> Vec<f64> {
    if held_out.is_empty() {
        return standardise(truth, origins, chosen);
    }
    held_out
        .iter()
        .enumerate()
        .flat_map(|(k, path)| standardise(truth, &origins[k..=k], std::slice::from_ref(path)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::forecast::candidates::Candidate;
    use crate::analysis::forecast::validation::{choose, Given, Origins};

    fn path(point: Vec<f64>) -> Path {
        let var = vec![1.0; point.len()];
        Path { point, var }
    }

    #[test]
    fn each_origin_is_scored_by_the_choice_made_on_the_others() {
        // y is 0 everywhere; two origins of two steps, weighted 1 and 2. A is off by 2
        // at origin 0 and exact at origin 1 (0.67 overall), B off by 1 at both (1):
        // A wins on all origins, partly by luck
        let y = vec![0.0; 8];
        let origins = [4, 6];
        let a = vec![path(vec![2.0, 2.0]), path(vec![0.0, 0.0])];
        let b = vec![path(vec![1.0, 1.0]), path(vec![1.0, 1.0])];
        let tests = [Backtest::other(&a), Backtest::other(&b)];
        // held out origin 0: chosen on origin 1, A (exact) -> errors 2, 2 at origin 0;
        // held out origin 1: chosen on origin 0, B (1 < 2) -> errors 1, 1 at origin 1
        let held = paths(&held_out(&y, &origins, &tests), &tests, false);
        let s = standardised(&y, &origins, &held, &a);
        assert_eq!(s, vec![2.0, 2.0, 1.0, 1.0]);
        // the winner's own errors, which the bands used to be sized on, are smaller
        let own = standardise(&y, &origins, &a);
        assert_eq!(own, vec![2.0, 2.0, 0.0, 0.0]);
        // one origin: nothing to hold out
        assert_eq!(
            standardised(
                &y,
                &origins[..1],
                &paths(&held_out(&y, &origins[..1], &tests), &tests, false),
                &a[..1]
            ),
            vec![2.0, 2.0]
        );
    }

    /// Candidates A (forecasting `a[k]` at both steps of origin k) and B (1 everywhere)
    /// at two origins of two steps, 4 and 6.
    fn two_given(a: [f64; 2]) -> (Vec<Box<dyn Candidate>>, Origins) {
        let a = a.iter().map(|v| path(vec![*v; 2])).collect();
        let b = vec![path(vec![1.0, 1.0]), path(vec![1.0, 1.0])];
        let all: Vec<Box<dyn Candidate>> = vec![Box::new(Given(a, None)), Box::new(Given(b, None))];
        let origins = Origins {
            at: vec![4, 6],
            steps: 2,
        };
        (all, origins)
    }

    #[test]
    fn the_choice_calibrates_on_the_held_out_errors() {
        // the same two candidates through `choose`: A is chosen, and the errors that
        // size the bands are those of the held-out choices, not A's own
        let (all, origins) = two_given([2.0, 0.0]);
        let choice = choose(&[0.0; 8], &[0.0; 8], &all, &origins, &|_| {});
        assert_eq!(choice.members, vec![0]);
        assert_eq!(choice.standardised, vec![2.0, 2.0, 1.0, 1.0]);
    }

    #[test]
    fn the_choice_is_made_on_y_and_calibrated_on_what_was_observed() {
        // y had a holiday made ordinary (0 everywhere); what was observed held 4 at the
        // first step of the second origin: A is still chosen on y, and its band is
        // sized by the 4 it would have missed
        let (all, origins) = two_given([0.0, 0.0]);
        let mut observed = [0.0; 8];
        observed[6] = 4.0;
        let choice = choose(&[0.0; 8], &observed, &all, &origins, &|_| {});
        assert_eq!(choice.members, vec![0]);
        assert_eq!(choice.standardised, vec![0.0, 0.0, 4.0, 0.0]);
    }
}
