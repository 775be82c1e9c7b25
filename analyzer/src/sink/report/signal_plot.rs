//! One signal of one owner as an SVG line chart: its recent samples, the detected
//! period's peaks as marks (continued into the forecast), and the forecast at each
//! horizon with its 95% band.

use std::fmt::Write;

use super::escape::escape;
use super::format;
use super::model::SignalData;
use super::scale::{extent, Scale};

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 190.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 24.0;
/// Period marks closer than this many pixels are not drawn: they would fill the plot.
const MIN_MARK_SPACING_PX: f64 = 10.0;

/// The chart of `s`; `None` when it has no sample to draw.
pub fn signal_plot(s: &SignalData) -> Option<String> {
    let points: Vec<(f64, f64)> = s
        .points
        .iter()
        .copied()
        .filter(|(t, v)| t.is_finite() && v.is_finite())
        .collect();
    let (first, last) = (*points.first()?, *points.last()?);
    let forecasts: Vec<(f64, f64, f64, f64)> = s
        .forecasts
        .iter()
        .map(|f| (last.0 + f.horizon.as_secs_f64(), f.point, f.lower, f.upper))
        .filter(|f| f.1.is_finite() && f.2.is_finite() && f.3.is_finite())
        .collect();
    let t_end = forecasts.iter().map(|f| f.0).fold(last.0, f64::max);
    let values = points
        .iter()
        .map(|p| p.1)
        .chain(forecasts.iter().flat_map(|f| [f.1, f.2, f.3]));
    let (lo, hi) = extent(values)?;
    let pad = (hi - lo) * 0.05;
    let x = Scale::new((first.0, t_end), (LEFT, WIDTH - RIGHT));
    let y = Scale::new((lo - pad, hi + pad), (HEIGHT - BOTTOM, TOP));

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="plot signal" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img">"#
    );
    let _ = write!(svg, "<title>{}</title>", escape(&s.signal));
    let _ = write!(
        svg,
        r#"<rect class="frame" x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}"/>"#,
        WIDTH - RIGHT - LEFT,
        HEIGHT - BOTTOM - TOP
    );
    y_axis(&mut svg, &y);
    x_axis(&mut svg, &x, first.0, last.0, &forecasts);
    period_marks(&mut svg, s, &x, (first.0, t_end));
    band(&mut svg, &x, &y, last, &forecasts);
    line(&mut svg, &x, &y, &points);
    let _ = write!(
        svg,
        r#"<text class="heading" x="{LEFT}" y="16">{}</text>"#,
        escape(&heading(s, &forecasts))
    );
    svg.push_str("</svg>");
    Some(svg)
}

/// The chart's title line: signal, strongest period, forecast at the longest horizon.
fn heading(s: &SignalData, forecasts: &[(f64, f64, f64, f64)]) -> String {
    let mut text = s.signal.clone();
    match s.periods.first() {
        Some(p) => {
            let _ = write!(
                text,
                " · period {} (strength {:.2})",
                format::duration(p.period_seconds),
                p.strength
            );
        }
        None => text.push_str(" · no period"),
    }
    match (s.forecasts.last(), forecasts.last()) {
        (Some(h), Some(f)) => {
            let _ = write!(
                text,
                " · in {}: {} [{}, {}]",
                format::duration(h.horizon.as_secs_f64()),
                format::number(f.1),
                format::number(f.2),
                format::number(f.3)
            );
        }
        _ => text.push_str(" · no forecast"),
    }
    text
}

