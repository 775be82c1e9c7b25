//! The co-location matrix for one sharing mode as an SVG heat map: a row and a column
//! per workload, each cell coloured by the pair's score under that mode and labelled
//! with the mode recommended for the pair.

use std::collections::HashMap;
use std::fmt::Write;

use super::escape::escape;
use super::format::{self, short};
use super::model::{ColocationMatrix, PairCell};
use crate::analysis::colocate::{Mode, Recommendation};

/// The most workloads drawn in one matrix (3,600 cells); the JSON and CSV hold all.
pub const MAX_MATRIX_WORKLOADS: usize = 60;

const LEGEND: f64 = 34.0;
/// Pixels per character of an 11 px label, a little generous.
const CHAR_PX: f64 = 6.6;
/// The legend's width right of the row labels.
const LEGEND_WIDTH: f64 = 330.0;

/// The short name of a mode in a cell.
fn mode_text(mode: Mode) -> &'static str {
    match mode {
        Mode::TimeSlicing => "TS",
        Mode::Mps => "MPS",
        Mode::Mig => "MIG",
    }
}

/// A score's colour: red at 0 through yellow to green at 1.
pub fn score_colour(score: f64) -> String {
    let s = if score.is_finite() {
        score.clamp(0.0, 1.0)
    } else {
        0.0
    };
    format!("hsl({:.0},70%,{:.0}%)", 120.0 * s, 62.0 - 10.0 * s)
}

/// The heat map of `matrix` under `mode`; `None` when fewer than two workloads were paired.
pub fn heat_map(matrix: &ColocationMatrix, mode: Mode) -> Option<String> {
    let names = &matrix.workloads[..matrix.workloads.len().min(MAX_MATRIX_WORKLOADS)];
    let n = names.len();
    if n < 2 {
        return None;
    }
    let pairs: HashMap<(&str, &str), &PairCell> = matrix
        .pairs
        .iter()
        .map(|p| ((p.workload_a.as_str(), p.workload_b.as_str()), p))
        .collect();
    let cell = (520.0 / n as f64).clamp(14.0, 48.0);
    let side = cell * n as f64;
    // Room for the longest name: beside the rows, and above the columns where the
    // names are turned 50 degrees.
    let longest = names
        .iter()
        .map(|n| short(n).chars().count())
        .max()
        .unwrap_or(0) as f64;
    let labels = (longest * CHAR_PX + 12.0).clamp(50.0, 170.0);
    let top = (longest * CHAR_PX * 0.77 + 16.0).clamp(30.0, 140.0);
    let (width, height) = (labels + side.max(LEGEND_WIDTH) + 10.0, top + side + LEGEND);
    let mut svg = format!(
        r#"<svg class="plot matrix" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}" role="img"><title>co-location under {}</title>"#,
        mode.label()
    );
    for (i, name) in names.iter().enumerate() {
        let mid = i as f64 * cell + cell / 2.0;
        let _ = write!(
            svg,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><text class="label" transform="translate({:.1} {:.1}) rotate(-50)">{}</text>"#,
            labels - 6.0,
            top + mid + 4.0,
            escape(&short(name)),
            labels + mid + 4.0,
            top - 6.0,
            escape(&short(name))
        );
    }
    for (r, a) in names.iter().enumerate() {
        for (c, b) in names.iter().enumerate() {
            let key = if a <= b {
                (a.as_str(), b.as_str())
            } else {
                (b.as_str(), a.as_str())
            };
            let pair = if r == c {
                None
            } else {
                pairs.get(&key).copied()
            };
            let (x, y) = (labels + c as f64 * cell, top + r as f64 * cell);
            cell_svg(&mut svg, (x, y, cell), a, b, pair, mode);
        }
    }
    legend(&mut svg, labels, top + side + 10.0);
    svg.push_str("</svg>");
    Some(svg)
}

/// One cell: grey on the diagonal (a workload with itself) and where the pair cannot
/// run under `mode`; else the score's colour. The text is the pair's recommended mode,
/// bold where it is this mode, `avoid` where the verdict is to keep them apart.
fn cell_svg(
    svg: &mut String,
    (x, y, size): (f64, f64, f64),
    a: &str,
    b: &str,
    pair: Option<&PairCell>,
    mode: Mode,
) {
    let Some(pair) = pair else {
        let _ = write!(
            svg,
            r#"<rect class="cell none" x="{x:.1}" y="{y:.1}" width="{size:.1}" height="{size:.1}"><title>{}</title></rect>"#,
            escape(if a == b { a } else { "not paired" })
        );
        return;
    };
    let score = pair.score(mode);
    let fill = match score {
        Some(s) if s.feasible => score_colour(s.score),
        _ => "#cfcfcf".to_string(),
    };
    let text = match (pair.recommendation, pair.recommended_mode) {
        (Recommendation::Avoid, _) | (_, None) => "avoid",
        (_, Some(m)) => mode_text(m),
    };
    let tip = format!(
        "{a} + {b} under {}: {} · recommended: {} ({})",
        mode.label(),
        match score {
            Some(s) if s.feasible => format!("score {}", format::number(s.score)),
            _ => "does not fit".to_string(),
        },
        pair.recommended_mode.map_or("none", Mode::label),
        pair.recommendation.label()
    );
    let _ = write!(
        svg,
        r#"<rect class="cell" x="{x:.1}" y="{y:.1}" width="{size:.1}" height="{size:.1}" fill="{fill}"><title>{}</title></rect>"#,
        escape(&tip)
    );
    if size >= 26.0 {
        let weight = if pair.recommended_mode == Some(mode) {
            " strong"
        } else {
            ""
        };
        let _ = write!(
            svg,
            r#"<text class="cell-text{weight}" x="{:.1}" y="{:.1}" text-anchor="middle">{text}</text>"#,
            x + size / 2.0,
            y + size / 2.0 + 4.0
        );
    }
}

