//! Every analysis of a series takes any finite values, of any length and shape, and
//! answers with numbers or an error: no panic, no NaN, bands that nest around their
//! point. Series are drawn from shapes the field produces (idle, pinned, sawtooth,
//! counts, random walks, one absurd sample) at scales from subnormal to near f64::MAX.

use poolprof_analyzer::analysis::forecast::{
    forecast, time_to_threshold, Forecast, ForecastConfig, Method, PeriodChoice,
};
use poolprof_analyzer::analysis::periodicity::{detect_periods, PeriodConfig, PeriodOutcome};
use poolprof_analyzer::series::Series;
use proptest::prelude::*;

/// A draw of one series: the shape and everything it depends on.
#[derive(Debug, Clone)]
struct Draw {
    kind: u8,
    n: usize,
    period: usize,
    scale: f64,
    seed: u64,
    poison: Option<(usize, f64)>,
}

fn draw() -> impl Strategy<Value = Draw> {
    let scales = prop::sample::select(vec![5e-324, 1e-300, 1e-9, 1.0, 100.0, 1e12, 1e300]);
    let poison = prop::option::of((
        0usize..1000,
        prop::sample::select(vec![-1e10, 1e200, -f64::MAX, f64::MAX, 0.0]),
    ));
    (
        0u8..10,
        1usize..800,
        2usize..200,
        scales,
        any::<u64>(),
        poison,
    )
        .prop_map(|(kind, n, period, scale, seed, poison)| Draw {
            kind,
            n,
            period,
            scale,
            seed,
            poison,
        })
}

impl Draw {
    fn values(&self) -> Vec<f64> {
        let mut s = self.seed | 1;
        let mut u = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut level = 0.0;
        let mut y: Vec<f64> = (0..self.n)
            .map(|t| {
                let e = u() - 0.5;
                let v = match self.kind {
                    0 => 0.0,
                    1 => f64::from(u() < 0.02),
                    2 => (t % self.period) as f64,
                    3 => {
                        level += e;
                        level
                    }
                    4 => 100.0 * ((t / self.period) % 2) as f64,
                    5 => (e * 10.0).round(),
                    6 => (std::f64::consts::TAU * t as f64 / self.period as f64).sin() + 0.1 * e,
                    7 => 5.0 + 1e-9 * e,
                    8 => (t as f64).powi(3),
                    _ => (e * 3.0).floor().max(0.0),
                };
                v * self.scale
            })
            .collect();
        if let Some((at, v)) = self.poison {
            if let Some(slot) = y.get_mut(at) {
                *slot = v;
            }
        }
        y
    }
}

fn check_forecast(f: &Forecast, h: usize) -> Result<(), TestCaseError> {
    for v in [&f.point, &f.lower_80, &f.upper_80, &f.lower_95, &f.upper_95] {
        prop_assert_eq!(v.len(), h);
        prop_assert!(v.iter().all(|x| x.is_finite()), "{:?}", f);
    }
    for j in 0..h {
        let chain = [
            f.lower_95[j],
            f.lower_80[j],
            f.point[j],
            f.upper_80[j],
            f.upper_95[j],
        ];
        prop_assert!(
            chain.windows(2).all(|w| w[0] <= w[1]),
            "step {}: {:?}",
            j,
            chain
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_finite_series_gets_numbers_or_an_error(
        d in draw(),
        h in prop::sample::select(vec![1usize, 5, 48, 288]),
        step in prop::sample::select(vec![1.0, 15.0, 300.0, 3600.0]),
        choice in 0u8..4,
        aicc in any::<bool>(),
        threshold in prop::sample::select(vec![0.0, 1.0, -1e308, 1e308]),
    ) {
        let series = Series::from_values(&d.values(), step);
        if let PeriodOutcome::Periodic(periods) = detect_periods(&series, &PeriodConfig::default()) {
            for p in periods {
                prop_assert!(p.period_seconds.is_finite() && p.period_seconds > 0.0, "{:?}", p);
                prop_assert!((0.0..=1.0).contains(&p.confidence), "{:?}", p);
                prop_assert!((0.0..=1.0).contains(&p.strength), "{:?}", p);
            }
        }
        let config = ForecastConfig {
            horizon_steps: h,
            period: match choice {
                0 => PeriodChoice::Auto,
                1 => PeriodChoice::None,
                2 => PeriodChoice::Seconds(step * 7.0),
                _ => PeriodChoice::Detected,
            },
            method: if aicc { Method::Aicc } else { Method::Validated },
            ..ForecastConfig::default()
        };
        if let Ok(f) = forecast(&series, &config) {
            check_forecast(&f, h)?;
            let _ = time_to_threshold(&f, threshold);
        }
    }
}
