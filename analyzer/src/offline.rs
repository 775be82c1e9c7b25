//! The offline subcommands: `periods` and `forecast` over a file, JSON on stdout.
//!
//! Output shapes are DESIGN.md's: for one series `{"periods":[…]}` (with `"reason"`
//! when there is none) and `{"model":…,"period_seconds":…,"forecast":[…],"lower":[…],
//! "upper":[…]}` (95% bounds; the 80% bounds as `lower_80`/`upper_80`). A file with
//! several series (a `query_range` matrix) gives `{"series":[{"labels":{…},…}]}` with
//! one such object per series.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analysis::forecast::{forecast, ForecastConfig, PeriodChoice};
use crate::analysis::periodicity::{detect_periods, Period, PeriodConfig, PeriodOutcome};
use crate::series::Series;
use crate::source::file::{read_file, FileError};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// One JSON document on stdout.
    #[default]
    Json,
}

/// `poolprof-analyzer periods`: the periods of the series in a file.
#[derive(Debug, Clone, clap::Args)]
pub struct PeriodsArgs {
    /// CSV (values, or `timestamp,value`; header allowed) or a query_range JSON response.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Grid step in seconds (default: the median spacing; 1 s per row for one-column CSV).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub step: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// `poolprof-analyzer forecast`: forecasts of the series in a file.
#[derive(Debug, Clone, clap::Args)]
pub struct ForecastArgs {
    /// CSV (values, or `timestamp,value`; header allowed) or a query_range JSON response.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Steps to forecast after the last sample.
    #[arg(long, value_name = "N")]
    pub horizon: usize,
    /// Grid step in seconds (default: the median spacing; 1 s per row for one-column CSV).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub step: Option<f64>,
    /// Season: `auto` (detect), `none`, or a period in seconds.
    #[arg(long, value_name = "auto|none|SECONDS", default_value = "auto", value_parser = parse_period)]
    pub period: PeriodChoice,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Json)]
    pub format: Format,
}

/// Longest accepted `--step`: a year.
const MAX_STEP_SECONDS: f64 = 366.0 * 86400.0;

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= MAX_STEP_SECONDS => Ok(v),
        _ => Err(format!(
            "`{s}` is not a number of seconds between 0 and {MAX_STEP_SECONDS}"
        )),
    }
}

fn parse_period(s: &str) -> Result<PeriodChoice, String> {
    match s {
        "auto" => Ok(PeriodChoice::Auto),
        "none" => Ok(PeriodChoice::None),
        _ => parse_seconds(s)
            .map(PeriodChoice::Seconds)
            .map_err(|e| format!("{e}; or use `auto` or `none`")),
    }
}

/// Why an offline command failed.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// The input file is unreadable or malformed.
    #[error(transparent)]
    Input(#[from] FileError),
    /// The input holds no usable series.
    #[error("{0}: no samples found; check that the file holds a series")]
    Empty(PathBuf),
    /// The series cannot be analysed as asked (too short, bad horizon).
    #[error("{path}: {message}")]
    Unusable {
        /// The input file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Writing the result failed.
    #[error("cannot write the result: {0}")]
    Write(#[from] std::io::Error),
}

impl OfflineError {
    /// The process exit code: 2 for bad input, 1 for a failure to write.
    pub fn exit_code(&self) -> i32 {
        match self {
            OfflineError::Write(_) => 1,
            _ => 2,
        }
    }
}

/// Seconds per row of a one-column CSV when `--step` is not given.
const DEFAULT_ROW_SECONDS: f64 = 1.0;

fn load(input: &Path, step: Option<f64>) -> Result<Vec<Series>, OfflineError> {
    let file = read_file(input, step.unwrap_or(DEFAULT_ROW_SECONDS))?;
    if file.dropped_non_finite > 0 {
        tracing::warn!(
            file = %input.display(),
            dropped = file.dropped_non_finite,
            "dropped NaN/Inf samples"
        );
    }
    let series: Vec<Series> = file
        .series
        .into_iter()
        .filter(|s| !s.points.is_empty())
        .collect();
    if series.is_empty() {
        return Err(OfflineError::Empty(input.to_path_buf()));
    }
    Ok(series)
}

#[derive(Serialize)]
struct PeriodsJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
    periods: Vec<Period>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

fn periods_json(outcome: PeriodOutcome, labels: Option<BTreeMap<String, String>>) -> PeriodsJson {
    let periods = outcome.periods().to_vec();
    let reason = match outcome {
        PeriodOutcome::NoPeriod { reason } => Some(reason),
        PeriodOutcome::Periodic(_) => None,
    };
    PeriodsJson {
        labels,
        periods,
        reason,
    }
}

#[derive(Serialize)]
struct Many<T> {
    series: Vec<T>,
}

fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<(), OfflineError> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)?;
    Ok(())
}