fn y_axis(svg: &mut String, y: &Scale) {
    let (d0, d1) = y.domain();
    for v in [d0, (d0 + d1) / 2.0, d1] {
        let py = y.at(v);
        let _ = write!(
            svg,
            r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{py:.1}" y2="{py:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            WIDTH - RIGHT,
            LEFT - 4.0,
            py + 3.5,
            escape(&format::number(v))
        );
    }
}

fn x_axis(svg: &mut String, x: &Scale, first: f64, last: f64, forecasts: &[(f64, f64, f64, f64)]) {
    let base = HEIGHT - BOTTOM + 14.0;
    let _ = write!(
        svg,
        r#"<text class="tick" x="{LEFT}" y="{base}">{}</text><text class="tick" x="{:.1}" y="{base}" text-anchor="middle">{}</text>"#,
        format::clock(first),
        x.at(last),
        format::clock(last)
    );
    if let Some(f) = forecasts.last() {
        let _ = write!(
            svg,
            r#"<line class="now" x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{:.1}"/><text class="tick" x="{:.1}" y="{base}" text-anchor="end">+{}</text>"#,
            HEIGHT - BOTTOM,
            WIDTH - RIGHT,
            format::duration(f.0 - last),
            px = x.at(last),
        );
    }
}

/// Marks at the strongest period's peaks: back from its last peak over the window and on
/// into the forecast. Without a phase (no last peak) the period is only named.
fn period_marks(svg: &mut String, s: &SignalData, x: &Scale, (t0, t1): (f64, f64)) {
    let Some(p) = s.periods.first() else { return };
    let Some(peak) = p.last_peak_seconds else {
        return;
    };
    let spacing = x.at(t0 + p.period_seconds) - x.at(t0);
    if !(p.period_seconds > 0.0 && spacing >= MIN_MARK_SPACING_PX && peak.is_finite()) {
        return;
    }
    let first_k = ((t0 - peak) / p.period_seconds).ceil() as i64;
    let last_k = ((t1 - peak) / p.period_seconds).floor() as i64;
    svg.push_str(r#"<g class="period">"#);
    for k in first_k..=last_k {
        let px = x.at(peak + k as f64 * p.period_seconds);
        let _ = write!(
            svg,
            r#"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{:.1}"/><path d="M{:.1} {TOP}h8l-4 6z"/>"#,
            HEIGHT - BOTTOM,
            px - 4.0
        );
    }
    svg.push_str("</g>");
}

/// The 95% band from the last sample through each horizon, the point forecast as a
/// dashed line with a dot per horizon.
fn band(svg: &mut String, x: &Scale, y: &Scale, last: (f64, f64), f: &[(f64, f64, f64, f64)]) {
    if f.is_empty() {
        return;
    }
    let mut outline = format!("{:.1},{:.1}", x.at(last.0), y.at(last.1));
    for (t, _, _, upper) in f {
        let _ = write!(outline, " {:.1},{:.1}", x.at(*t), y.at(*upper));
    }
    for (t, _, lower, _) in f.iter().rev() {
        let _ = write!(outline, " {:.1},{:.1}", x.at(*t), y.at(*lower));
    }
    let _ = write!(svg, r#"<polygon class="band" points="{outline}"/>"#);
    let mut path = format!("{:.1},{:.1}", x.at(last.0), y.at(last.1));
    for (t, point, _, _) in f {
        let _ = write!(path, " {:.1},{:.1}", x.at(*t), y.at(*point));
    }
    let _ = write!(svg, r#"<polyline class="forecast" points="{path}"/>"#);
    for (t, point, lower, upper) in f {
        let (px, py) = (x.at(*t), y.at(*point));
        let _ = write!(
            svg,
            r#"<line class="whisker" x1="{px:.1}" x2="{px:.1}" y1="{:.1}" y2="{:.1}"/><circle class="forecast-point" cx="{px:.1}" cy="{py:.1}" r="3"><title>{} [{}, {}]</title></circle>"#,
            y.at(*lower),
            y.at(*upper),
            format::number(*point),
            format::number(*lower),
            format::number(*upper)
        );
    }
}

fn line(svg: &mut String, x: &Scale, y: &Scale, points: &[(f64, f64)]) {
    let mut coords = String::with_capacity(points.len() * 12);
    for (t, v) in points {
        let _ = write!(coords, "{:.1},{:.1} ", x.at(*t), y.at(*v));
    }
    if points.len() == 1 {
        // One sample: a dot, since a one-point polyline draws nothing.
        let _ = write!(
            svg,
            r#"<circle class="sample" cx="{:.1}" cy="{:.1}" r="2.5"/>"#,
            x.at(points[0].0),
            y.at(points[0].1)
        );
    }
    let _ = write!(
        svg,
        r#"<polyline class="series" points="{}"/>"#,
        coords.trim_end()
    );
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::analysis::periodicity::Period;
    use crate::pipeline::HorizonForecast;

    fn signal(points: Vec<(f64, f64)>) -> SignalData {
        SignalData {
            signal: "sm_active".into(),
            points,
            periods: vec![Period {
                period_seconds: 600.0,
                strength: 0.8,
                confidence: 0.99,
                last_peak_seconds: Some(6900.0),
            }],
            no_period_reason: None,
            forecasts: vec![HorizonForecast {
                horizon: Duration::from_secs(3600),
                point: 0.5,
                lower: 0.2,
                upper: 0.9,
            }],
            forecast_error: None,
        }
    }

    fn wave() -> Vec<(f64, f64)> {
        (0..480)
            .map(|i| {
                let t = 15.0 * f64::from(i);
                (t, 0.5 + 0.4 * (t / 600.0 * std::f64::consts::TAU).sin())
            })
            .collect()
    }

    #[test]
    fn draws_the_series_the_period_marks_and_the_forecast_band() {
        let svg = signal_plot(&signal(wave())).unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches(r#"class="series""#).count(), 1);
        assert_eq!(svg.matches(r#"class="band""#).count(), 1);
        assert_eq!(svg.matches(r#"class="forecast-point""#).count(), 1);
        // peaks every 600 s over 0..7185 s of samples plus the 3600 s forecast: at
        // 300, 900, …, 10_500 (6900 - 11 * 600 = 300): 18 marks
        let marks = svg.split(r#"<g class="period">"#).nth(1).unwrap();
        let marks = &marks[..marks.find("</g>").unwrap()];
        assert_eq!(marks.matches("<line").count(), 18, "{marks}");
        assert!(svg.contains("period 10m (strength 0.80)"), "{svg}");
        assert!(svg.contains("in 1h: 0.5 [0.2, 0.9]"), "{svg}");
    }

    #[test]
    fn nothing_to_draw_without_samples_and_a_dot_for_one() {
        assert_eq!(signal_plot(&signal(Vec::new())), None);
        let one = signal_plot(&signal(vec![(0.0, 1.0)])).unwrap();
        assert!(one.contains(r#"class="sample""#), "{one}");
    }

    #[test]
    fn a_signal_name_with_markup_is_escaped() {
        let mut s = signal(wave());
        s.signal = "<b>\"x\"</b>".into();
        let svg = signal_plot(&s).unwrap();
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;b&gt;&quot;x&quot;&lt;/b&gt;"), "{svg}");
    }

    #[test]
    fn no_period_and_no_forecast_are_said_not_drawn() {
        let mut s = signal(wave());
        s.periods.clear();
        s.forecasts.clear();
        let svg = signal_plot(&s).unwrap();
        assert!(!svg.contains(r#"class="band""#) && !svg.contains(r#"class="period""#));
        assert!(svg.contains("no period · no forecast"), "{svg}");
    }
}
