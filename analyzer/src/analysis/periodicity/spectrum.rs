//! The tapered periodogram and the autocorrelation, from one complex FFT.
//!
//! The tapered and the untapered series ride in the real and imaginary parts of one
//! zero-padded signal of length 2n, so one forward FFT yields both spectra; one more
//! transform of the untapered power gives the (linear, not circular) autocovariance.
//! That power is real and even, so its forward transform is its inverse one: a length
//! needs one plan. Plans of the last few lengths are cached per thread, so a worker
//! analysing many series of one length plans once, and one that meets series of every
//! length keeps a bounded few.
//! The transforms run in f32 on the series scaled to ±1 (twice the SIMD width of f64);
//! the tests compare against direct sums, and the f32 rounding (1e-7) is far below the
//! 1e-3 noise floor the significance test assumes.

use std::cell::{OnceCell, RefCell};
use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use super::prepare::hann;

thread_local! {
    static PLANS: RefCell<Vec<Plan>> = const { RefCell::new(Vec::new()) };
    /// Work buffers reused from series to series: at 2n = 20,160 points each is larger
    /// than the allocator's mmap threshold, so a fresh one would page-fault its every
    /// page on every series.
    static BUFFERS: RefCell<Buffers> = RefCell::new(Buffers::default());
    /// The Hann window of the last length used on this thread (computing it costs a
    /// sine per point, as much as the transforms).
    static WINDOW: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with the Hann window of length `n`.
fn with_window<R>(n: usize, f: impl FnOnce(&[f64]) -> R) -> R {
    WINDOW.with(|w| {
        let mut w = w.borrow_mut();
        if w.len() != n {
            *w = (0..n).map(|i| hann(i, n)).collect();
        }
        f(&w)
    })
}

/// The signal, the power and the FFT scratch of one thread.
#[derive(Default)]
struct Buffers {
    signal: Vec<Complex<f32>>,
    power: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
}

/// Transforms `buf` in place with `fft`, using (and growing) `scratch`.
fn transform(fft: &Arc<dyn Fft<f32>>, buf: &mut [Complex<f32>], scratch: &mut Vec<Complex<f32>>) {
    let need = fft.get_inplace_scratch_len();
    if scratch.len() < need {
        scratch.resize(need, Complex::new(0.0, 0.0));
    }
    fft.process_with_scratch(buf, &mut scratch[..need]);
}

/// The spectra of one conditioned series of length n.
#[derive(Debug, Clone)]
pub struct Spectra {
    /// Length of the analysed series.
    pub n: usize,
    /// Periodogram of the Hann-tapered series (scaled to a peak of 1) on the 2n-point grid: `power[j]` is at
    /// frequency j / (2n) cycles per step, for j in 0..=n. Even j are the Fourier
    /// frequencies of the series itself.
    pub power: Vec<f64>,
    /// Power of the untapered series at j in 0..=n (the rest mirrors it): the
    /// autocorrelation's transform, kept until [`Spectra::acf`] is asked for.
    raw_power: Vec<f32>,
    acf: OnceCell<Vec<f64>>,
}

impl Spectra {
    /// Computes both spectra of `x` (already detrended; not yet tapered).
    pub fn of(x: &[f64]) -> Spectra {
        BUFFERS.with(|b| Self::of_with(x, &mut b.borrow_mut()))
    }

    fn of_with(x: &[f64], b: &mut Buffers) -> Spectra {
        let n = x.len();
        let m = 2 * n;
        let inv_scale = 1.0 / scale_of(x);
        let buf = &mut b.signal;
        buf.clear();
        with_window(n, |w| {
            buf.extend(x.iter().zip(w).map(|(v, h)| {
                let v = v * inv_scale;
                Complex::new((v * h) as f32, v as f32)
            }))
        });
        buf.resize(m, Complex::new(0.0, 0.0));
        transform(&plan(m), buf, &mut b.scratch);
        // Both series are real, so their spectra are conjugate-symmetric: k = 0..=n
        // holds everything.
        let mut power = Vec::with_capacity(n + 1);
        let mut raw_power = Vec::with_capacity(n + 1);
        for k in 0..=n {
            let z = buf[k];
            let zc = buf[if k == 0 { 0 } else { m - k }].conj();
            let a = (z + zc) * 0.5;
            let b = (z - zc) * Complex::new(0.0, -0.5);
            power.push(f64::from(a.norm_sqr()));
            raw_power.push(b.norm_sqr());
        }
        Spectra {
            n,
            power,
            raw_power,
            acf: OnceCell::new(),
        }
    }

    /// Autocorrelation (biased estimator, `acf[0] == 1`) for lags 0..n, computed on
    /// first use: a series whose periodogram has nothing significant never needs it,
    /// which saves the second transform.
    pub fn acf(&self) -> &[f64] {
        self.acf.get_or_init(|| {
            BUFFERS.with(|b| {
                let b = &mut *b.borrow_mut();
                let m = 2 * self.n;
                let buf = &mut b.power;
                buf.clear();
                buf.resize(m, Complex::new(0.0, 0.0));
                for (k, &p) in self.raw_power.iter().enumerate() {
                    buf[k] = Complex::new(p, 0.0);
                    if k > 0 && k < m - k {
                        buf[m - k] = Complex::new(p, 0.0);
                    }
                }
                transform(&plan(m), buf, &mut b.scratch);
                normalized(&buf[..self.n])
            })
        })
    }
}

/// The autocorrelation (biased, `[0] == 1`) of `x` alone, for lags 0..n.
pub fn autocorrelation(x: &[f64]) -> Vec<f64> {
    BUFFERS.with(|b| {
        let b = &mut *b.borrow_mut();
        let n = x.len();
        let m = 2 * n;
        let scale = scale_of(x);
        let buf = &mut b.signal;
        buf.clear();
        buf.extend(x.iter().map(|v| Complex::new((v / scale) as f32, 0.0)));
        buf.resize(m, Complex::new(0.0, 0.0));
        let fft = plan(m);
        transform(&fft, buf, &mut b.scratch);
        for z in buf.iter_mut() {
            *z = Complex::new(z.norm_sqr(), 0.0);
        }
        transform(&fft, buf, &mut b.scratch);
        normalized(&buf[..n])
    })
}

/// The largest magnitude in `x` (never 0), to scale the series to ±1 before the f32 FFT.
fn scale_of(x: &[f64]) -> f64 {
    crate::analysis::extent::max_abs(x).max(f64::MIN_POSITIVE)
}

/// Lengths whose plans a thread keeps. A plan of 20,000 points holds about half a
/// megabyte of twiddles; rustfft's planner keeps every length it ever planned, so a
/// worker of `serve` meeting series of a thousand lengths (processes that started at
/// different times, windows cut by gaps) grew by hundreds of megabytes within one run.
const CACHED_LENGTHS: usize = 4;

/// The forward plan of one transform length.
struct Plan {
    len: usize,
    forward: Arc<dyn Fft<f32>>,
}

/// This thread's forward plan for length `m`: cached, the least recently used length
/// dropped beyond [`CACHED_LENGTHS`].
fn plan(m: usize) -> Arc<dyn Fft<f32>> {
    PLANS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let found = match cache.iter().position(|p| p.len == m) {
            Some(i) => cache.remove(i),
            None => Plan {
                len: m,
                // a planner per length: rustfft's own cache inside it would never shrink
                forward: FftPlanner::new().plan_fft_forward(m),
            },
        };
        let out = Arc::clone(&found.forward);
        cache.push(found);
        if cache.len() > CACHED_LENGTHS {
            cache.remove(0);
        }
        out
    })
}

