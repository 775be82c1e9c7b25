//! What the per-series analyses find for one series: periods, forecasts at the asked
//! horizons and the crossing of a capacity limit. Owned here, beside the analyses that
//! produce them; the pipeline's report and every sink use these types.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::analysis::periodicity::Period;

/// The forecast at one horizon.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HorizonForecast {
    /// How far past the last sample.
    #[serde(with = "seconds")]
    pub horizon: Duration,
    /// The point forecast.
    pub point: f64,
    /// The lower bound of the 95% prediction interval.
    pub lower: f64,
    /// The upper bound of the 95% prediction interval.
    pub upper: f64,
}

/// When a capacity signal is forecast to reach its limit, in seconds after the last sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThresholdEta {
    /// The point forecast's crossing; `None` when it stays below within the horizon.
    pub point: Option<f64>,
    /// The earliest plausible crossing (the upper 95% bound's).
    pub lower: f64,
    /// The latest plausible crossing (the lower 95% bound's); `None` when it may not happen.
    pub upper: Option<f64>,
}

/// What the analyses found for one series.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Analysis {
    /// Periods, strongest first; empty when the series has none.
    pub periods: Vec<Period>,
    /// Why there is no period, when there is none.
    pub no_period_reason: Option<String>,
    /// Forecasts per requested horizon; empty when forecasting failed.
    pub forecasts: Vec<HorizonForecast>,
    /// Why there is no forecast, when there is none.
    pub forecast_error: Option<String>,
    /// The crossing of the threshold within the forecast, when there is one.
    pub time_to_threshold: Option<ThresholdEta>,
}

/// Durations as seconds in JSON.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_round_trip_through_json_with_horizons_in_seconds() {
        let a = Analysis {
            forecasts: vec![HorizonForecast {
                horizon: Duration::from_secs(5400),
                point: 1.0,
                lower: 0.5,
                upper: 2.0,
            }],
            time_to_threshold: Some(ThresholdEta {
                point: Some(60.0),
                lower: 30.0,
                upper: None,
            }),
            ..Analysis::default()
        };
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["forecasts"][0]["horizon"], 5400.0);
        assert_eq!(serde_json::from_value::<Analysis>(json).unwrap(), a);
    }
}
