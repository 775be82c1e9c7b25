//! What a real node adds to `poolprof-exporter simulate`'s history, appended to its
//! OpenMetrics file before backfill: the kernel families an injected process makes the
//! exporter publish, the pod-info family a kubelet makes it publish (neither can run
//! here; tests/tests/kernels_e2e.rs and prometheus_rules.rs drive the real exporter
//! with them), and the `job` / `instance` labels a scrape adds.

use std::path::Path;

/// One kernel of an injected workload: its name, launches per second and seconds per
/// launch, constant over the history.
#[derive(Debug, Clone, Copy)]
pub struct Kernel<'a> {
    /// The `kernel` label.
    pub name: &'a str,
    /// Launches per second.
    pub launches_per_second: f64,
    /// GPU seconds per launch.
    pub seconds_per_launch: f64,
}

fn read_body(history: &Path) -> String {
    let text = std::fs::read_to_string(history)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", history.display()));
    text.trim_end()
        .strip_suffix("# EOF")
        .unwrap_or_else(|| panic!("{} does not end with # EOF", history.display()))
        .trim_end()
        .to_string()
}

fn write_body(history: &Path, body: &str) {
    std::fs::write(history, format!("{body}\n# EOF\n"))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", history.display()));
}

/// Timestamps every `step` seconds over the `span` seconds ending at `end`.
fn steps(end: f64, span: f64, step: f64) -> Vec<f64> {
    let n = (span / step).floor() as u32;
    (0..=n).map(|i| end - span + step * f64::from(i)).collect()
}

/// The GPU `workload`'s process runs on in the history `text` (its
/// `poolprof_process_gpu_memory_bytes` series' `uuid`).
pub fn uuid_of(text: &str, workload: &str) -> String {
    let line = text
        .lines()
        .find(|l| {
            l.starts_with("poolprof_process_gpu_memory_bytes")
                && l.contains(&format!("workload=\"{workload}\""))
        })
        .unwrap_or_else(|| panic!("{workload} is not in the history"));
    let at = line.find("uuid=\"").expect("a uuid label") + 6;
    line[at..at + line[at..].find('"').expect("a closing quote")].to_string()
}

/// Appends `poolprof_kernel_launches_total` and `poolprof_kernel_duration_seconds_total`
/// for each (`uuid`, `workload`, kernels) of `runs`, every `step` seconds over the
/// `span` seconds ending at `end`.
pub fn append_kernels(
    history: &Path,
    runs: &[(&str, &str, &[Kernel])],
    (end, span, step): (f64, f64, f64),
) {
    let mut out = read_body(history);
    let times = steps(end, span, step);
    for family in [
        "poolprof_kernel_launches",
        "poolprof_kernel_duration_seconds",
    ] {
        out.push_str(&format!("\n# TYPE {family} counter"));
        for (uuid, workload, kernels) in runs {
            for kernel in *kernels {
                for (i, t) in times.iter().enumerate() {
                    let launches = kernel.launches_per_second * step * i as f64;
                    let value = if family == "poolprof_kernel_launches" {
                        launches
                    } else {
                        launches * kernel.seconds_per_launch
                    };
                    out.push_str(&format!(
                        "\n{family}_total{{uuid=\"{uuid}\",workload=\"{workload}\",kernel=\"{}\"}} {value} {t}",
                        kernel.name
                    ));
                }
            }
        }
    }
    write_body(history, &out);
}

/// Appends `poolprof_gpu_pod_info` saying that container `namespace/pod/container`
/// holds GPU `uuid`, every `step` seconds over the `span` seconds ending at `end`.
pub fn append_pod(
    history: &Path,
    uuid: &str,
    (namespace, pod, container): (&str, &str, &str),
    (end, span, step): (f64, f64, f64),
) {
    let mut out = read_body(history);
    out.push_str("\n# TYPE poolprof_gpu_pod_info gauge");
    for t in steps(end, span, step) {
        out.push_str(&format!(
            "\npoolprof_gpu_pod_info{{uuid=\"{uuid}\",namespace=\"{namespace}\",pod=\"{pod}\",container=\"{container}\"}} 1 {t}"
        ));
    }
    write_body(history, &out);
}

/// Adds `job` and `instance` to every sample of the file, as a scrape of the exporter
/// at `instance` by job `job` would.
pub fn add_scrape_labels(history: &Path, job: &str, instance: &str) {
    let labels = format!("job=\"{job}\",instance=\"{instance}\"");
    let out: Vec<String> = read_body(history)
        .lines()
        .map(|line| {
            if line.starts_with('#') || line.is_empty() {
                line.to_string()
            } else if let Some(at) = line.find('{') {
                let sep = if line[at + 1..].starts_with('}') {
                    ""
                } else {
                    ","
                };
                format!("{}{{{labels}{sep}{}", &line[..at], &line[at + 1..])
            } else {
                let at = line.find(' ').unwrap_or(line.len());
                format!("{}{{{labels}}}{}", &line[..at], &line[at..])
            }
        })
        .collect();
    write_body(history, &out.join("\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uuid_of_a_workload_is_its_process_series_uuid() {
        let text = "poolprof_process_gpu_memory_bytes{gpu=\"1\",uuid=\"GPU-b\",pid=\"7\",workload=\"etl\"} 5 10\n";
        assert_eq!(uuid_of(text, "etl"), "GPU-b");
    }

    #[test]
    fn appends_families_and_labels_every_sample() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.om");
        std::fs::write(
            &path,
            "# TYPE a gauge\na{gpu=\"0\"} 1 10\n# TYPE b gauge\nb 2 10\nc{} 3 10\n# EOF\n",
        )
        .unwrap();
        let k = Kernel {
            name: "gemm",
            launches_per_second: 2.0,
            seconds_per_launch: 0.5,
        };
        append_kernels(
            &path,
            &[("U", "w", &[k]), ("V", "v", &[k])],
            (40.0, 30.0, 15.0),
        );
        append_pod(&path, "U", ("ns", "p", "c"), (40.0, 15.0, 15.0));
        add_scrape_labels(&path, "j", "i:1");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("a{job=\"j\",instance=\"i:1\",gpu=\"0\"} 1 10\n"),
            "{text}"
        );
        assert!(
            text.contains("\nb{job=\"j\",instance=\"i:1\"} 2 10\n"),
            "{text}"
        );
        assert!(
            text.contains("\nc{job=\"j\",instance=\"i:1\"} 3 10\n"),
            "{text}"
        );
        assert!(text.contains(
            "poolprof_kernel_launches_total{job=\"j\",instance=\"i:1\",uuid=\"U\",workload=\"w\",kernel=\"gemm\"} 60 40\n"
        ), "{text}");
        assert!(text.contains(
            "poolprof_kernel_duration_seconds_total{job=\"j\",instance=\"i:1\",uuid=\"U\",workload=\"w\",kernel=\"gemm\"} 30 40\n"
        ), "{text}");
        assert_eq!(
            text.matches("# TYPE poolprof_kernel_launches counter")
                .count(),
            1,
            "one family, both workloads under it: {text}"
        );
        assert!(text.contains("uuid=\"V\",workload=\"v\",kernel=\"gemm\"} 60 40\n"));
        assert_eq!(text.matches("poolprof_gpu_pod_info{").count(), 2, "{text}");
        assert!(text.ends_with("\n# EOF\n"));
    }
}
