//! Which collectors run: node_exporter's habit of `--collector.<name>` and
//! `--no-collector.<name>`, every collector on by default, and
//! `--collector.disable-defaults` to start from none.

use std::collections::BTreeMap;

/// Every collector that can be chosen, by the name its flags and
/// `poolprof_exporter_collector_success{collector}` use. `kernels` (CUPTI statistics
/// from injected applications) and `pods` (the kubelet) are started by `app`.
pub const COLLECTOR_NAMES: &[&str] = &[
    "utilization",
    "memory",
    "power",
    "temperature",
    "clocks",
    "pcie",
    "clock_events",
    "ecc",
    "xid",
    "nvlink",
    "codec",
    "process",
    "gpm",
    "mig",
    "kernels",
    "pods",
];

/// The collectors chosen by the flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    enabled: BTreeMap<&'static str, bool>,
}

impl Default for Selection {
    /// Every collector.
    fn default() -> Self {
        Self::new(false, &[])
    }
}

impl Selection {
    /// Every collector on unless `disable_defaults`, then each `(name, on)` choice.
    pub fn new(disable_defaults: bool, choices: &[(&'static str, bool)]) -> Self {
        let mut enabled: BTreeMap<&'static str, bool> = COLLECTOR_NAMES
            .iter()
            .map(|name| (*name, !disable_defaults))
            .collect();
        for (name, on) in choices {
            enabled.insert(name, *on);
        }
        Self { enabled }
    }

    /// Whether the collector called `name` runs.
    pub fn enabled(&self, name: &str) -> bool {
        self.enabled.get(name).copied().unwrap_or(false)
    }

    /// The names of the collectors that run, comma-separated, for the start-up line.
    pub fn describe(&self) -> String {
        let on: Vec<&str> = COLLECTOR_NAMES
            .iter()
            .copied()
            .filter(|name| self.enabled(name))
            .collect();
        if on.is_empty() {
            "none".to_string()
        } else {
            on.join(",")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::default_collectors;

    #[test]
    fn every_device_collector_has_a_name_here() {
        for collector in default_collectors() {
            assert!(
                COLLECTOR_NAMES.contains(&collector.name()),
                "{}",
                collector.name()
            );
        }
    }

    #[test]
    fn defaults_are_on_and_choices_override() {
        let all = Selection::default();
        assert!(COLLECTOR_NAMES.iter().all(|name| all.enabled(name)));
        let some = Selection::new(false, &[("gpm", false)]);
        assert!(!some.enabled("gpm") && some.enabled("memory"));
        let only = Selection::new(true, &[("memory", true)]);
        assert_eq!(only.describe(), "memory");
        assert_eq!(Selection::new(true, &[]).describe(), "none");
    }
}
