//! Choosing collectors with node_exporter's flags, on the running binary: a collector
//! turned off leaves no series and no success metric; the others are untouched.

mod support;

use support::Running;

/// The metric names with at least one sample in a text exposition.
fn families(exposition: &str) -> Vec<String> {
    let mut names: Vec<String> = exposition
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect();
    names.dedup();
    names
}

fn succeeded(exposition: &str, collector: &str) -> bool {
    exposition.contains(&format!(
        "poolprof_exporter_collector_success{{collector=\"{collector}\"}} 1"
    ))
}

#[test]
fn no_collector_turns_one_collector_off() {
    let exporter = Running::start(&["--no-kernels", "--no-collector.gpm", "--no-collector.pcie"]);
    let metrics = exporter.wait_for("a collection", |m| succeeded(m, "memory"));
    let names = families(&metrics);
    for gone in [
        "poolprof_gpu_sm_active_ratio",
        "poolprof_gpu_tensor_active_ratio",
        "poolprof_gpu_pcie_link_width",
        "poolprof_gpu_pcie_bytes_per_second",
    ] {
        assert!(!names.iter().any(|n| n == gone), "{gone} still served");
    }
    assert!(!metrics.contains("collector=\"gpm\""), "{metrics}");
    assert!(!metrics.contains("collector=\"pcie\""), "{metrics}");
    assert!(names.iter().any(|n| n == "poolprof_gpu_memory_used_bytes"));
    assert!(succeeded(&metrics, "process"));
}

#[test]
fn disable_defaults_runs_only_the_named_collectors() {
    let exporter = Running::start(&[
        "--no-kernels",
        "--collector.disable-defaults",
        "--collector.memory",
    ]);
    let metrics = exporter.wait_for("a collection", |m| succeeded(m, "memory"));
    let mut gpu_families: Vec<String> = families(&metrics)
        .into_iter()
        .filter(|n| n.starts_with("poolprof_gpu_") || n.starts_with("poolprof_process_"))
        .collect();
    gpu_families.sort();
    gpu_families.dedup();
    assert_eq!(
        gpu_families,
        [
            "poolprof_gpu_info",
            "poolprof_gpu_memory_free_bytes",
            "poolprof_gpu_memory_reserved_bytes",
            "poolprof_gpu_memory_total_bytes",
            "poolprof_gpu_memory_used_bytes",
            "poolprof_gpu_up",
        ]
    );
    let collectors = metrics
        .matches("poolprof_exporter_collector_success{")
        .count();
    assert_eq!(collectors, 1, "only memory reports: {metrics}");
    assert!(
        exporter.log_lines_with("collectors=memory") == 1,
        "the start-up line names the collectors: {}",
        exporter.log_text()
    );
}
