//! How well the model predicts measured pairs: rank correlation of pair scores, mean
//! absolute error of each side's progress, the same with constants fitted without
//! each program (leave one program out), and how often the recommended mode was the
//! measured best. `bench/colocation` runs it on the H100 measurements.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::calibrate::{self, Observation};
use super::{Constants, Mode};
use crate::analysis::correlation::{pearson, ranks};

/// Spearman's rank correlation of `x` and `y` (average ranks for ties); NaN when
/// either is constant or shorter than 3.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    if x.len() != y.len() || x.len() < 3 {
        return f64::NAN;
    }
    pearson(&ranks(x), &ranks(y)).unwrap_or(f64::NAN)
}

/// Rank correlation of pair scores and mean absolute error of both sides.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Agreement {
    /// Spearman ρ between the two sets of pair scores.
    pub rho: f64,
    /// Mean absolute difference of each side's progress.
    pub mae: f64,
}

/// Agreement of `predicted` with `measured`, pair by pair (both sides each).
pub fn agreement(predicted: &[(f64, f64)], measured: &[(f64, f64)]) -> Agreement {
    let score = |v: &[(f64, f64)]| v.iter().map(|(a, b)| (a + b) / 2.0).collect::<Vec<_>>();
    let mae = predicted
        .iter()
        .zip(measured)
        .map(|(p, m)| (p.0 - m.0).abs() + (p.1 - m.1).abs())
        .sum::<f64>()
        / (2.0 * predicted.len().max(1) as f64);
    Agreement {
        rho: spearman(&score(predicted), &score(measured)),
        mae,
    }
}

/// The model's predictions for `observations`, each pair predicted with constants
/// fitted on the pairs that do not include its first program.
pub fn leave_one_program_out(observations: &[Observation], start: &Constants) -> Vec<(f64, f64)> {
    let programs: BTreeSet<&str> = observations
        .iter()
        .flat_map(|o| [o.a.as_str(), o.b.as_str()])
        .collect();
    let mut fits: BTreeMap<&str, Constants> = BTreeMap::new();
    for p in &programs {
        let train: Vec<Observation> = observations
            .iter()
            .filter(|o| o.a != *p && o.b != *p)
            .cloned()
            .collect();
        fits.insert(p, calibrate::fit(&train, start));
    }
    observations
        .iter()
        .map(|o| calibrate::predicted(o, &fits[o.a.as_str()]))
        .collect()
}

/// The measured best of two modes for a pair (higher mean progress), given both.
pub fn best_mode(ts: (f64, f64), mps: (f64, f64)) -> Mode {
    if (mps.0 + mps.1) > (ts.0 + ts.1) {
        Mode::Mps
    } else {
        Mode::TimeSlicing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_is_one_for_monotone_and_minus_one_for_reversed() {
        let x = [0.1, 0.5, 0.2, 0.9];
        assert!((spearman(&x, &[1.0, 7.0, 2.0, 30.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&x, &[9.0, 1.0, 5.0, 0.0]) + 1.0).abs() < 1e-12);
        assert!(spearman(&x, &[1.0, 1.0, 1.0, 1.0]).is_nan());
    }

    #[test]
    fn ties_share_their_average_rank() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn agreement_counts_both_sides() {
        let a = agreement(
            &[(0.5, 0.5), (1.0, 0.8), (0.2, 0.9)],
            &[(0.6, 0.5), (1.0, 0.6), (0.3, 0.9)],
        );
        assert!((a.mae - 0.4 / 6.0).abs() < 1e-12, "{a:?}");
        assert!((a.rho - 1.0).abs() < 1e-12);
    }
}