/// Lengths whose plans this thread holds, least recently used first.
#[cfg(test)]
fn cached_lengths() -> Vec<usize> {
    PLANS.with(|cache| cache.borrow().iter().map(|p| p.len).collect())
}

/// Autocovariances (real parts, lag 0 first) divided by lag 0's; all zero for a series
/// with no variance.
fn normalized(autocovariance: &[Complex<f32>]) -> Vec<f64> {
    match autocovariance.first().map(|c| f64::from(c.re)) {
        Some(c0) if c0 > 0.0 => autocovariance
            .iter()
            .map(|c| f64::from(c.re) / c0)
            .collect(),
        _ => vec![0.0; autocovariance.len()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acf_matches_the_direct_sum_and_power_peaks_at_the_sine() {
        let n = 64;
        let x: Vec<f64> = (0..n)
            .map(|i| (2.0 * std::f64::consts::PI * i as f64 / 8.0).sin() + 0.1 * (i % 3) as f64)
            .collect();
        let s = Spectra::of(&x);
        let alone = autocorrelation(&x);
        let c0: f64 = x.iter().map(|v| v * v).sum();
        for lag in [1usize, 5, 8, 20] {
            let c: f64 = (0..n - lag).map(|i| x[i] * x[i + lag]).sum();
            assert!((s.acf()[lag] - c / c0).abs() < 1e-5, "lag {lag}");
            assert!((alone[lag] - c / c0).abs() < 1e-5, "lag {lag}");
        }
        let peak = (1..=n)
            .max_by(|a, b| s.power[*a].total_cmp(&s.power[*b]))
            .unwrap();
        assert_eq!(peak, 2 * n / 8, "peak bin");
    }

    #[test]
    fn a_thread_keeps_the_plans_of_its_last_few_lengths_only() {
        let series = |n: usize| -> Vec<f64> { (0..n).map(|i| ((i * 7919) % 101) as f64).collect() };
        std::thread::spawn(move || {
            for n in 100..300 {
                let _ = Spectra::of(&series(n)).acf();
            }
            assert_eq!(cached_lengths(), vec![592, 594, 596, 598]);
            // a length used again moves to the back instead of being planned twice
            let _ = autocorrelation(&series(297));
            assert_eq!(cached_lengths(), vec![592, 596, 598, 594]);
            // and the transforms from a cached plan are the same as from a fresh one
            let x = series(150);
            let fresh = Spectra::of(&x);
            let again = Spectra::of(&x);
            assert_eq!(fresh.power, again.power);
            assert_eq!(fresh.acf(), again.acf());
        })
        .join()
        .unwrap();
    }
}
