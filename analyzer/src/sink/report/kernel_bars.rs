//! Kernel time by class as a stacked bar per workload: how much of each workload's
//! kernel time its kernel names suggest is compute-bound, memory-bound or unknown.

use std::fmt::Write;

use super::escape::escape;
use super::format::short;
use super::model::WorkloadSummary;

const WIDTH: f64 = 640.0;
const LABEL: f64 = 170.0;
const ROW: f64 = 24.0;
const TOP: f64 = 30.0;
const BAR: f64 = 16.0;

/// The colour of a class; classes beyond the known ones take a grey.
fn colour(class: &str) -> &'static str {
    match class {
        "compute_bound" => "#d95f02",
        "memory_bound" => "#1b9e77",
        "latency_bound" => "#7570b3",
        "mixed" => "#e7298a",
        _ => "#999999",
    }
}

/// The chart of the workloads with kernel records; `None` when none has any.
pub fn kernel_bars(workloads: &[WorkloadSummary]) -> Option<String> {
    let rows: Vec<&WorkloadSummary> = workloads
        .iter()
        .filter(|w| {
            w.kernel_time_by_class
                .values()
                .any(|v| v.is_finite() && *v > 0.0)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let height = TOP + ROW * rows.len() as f64 + 6.0;
    let span = WIDTH - LABEL - 10.0;
    let mut svg = format!(
        r#"<svg class="plot kernels" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img"><title>kernel time by class</title>"#
    );
    legend(&mut svg, &rows);
    for (i, w) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let _ = write!(
            svg,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LABEL - 6.0,
            y + BAR - 4.0,
            escape(&short(&w.workload))
        );
        let total: f64 = w
            .kernel_time_by_class
            .values()
            .filter(|v| v.is_finite() && **v > 0.0)
            .sum();
        let mut x = LABEL;
        for (class, share) in &w.kernel_time_by_class {
            if !(share.is_finite() && *share > 0.0) {
                continue;
            }
            let width = share / total * span;
            let _ = write!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{BAR}" fill="{}"><title>{}: {} {:.0}%</title></rect>"#,
                colour(class),
                escape(&w.workload),
                escape(class),
                share / total * 100.0
            );
            if width > 34.0 {
                let _ = write!(
                    svg,
                    r#"<text class="share" x="{:.1}" y="{:.1}" text-anchor="middle">{:.0}%</text>"#,
                    x + width / 2.0,
                    y + BAR - 4.0,
                    share / total * 100.0
                );
            }
            x += width;
        }
    }
    svg.push_str("</svg>");
    Some(svg)
}

/// One swatch per class present, in name order.
fn legend(svg: &mut String, rows: &[&WorkloadSummary]) {
    let mut classes: Vec<&str> = rows
        .iter()
        .flat_map(|w| w.kernel_time_by_class.keys().map(String::as_str))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    let mut x = LABEL;
    for class in classes {
        let _ = write!(
            svg,
            r#"<rect x="{x:.1}" y="6" width="12" height="12" fill="{}"/><text class="tick" x="{:.1}" y="16">{}</text>"#,
            colour(class),
            x + 16.0,
            escape(class)
        );
        x += 26.0 + 7.0 * class.chars().count() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(name: &str, classes: &[(&str, f64)]) -> WorkloadSummary {
        WorkloadSummary {
            workload: name.into(),
            class: "compute_bound",
            kind: "training",
            kernel_time_by_class: classes.iter().map(|(c, v)| (c.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn one_bar_per_workload_with_kernels_and_segments_that_fill_it() {
        let svg = kernel_bars(&[
            workload("train", &[("compute_bound", 0.75), ("memory_bound", 0.25)]),
            workload("no-kernels", &[]),
            workload("etl", &[("memory_bound", 1.0)]),
        ])
        .unwrap();
        assert!(svg.contains(">train<") && svg.contains(">etl<"), "{svg}");
        assert!(!svg.contains("no-kernels"), "{svg}");
        assert!(svg.contains("train: compute_bound 75%"), "{svg}");
        assert!(svg.contains("etl: memory_bound 100%"), "{svg}");
    }

    #[test]
    fn no_chart_when_no_workload_has_kernel_records() {
        assert_eq!(kernel_bars(&[workload("a", &[])]), None);
        assert_eq!(kernel_bars(&[]), None);
    }

    #[test]
    fn long_and_hostile_names_are_cut_and_escaped() {
        let svg = kernel_bars(&[workload(
            "<img src=x onerror=alert(1)>-a-very-long-workload-name",
            &[("unknown", 1.0)],
        )])
        .unwrap();
        assert!(!svg.contains("<img"), "{svg}");
        assert!(svg.contains("&lt;img src=x"), "{svg}");
        assert!(svg.contains('…'), "{svg}");
    }
}
