//! Where the time goes, per stage, on one series kind mix (a development aid).

use poolprof_analyzer::analysis::periodicity::{
    detect_on_grid, harmonics, prepare, significance, spectrum::Spectra, PeriodConfig,
};
use poolprof_analyzer::analysis::{forecast, grid};
use poolprof_analyzer::series::Series;

use crate::inputs;

/// CPU time this thread has run, in seconds (from the scheduler, so other processes
/// on a busy machine do not inflate it).
fn cpu_now() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace()
        .next()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1e9
}

/// Prints CPU microseconds per series for each stage over `n` pool series.
pub fn run(n: usize) {
    let pool: Vec<Vec<f64>> = (0..n).map(inputs::series).collect();
    let mut t = [0.0f64; 9];
    for y in &pool {
        let s0 = cpu_now();
        let series = Series::from_values(y, 60.0);
        let seg = grid::longest(grid::segments(&series.points, None, 10).unwrap());
        let s1 = cpu_now();
        let mut x = seg.values.clone();
        prepare::detrend_and_clip(&mut x);
        let s2 = cpu_now();
        let sp = Spectra::of(&x);
        let s3 = cpu_now();
        let w = significance::whiten(&sp.power, 3, x.len() * 2 / 5).unwrap();
        let s3b = cpu_now();
        let _ = w.peaks();
        let s3c = cpu_now();
        let _ = harmonics::candidates(&sp.power, &w, 0.01);
        let s3d = cpu_now();
        let _ = detect_on_grid(&seg.values, 60.0, &PeriodConfig::default());
        let s4 = cpu_now();
        let _ = forecast::forecast_grid(&seg.values, 60.0, forecast::PeriodChoice::None, 60);
        let s5 = cpu_now();
        let _ = forecast::forecast_grid(
            &seg.values,
            60.0,
            forecast::PeriodChoice::Seconds(60.0 * 97.0),
            60,
        );
        let s6 = cpu_now();
        for (i, (a, b)) in [
            (s0, s1),
            (s1, s2),
            (s2, s3),
            (s3, s3b),
            (s3b, s3c),
            (s3c, s3d),
            (s3d, s4),
            (s4, s5),
            (s5, s6),
        ]
        .iter()
        .enumerate()
        {
            t[i] += b - a;
        }
    }
    let names = [
        "grid",
        "detrend+clip",
        "fft+acf",
        "whiten",
        "peaks",
        "harmonic sums",
        "detect_on_grid (all of periods)",
        "forecast none",
        "forecast m=97",
    ];
    for (name, v) in names.iter().zip(t) {
        println!("{name}: {:.0} us", v * 1e6 / n as f64);
    }
}

/// CPU microseconds of one forward f32 FFT at a few sizes.
pub fn fft_sizes() {
    use poolprof_analyzer::analysis::periodicity::spectrum::Spectra;
    for n in [10_080usize, 10_000, 10_240, 8_192] {
        let x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 101) as f64).collect();
        let _ = Spectra::of(&x);
        let t = cpu_now();
        for _ in 0..200 {
            let _ = Spectra::of(&x);
        }
        println!("Spectra::of n={n}: {:.0} us", (cpu_now() - t) * 1e6 / 200.0);
    }
}

/// The null distribution of the harmonic-sum search (development aid): on white noise
/// of several lengths, quantiles of the smallest uncorrected ln p against ln trials.
pub fn calibrate(sims: usize) {
    use poolprof_analyzer::analysis::periodicity::harmonics;
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(77);
    for n in [
        48usize, 64, 96, 128, 192, 256, 400, 700, 1200, 2500, 5000, 10080,
    ] {
        let mut stats: Vec<f64> = Vec::with_capacity(sims);
        let mut trials = 0;
        for _ in 0..sims {
            let mut x: Vec<f64> = (0..n)
                .map(|_| {
                    let u1: f64 = rng.gen::<f64>().max(1e-300);
                    let u2: f64 = rng.gen();
                    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
                })
                .collect();
            prepare::detrend_and_clip(&mut x);
            let sp = Spectra::of(&x);
            let w = significance::whiten(&sp.power, 3, (n as f64 / 2.5) as usize).unwrap();
            let (lp, t) = harmonics::min_log_p(&sp.power, &w);
            stats.push(lp);
            trials = t;
        }
        stats.sort_by(f64::total_cmp);
        let q = |p: f64| stats[((p * sims as f64) as usize).min(sims - 1)];
        // P(min p <= x) = 1 - (1 - x)^M  =>  M = ln(1 - P) / ln(1 - x) ~ -ln(1 - P) / x
        let m_eff = |p: f64| -(1.0f64 - p).ln() / q(p).exp();
        println!(
            "n={n} trials={trials} q01={:.2} q05={:.2} q20={:.2} ln_trials={:.2} ln_Meff(1%)={:.2} ln_Meff(5%)={:.2} ln_Meff(20%)={:.2}",
            q(0.01), q(0.05), q(0.2),
            (trials as f64).ln(),
            m_eff(0.01).ln(), m_eff(0.05).ln(), m_eff(0.2).ln()
        );
    }
}
