//! Turns a run's findings into the metric families DESIGN.md names ("Analyzer output"),
//! plus the analyzer's own health.
//!
//! GPU series carry `uuid` where workload series carry `workload`, in the same families.
//! A series may have several periods: each is a sample with `rank` ("1" = strongest).

use std::time::Duration;

use super::exposition::{Exposition, Kind};
use crate::pipeline::{RunReport, SeriesReport};

const PERIOD: &str = "poolprof_workload_period_seconds";
const STRENGTH: &str = "poolprof_workload_periodicity_strength";
const CONFIDENCE: &str = "poolprof_workload_period_confidence";
const LAST_PEAK: &str = "poolprof_workload_period_last_peak_timestamp_seconds";
const FORECAST: &str = "poolprof_forecast";
const TIME_TO_THRESHOLD: &str = "poolprof_forecast_time_to_threshold_seconds";
const LAST_SUCCESS: &str = "poolprof_analyzer_last_success_timestamp_seconds";
const LAST_RUN_OK: &str = "poolprof_analyzer_last_run_success";
const ANALYZED: &str = "poolprof_analyzer_series_analyzed";
const SKIPPED: &str = "poolprof_analyzer_series_skipped";
const EMPTY: &str = "poolprof_analyzer_signals_empty";
const FORECASTS_FAILED: &str = "poolprof_analyzer_forecasts_failed";
const DROPPED: &str = "poolprof_analyzer_samples_dropped";
const DURATION: &str = "poolprof_analyzer_run_duration_seconds";

/// The exposition for `report`; `last_run_ok` is false when serving the results of an
/// earlier run because the latest one failed.
pub fn render(report: &RunReport, last_run_ok: bool) -> Exposition {
    let mut out = Exposition::new();
    declare(&mut out);
    super::workloads::declare(&mut out);
    for s in &report.series {
        add_series(&mut out, s);
    }
    super::workloads::add(&mut out, report);
    let h = &report.health;
    out.set(LAST_SUCCESS, &[], h.finished_at);
    out.set(LAST_RUN_OK, &[], if last_run_ok { 1.0 } else { 0.0 });
    out.set(ANALYZED, &[], h.series_analyzed as f64);
    out.set(
        SKIPPED,
        &[("reason", "no_samples")],
        h.series_skipped_no_samples as f64,
    );
    out.set(
        SKIPPED,
        &[("reason", "no_identity")],
        h.series_skipped_no_identity as f64,
    );
    out.set(
        SKIPPED,
        &[("reason", "analysis_failed")],
        h.series_failed as f64,
    );
    out.set(EMPTY, &[], h.signals_empty as f64);
    out.set(FORECASTS_FAILED, &[], h.forecasts_failed as f64);
    out.set(DROPPED, &[("reason", "nan")], h.dropped.nan as f64);
    out.set(DROPPED, &[("reason", "inf")], h.dropped.inf as f64);
    out.set(DURATION, &[], h.duration.as_secs_f64());
    out
}

fn declare(out: &mut Exposition) {
    let g = Kind::Gauge;
    out.family(PERIOD, g, "Seconds between repeats of a signal, per workload or GPU (uuid); rank 1 is the strongest period.");
    out.family(
        STRENGTH,
        g,
        "Share of the signal's variance the period explains, 0-1.",
    );
    out.family(CONFIDENCE, g, "Confidence of the detected period, 0-1.");
    out.family(
        LAST_PEAK,
        g,
        "The period's phase: Unix time of the cycle's last peak in the analysed window.",
    );
    out.family(FORECAST, g, "Forecast of a signal at a horizon after the window's end; bound lower/upper is the 95% prediction interval.");
    out.family(TIME_TO_THRESHOLD, g, "Seconds after the last sample until a capacity signal is forecast to reach its limit; bound lower/upper from the 95% interval; absent when it does not within the horizon.");
    out.family(
        LAST_SUCCESS,
        g,
        "Unix time the last successful analysis run finished.",
    );
    out.family(
        LAST_RUN_OK,
        g,
        "1 when the latest run succeeded, 0 when these are an earlier run's results.",
    );
    out.family(ANALYZED, g, "Series analyzed in the last successful run.");
    out.family(
        SKIPPED,
        g,
        "Series skipped in the last successful run, by reason.",
    );
    out.family(
        EMPTY,
        g,
        "Configured signals whose query returned no series in the last successful run.",
    );
    out.family(
        FORECASTS_FAILED,
        g,
        "Series whose forecast failed in the last successful run.",
    );
    out.family(
        DROPPED,
        g,
        "Non-finite samples dropped in the last successful run, by reason.",
    );
    out.family(
        DURATION,
        g,
        "Wall time of the last successful run in seconds.",
    );
}

fn add_series(out: &mut Exposition, s: &SeriesReport) {
    let id = s.identity.label();
    let owner = s.owner.as_str();
    let signal = s.signal.as_str();
    for (i, p) in s.analysis.periods.iter().enumerate() {
        let rank = (i + 1).to_string();
        let labels = [(id, owner), ("signal", signal), ("rank", rank.as_str())];
        out.set(PERIOD, &labels, p.period_seconds);
        out.set(STRENGTH, &labels, p.strength);
        out.set(CONFIDENCE, &labels, p.confidence);
        if let Some(peak) = p.last_peak_seconds {
            out.set(LAST_PEAK, &labels, peak);
        }
    }
    for f in &s.analysis.forecasts {
        let horizon = format_horizon(f.horizon);
        for (bound, v) in [("point", f.point), ("lower", f.lower), ("upper", f.upper)] {
            out.set(
                FORECAST,
                &[
                    (id, owner),
                    ("signal", signal),
                    ("horizon", &horizon),
                    ("bound", bound),
                ],
                v,
            );
        }
    }
    if let Some(eta) = &s.analysis.time_to_threshold {
        let bounds = [
            ("point", eta.point),
            ("lower", Some(eta.lower)),
            ("upper", eta.upper),
        ];
        for (bound, v) in bounds {
            if let Some(v) = v {
                out.set(
                    TIME_TO_THRESHOLD,
                    &[(id, owner), ("signal", signal), ("bound", bound)],
                    v,
                );
            }
        }
    }
}

/// A horizon as a PromQL-style duration: `1h`, `15m`, `1h30m`, `90s` → `1m30s`.
pub fn format_horizon(d: Duration) -> String {
    let mut secs = d.as_secs();
    if secs == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if secs >= size {
            out.push_str(&format!("{}{unit}", secs / size));
            secs %= size;
        }
    }
    out
}
