//! Nelder–Mead minimisation with a bounded number of evaluations.
//!
//! Used for the smoothing parameters, which live in an unconstrained space (each is a
//! logistic transform), so the simplex needs no bounds handling.

/// Minimises `f` from `start`, with initial simplex steps of `scale`, using at most
/// `max_evals` evaluations. Returns the best point and its value.
pub fn nelder_mead(
    f: &mut dyn FnMut(&[f64]) -> f64,
    start: &[f64],
    scale: f64,
    max_evals: usize,
) -> (Vec<f64>, f64) {
    let value = f(start);
    nelder_mead_valued(f, (start, value), scale, max_evals)
}

/// [`nelder_mead`] from a start whose value `f` already gave (counted in `max_evals`
/// as if evaluated here, so the search is the same).
pub fn nelder_mead_valued(
    f: &mut dyn FnMut(&[f64]) -> f64,
    (start, value): (&[f64], f64),
    scale: f64,
    max_evals: usize,
) -> (Vec<f64>, f64) {
    let d = start.len();
    let mut simplex: Vec<(Vec<f64>, f64)> = Vec::with_capacity(d + 1);
    simplex.push((start.to_vec(), value));
    for i in 0..d {
        let mut p = start.to_vec();
        p[i] += scale;
        let v = f(&p);
        simplex.push((p, v));
    }
    let mut evals = d + 1;
    while evals < max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[d].1);
        if (worst - best).abs() <= 1e-9 * (best.abs() + 1e-12) {
            break;
        }
        let centroid: Vec<f64> = (0..d)
            .map(|j| simplex[..d].iter().map(|p| p.0[j]).sum::<f64>() / d as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            centroid
                .iter()
                .zip(&simplex[d].0)
                .map(|(c, w)| c + t * (w - c))
                .collect()
        };
        let reflected = along(-1.0);
        let fr = f(&reflected);
        evals += 1;
        if fr < simplex[0].1 {
            let expanded = along(-2.0);
            let fe = f(&expanded);
            evals += 1;
            simplex[d] = if fe < fr {
                (expanded, fe)
            } else {
                (reflected, fr)
            };
        } else if fr < simplex[d - 1].1 {
            simplex[d] = (reflected, fr);
        } else {
            let contracted = along(0.5);
            let fc = f(&contracted);
            evals += 1;
            if fc < simplex[d].1 {
                simplex[d] = (contracted, fc);
            } else {
                shrink(&mut simplex, f);
                evals += d;
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (p, v) = simplex.swap_remove(0);
    (p, v)
}

fn shrink(simplex: &mut [(Vec<f64>, f64)], f: &mut dyn FnMut(&[f64]) -> f64) {
    let best = simplex[0].0.clone();
    for p in simplex.iter_mut().skip(1) {
        for (x, b) in p.0.iter_mut().zip(&best) {
            *x = b + 0.5 * (*x - b);
        }
        p.1 = f(&p.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_minimum_of_a_shifted_bowl() {
        let mut f = |x: &[f64]| (x[0] - 1.5).powi(2) + 3.0 * (x[1] + 0.5).powi(2);
        let (p, v) = nelder_mead(&mut f, &[0.0, 0.0], 1.0, 400);
        assert!((p[0] - 1.5).abs() < 1e-3 && (p[1] + 0.5).abs() < 1e-3 && v < 1e-6);
    }
}