/// The colour scale, 0 to 1, in ten steps, and the grey of "does not fit".
fn legend(svg: &mut String, left: f64, y: f64) {
    for i in 0..10 {
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{y:.1}" width="20" height="10" fill="{}"/>"#,
            left + 20.0 * f64::from(i),
            score_colour((f64::from(i) + 0.5) / 10.0)
        );
    }
    let _ = write!(
        svg,
        r##"<text class="tick" x="{:.1}" y="{:.1}">score 0</text><text class="tick" x="{:.1}" y="{:.1}">1</text><rect x="{:.1}" y="{y:.1}" width="10" height="10" fill="#cfcfcf"/><text class="tick" x="{:.1}" y="{:.1}">does not fit</text>"##,
        left - 44.0,
        y + 9.0,
        left + 204.0,
        y + 9.0,
        left + 226.0,
        left + 240.0,
        y + 9.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::report::model::ModeScore;

    fn pair(a: &str, b: &str, score: f64, best: Mode, verdict: Recommendation) -> PairCell {
        PairCell {
            workload_a: a.into(),
            workload_b: b.into(),
            recommended_mode: Some(best),
            recommendation: verdict,
            modes: Mode::ALL
                .iter()
                .map(|&mode| ModeScore {
                    mode,
                    feasible: mode != Mode::Mig,
                    score,
                })
                .collect(),
        }
    }

    fn matrix(n: usize) -> ColocationMatrix {
        let names: Vec<String> = (0..n).map(|i| format!("w{i:02}")).collect();
        let mut pairs = Vec::new();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                pairs.push(pair(a, b, 0.8, Mode::Mps, Recommendation::Good));
            }
        }
        ColocationMatrix {
            workloads: names,
            pairs,
        }
    }

    #[test]
    fn n_workloads_make_n_by_n_cells() {
        for n in [2, 3, 7] {
            let svg = heat_map(&matrix(n), Mode::Mps).unwrap();
            assert_eq!(svg.matches("<rect class=\"cell").count(), n * n, "n = {n}");
            assert_eq!(
                svg.matches("<rect class=\"cell none\"").count(),
                n,
                "the diagonal"
            );
            assert_eq!(svg.matches(">MPS</text>").count(), n * (n - 1), "n = {n}");
        }
    }

    #[test]
    fn the_colour_follows_the_mode_and_infeasible_cells_are_grey() {
        let m = ColocationMatrix {
            workloads: vec!["a".into(), "b".into()],
            pairs: vec![pair("a", "b", 0.9, Mode::TimeSlicing, Recommendation::Good)],
        };
        let ts = heat_map(&m, Mode::TimeSlicing).unwrap();
        assert_eq!(
            ts.matches(&format!("fill=\"{}\"", score_colour(0.9)))
                .count(),
            2
        );
        assert!(ts.contains(r#"class="cell-text strong""#), "{ts}");
        let mig = heat_map(&m, Mode::Mig).unwrap();
        assert_eq!(mig.matches(r##"class="cell" x"##).count(), 2);
        assert!(mig.contains("under mig: does not fit"), "{mig}");
        assert!(!mig.contains("strong"), "{mig}");
    }

    #[test]
    fn avoided_pairs_say_so_and_names_are_escaped() {
        let m = ColocationMatrix {
            workloads: vec!["<a>".into(), "b&c".into()],
            pairs: vec![pair("<a>", "b&c", 0.3, Mode::Mps, Recommendation::Avoid)],
        };
        let svg = heat_map(&m, Mode::Mps).unwrap();
        assert_eq!(svg.matches(">avoid</text>").count(), 2, "{svg}");
        assert!(!svg.contains("<a>") && !svg.contains("b&c"), "{svg}");
        assert!(
            svg.contains("&lt;a&gt;") && svg.contains("b&amp;c"),
            "{svg}"
        );
    }

    #[test]
    fn fewer_than_two_workloads_draw_no_matrix_and_many_are_capped() {
        assert_eq!(heat_map(&matrix(1), Mode::Mps), None);
        assert_eq!(heat_map(&matrix(0), Mode::Mps), None);
        let big = heat_map(&matrix(MAX_MATRIX_WORKLOADS + 5), Mode::Mps).unwrap();
        assert_eq!(
            big.matches("<rect class=\"cell").count(),
            MAX_MATRIX_WORKLOADS * MAX_MATRIX_WORKLOADS
        );
    }
}