/// Runs `periods`: writes the periods of every series in the file as JSON.
pub fn run_periods(args: &PeriodsArgs, out: &mut dyn Write) -> Result<(), OfflineError> {
    let series = load(&args.input, args.step)?;
    let config = PeriodConfig {
        step_seconds: args.step,
        ..PeriodConfig::default()
    };
    if let [one] = series.as_slice() {
        return write_json(out, &periods_json(detect_periods(one, &config), None));
    }
    let all = series
        .iter()
        .map(|s| periods_json(detect_periods(s, &config), Some(s.labels.clone())))
        .collect();
    write_json(out, &Many { series: all })
}

/// One series' entry in a multi-series forecast: the forecast, or why there is none.
#[derive(Serialize)]
#[serde(untagged)]
enum ForecastItem {
    Ok(ForecastJson),
    Failed {
        labels: BTreeMap<String, String>,
        error: String,
    },
}

#[derive(Serialize)]
struct ForecastJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<BTreeMap<String, String>>,
    model: String,
    period_seconds: Option<f64>,
    step_seconds: f64,
    forecast: Vec<f64>,
    lower: Vec<f64>,
    upper: Vec<f64>,
    lower_80: Vec<f64>,
    upper_80: Vec<f64>,
}

/// Runs `forecast`: writes a forecast of `--horizon` steps for every series as JSON.
pub fn run_forecast(args: &ForecastArgs, out: &mut dyn Write) -> Result<(), OfflineError> {
    let series = load(&args.input, args.step)?;
    let config = ForecastConfig {
        horizon_steps: args.horizon,
        step_seconds: args.step,
        period: args.period,
        ..ForecastConfig::default()
    };
    let one = |s: &Series, labels| -> Result<ForecastJson, String> {
        let f = forecast(s, &config).map_err(|e| e.to_string())?;
        Ok(ForecastJson {
            labels,
            model: f.model,
            period_seconds: f.period_seconds,
            step_seconds: f.step_seconds,
            forecast: f.point,
            lower: f.lower_95,
            upper: f.upper_95,
            lower_80: f.lower_80,
            upper_80: f.upper_80,
        })
    };
    if let [single] = series.as_slice() {
        let json = one(single, None).map_err(|message| OfflineError::Unusable {
            path: args.input.clone(),
            message,
        })?;
        return write_json(out, &json);
    }
    let all: Vec<ForecastItem> = series
        .iter()
        .map(|s| {
            one(s, Some(s.labels.clone())).map_or_else(
                |error| ForecastItem::Failed {
                    labels: s.labels.clone(),
                    error,
                },
                ForecastItem::Ok,
            )
        })
        .collect();
    write_json(out, &Many { series: all })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn file(contents: &str, suffix: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(suffix).tempfile().unwrap();
        f.write_all(contents.as_bytes()).unwrap();
        f
    }

    fn seasonal_csv(n: usize, period: f64, step: f64) -> String {
        let mut s = String::from("timestamp,value\n");
        for i in 0..n {
            let v = 10.0
                + (2.0 * std::f64::consts::PI * i as f64 / period).sin()
                + 0.05 * (((i * 7919) % 101) as f64 / 101.0 - 0.5);
            s.push_str(&format!("{},{v}\n", 1.7e9 + i as f64 * step));
        }
        s
    }

    fn periods(path: &std::path::Path, step: Option<f64>) -> Result<Value, OfflineError> {
        let args = PeriodsArgs {
            input: path.to_path_buf(),
            step,
            format: Format::Json,
        };
        let mut out = Vec::new();
        run_periods(&args, &mut out)?;
        Ok(serde_json::from_slice(&out).expect("valid JSON"))
    }

    fn forecast_json(path: &std::path::Path, horizon: usize) -> Result<Value, OfflineError> {
        let args = ForecastArgs {
            input: path.to_path_buf(),
            horizon,
            step: None,
            period: PeriodChoice::Auto,
            format: Format::Json,
        };
        let mut out = Vec::new();
        run_forecast(&args, &mut out)?;
        Ok(serde_json::from_slice(&out).expect("valid JSON"))
    }

    #[test]
    fn periods_json_has_the_design_shape() {
        let f = file(&seasonal_csv(600, 24.0, 60.0), ".csv");
        let v = periods(f.path(), None).unwrap();
        let p = &v["periods"][0];
        assert!(
            (p["period_seconds"].as_f64().unwrap() - 1440.0).abs() < 1440.0 * 0.02,
            "{v}"
        );
        for key in ["strength", "confidence"] {
            let x = p[key].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{key} = {x}");
        }
        assert!(v.get("reason").is_none());
    }

    #[test]
    fn no_period_carries_a_reason() {
        let f = file("1\n2\n3\n", ".csv");
        let v = periods(f.path(), None).unwrap();
        assert_eq!(v["periods"], Value::Array(vec![]));
        assert!(v["reason"].as_str().unwrap().contains("too short"), "{v}");
    }

    #[test]
    fn forecast_has_exactly_the_horizon_and_ordered_bounds() {
        let f = file(&seasonal_csv(600, 24.0, 60.0), ".csv");
        let v = forecast_json(f.path(), 37).unwrap();
        let arr = |k: &str| {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect::<Vec<_>>()
        };
        let (point, lower, upper) = (arr("forecast"), arr("lower"), arr("upper"));
        assert_eq!(point.len(), 37);
        assert_eq!(lower.len(), 37);
        assert_eq!(upper.len(), 37);
        assert!((0..37).all(|i| lower[i] < point[i] && point[i] < upper[i]));
        // the model chosen by validation: a seasonal one on a clean daily wave
        let model = v["model"].as_str().unwrap();
        assert!(model.contains("24"), "{v}");
        let period = v["period_seconds"].as_f64().unwrap();
        assert!((period - 1440.0).abs() < 1440.0 * 0.01, "{v}");
    }

    #[test]
    fn a_matrix_gives_one_entry_per_series_with_labels() {
        let values: Vec<String> = (0..200)
            .map(|i| format!("[{},\"{}\"]", 1000 + 15 * i, (i % 10) as f64))
            .collect();
        let json = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[
              {{"metric":{{"uuid":"a"}},"values":[{}]}},
              {{"metric":{{"uuid":"b"}},"values":[[1000,"1"],[1015,"2"]]}}]}}}}"#,
            values.join(",")
        );
        let f = file(&json, ".json");
        let v = periods(f.path(), None).unwrap();
        let series = v["series"].as_array().unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0]["labels"]["uuid"], "a");
        assert!((series[0]["periods"][0]["period_seconds"].as_f64().unwrap() - 150.0).abs() < 3.0);
        let fc = forecast_json(f.path(), 5).unwrap();
        assert_eq!(fc["series"][0]["forecast"].as_array().unwrap().len(), 5);
        assert!(
            fc["series"][1]["error"]
                .as_str()
                .unwrap()
                .contains("too short"),
            "{fc}"
        );
    }

    #[test]
    fn bad_input_exits_2_and_names_the_line_or_path() {
        let f = file("t,v\n1,2\n2,oops\n", ".csv");
        let e = periods(f.path(), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("line 3") && msg.contains("oops"), "{msg}");
        assert!(msg.contains(&f.path().display().to_string()), "{msg}");

        let j = file(
            "{\"data\": {\"resultType\": \"matrix\", \"result\": [}",
            ".json",
        );
        let e = forecast_json(j.path(), 3).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("line 1 column"), "{e}");

        let missing = std::path::Path::new("does/not/exist.csv");
        let e = periods(missing, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("does/not/exist.csv"), "{e}");

        let empty = file("value\n", ".csv");
        assert!(matches!(
            periods(empty.path(), None),
            Err(OfflineError::Empty(_))
        ));

        let f = file(&seasonal_csv(100, 24.0, 60.0), ".csv");
        let e = forecast_json(f.path(), 0).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("horizon"), "{e}");
    }

    #[test]
    fn extreme_values_are_analysed_not_panicked_on() {
        let rows = |f: &dyn Fn(usize) -> String| -> String {
            (0..600).map(|i| format!("{}\n", f(i))).collect()
        };
        let wave = |i: usize| 10.0 + (2.0 * std::f64::consts::PI * i as f64 / 24.0).sin();
        for csv in [
            rows(&|i| {
                if i == 300 {
                    "1.7e308".into()
                } else {
                    wave(i).to_string()
                }
            }),
            rows(&|i| {
                if i == 300 {
                    "1e200".into()
                } else {
                    wave(i).to_string()
                }
            }),
            rows(&|i| {
                if i % 2 == 0 {
                    "1e308".into()
                } else {
                    "-1e308".into()
                }
            }),
            rows(&|i| format!("{:e}", (wave(i) - 10.0) * 1e-310)),
            rows(&|_| "5e-324".into()),
        ] {
            let f = file(&csv, ".csv");
            let p = periods(f.path(), Some(60.0)).unwrap();
            assert!(p["periods"].is_array(), "{p}");
            let fc = forecast_json(f.path(), 10).unwrap();
            for key in ["forecast", "lower", "upper", "lower_80", "upper_80"] {
                let v = fc[key].as_array().unwrap_or_else(|| panic!("{fc}"));
                assert!(
                    v.iter().all(|x| x.as_f64().is_some_and(f64::is_finite)),
                    "{fc}"
                );
            }
        }
    }

    #[test]
    fn an_unterminated_quote_is_a_parse_error_naming_the_line() {
        let f = file("value\n1\n2\n\"3\n4\n", ".csv");
        let e = periods(f.path(), None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("line 4") && msg.contains("never closed"),
            "{msg}"
        );
    }

    #[test]
    fn flags_are_validated_by_clap() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: ForecastArgs,
        }
        let ok = Cli::try_parse_from(["x", "--input", "f", "--horizon", "5", "--period", "3600"])
            .unwrap();
        assert_eq!(ok.args.period, PeriodChoice::Seconds(3600.0));
        assert!(
            Cli::try_parse_from(["x", "--input", "f", "--horizon", "5", "--period", "daily"])
                .is_err()
        );
        assert!(
            Cli::try_parse_from(["x", "--input", "f", "--horizon", "5", "--step", "-1"]).is_err()
        );
        assert!(Cli::try_parse_from(["x", "--input", "f", "--horizon", "-5"]).is_err());
    }
}
