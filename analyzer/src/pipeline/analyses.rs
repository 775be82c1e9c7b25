//! The real analyses behind the pipeline's [`Analyze`] seam: periodicity, then a
//! forecast seasoned with the strongest period that fits, then the capacity crossing.

use super::report::{Analysis, AnalysisRequest, Analyze, HorizonForecast, ThresholdEta};
use crate::analysis::forecast::{self, Forecast, ForecastConfig, PeriodChoice};
use crate::analysis::periodicity::{self, PeriodConfig, PeriodOutcome};
use crate::series::Series;

/// Periods, forecasts and time to threshold, with the detector's settings.
#[derive(Debug, Clone, Default)]
pub struct Analyses {
    /// Detector settings; the step is taken from each request.
    pub periods: PeriodConfig,
}

impl Analyze for Analyses {
    fn analyze(&self, series: &Series, request: &AnalysisRequest) -> Analysis {
        let step = request.step_seconds;
        let config = PeriodConfig {
            step_seconds: Some(step),
            ..self.periods.clone()
        };
        let detection = periodicity::detect_with_seasons(series, &config);
        let (periods, no_period_reason) = match detection.reported {
            PeriodOutcome::Periodic(p) => (p, None),
            PeriodOutcome::NoPeriod { reason } => (Vec::new(), Some(reason)),
        };
        let longest = request.horizons.iter().max().copied().unwrap_or_default();
        let fc = ForecastConfig {
            horizon_steps: ((longest.as_secs_f64() / step).ceil() as usize).max(1),
            step_seconds: Some(step),
            // The detector already ran: its answer, not `Auto`, which would detect again;
            // every period it found (also those held noise could show, which validation
            // judges), so that a day and a week are modelled together.
            period: PeriodChoice::Detected,
            more_periods: detection.seasons,
            ..ForecastConfig::default()
        };
        let mut analysis = Analysis {
            periods: periods.clone(),
            no_period_reason,
            ..Analysis::default()
        };
        match forecast::forecast(series, &fc) {
            Ok(f) => {
                analysis.forecasts = at_horizons(&f, request);
                analysis.time_to_threshold = request
                    .threshold
                    .and_then(|t| forecast::time_to_threshold(&f, t))
                    .map(|c| ThresholdEta {
                        point: c.seconds_point,
                        lower: c.seconds_earliest,
                        upper: c.seconds_latest,
                    });
            }
            Err(e) => analysis.forecast_error = Some(e.to_string()),
        }
        analysis
    }
}

/// The forecast's value and 95% interval at each requested horizon.
fn at_horizons(f: &Forecast, request: &AnalysisRequest) -> Vec<HorizonForecast> {
    let n = f.point.len();
    if n == 0 || f.step_seconds <= 0.0 {
        return Vec::new();
    }
    request
        .horizons
        .iter()
        .map(|h| {
            let i = ((h.as_secs_f64() / f.step_seconds).round() as usize).clamp(1, n) - 1;
            HorizonForecast {
                horizon: *h,
                point: f.point[i],
                lower: f.lower_95[i],
                upper: f.upper_95[i],
            }
        })
        .collect()
}
