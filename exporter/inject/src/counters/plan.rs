//! Which launches to profile: the first launch of each distinct kernel name, at most
//! a cap of names per process, and nothing more once profiling stopped paying off.
//!
//! The cost is bounded three ways: one profiled launch per name, at most `cap` names,
//! and at most [`IDLE_WINDOWS`] windows in a row in which no new name was profiled
//! before the library stops looking (a training loop shows every kernel it has in its
//! first steps; a process whose kernels are all known pays nothing after that). Any
//! CUPTI error stops it for the process ([`Plan::stop`]).

use std::collections::HashSet;

/// Windows in a row without a newly profiled kernel after which profiling stops.
pub const IDLE_WINDOWS: u32 = 8;

/// Why profiling is over for the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// `cap` names were profiled.
    Cap,
    /// No new name in [`IDLE_WINDOWS`] windows.
    Idle,
    /// A CUPTI call failed or another profiler holds the counters.
    Failed(String),
}

/// The profiling plan of one process.
#[derive(Debug)]
pub struct Plan {
    cap: usize,
    tried: HashSet<String>,
    profiled: usize,
    new_in_window: bool,
    idle_windows: u32,
    stopped: Option<Stopped>,
}

impl Plan {
    /// A plan profiling at most `cap` distinct names.
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            tried: HashSet::new(),
            profiled: 0,
            new_in_window: false,
            idle_windows: 0,
            stopped: None,
        }
    }

    /// Whether a launch of `name` should be profiled: never tried, under the cap,
    /// not stopped. Cheap: a hash lookup.
    pub fn wants(&self, name: &str) -> bool {
        self.stopped.is_none() && self.tried.len() < self.cap && !self.tried.contains(name)
    }

    /// A launch of `name` is being profiled: it is not tried again, whatever the
    /// outcome (a failed launch is not worth a second replay).
    pub fn trying(&mut self, name: &str) {
        self.tried.insert(name.to_string());
    }

    /// A profiled launch gave counters.
    pub fn profiled(&mut self) {
        self.profiled += 1;
        self.new_in_window = true;
        if self.tried.len() >= self.cap {
            self.stopped.get_or_insert(Stopped::Cap);
        }
    }

    /// A window ended; after [`IDLE_WINDOWS`] in a row without a new kernel the plan
    /// stops.
    pub fn window_ended(&mut self) {
        if std::mem::take(&mut self.new_in_window) {
            self.idle_windows = 0;
        } else {
            self.idle_windows += 1;
            if self.idle_windows >= IDLE_WINDOWS {
                self.stopped.get_or_insert(Stopped::Idle);
            }
        }
        if self.tried.len() >= self.cap {
            self.stopped.get_or_insert(Stopped::Cap);
        }
    }

    /// Stops for good; the first reason stays.
    pub fn stop(&mut self, why: Stopped) {
        self.stopped.get_or_insert(why);
    }

    /// Why profiling stopped, if it did.
    pub fn stopped(&self) -> Option<&Stopped> {
        self.stopped.as_ref()
    }

    /// Kernels that gave counters so far.
    pub fn profiled_count(&self) -> usize {
        self.profiled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_profiled_once_up_to_the_cap() {
        let mut plan = Plan::new(3);
        for name in ["gemm", "add", "gemm", "add", "relu", "softmax"] {
            if plan.wants(name) {
                plan.trying(name);
                plan.profiled();
            }
        }
        assert_eq!(
            plan.profiled_count(),
            3,
            "gemm, add, relu; softmax over the cap"
        );
        assert!(!plan.wants("softmax"));
        assert_eq!(plan.stopped(), Some(&Stopped::Cap));
    }

    #[test]
    fn a_failed_launch_is_not_retried_and_counts_against_the_cap() {
        let mut plan = Plan::new(2);
        plan.trying("a");
        assert!(!plan.wants("a"));
        plan.trying("b");
        assert!(!plan.wants("c"), "two names tried: the cap is reached");
        plan.window_ended();
        assert_eq!(plan.stopped(), Some(&Stopped::Cap));
    }

    #[test]
    fn windows_without_a_new_kernel_stop_the_search() {
        let mut plan = Plan::new(64);
        plan.trying("a");
        plan.profiled();
        plan.window_ended();
        for _ in 1..IDLE_WINDOWS {
            plan.window_ended();
        }
        assert_eq!(plan.stopped(), None, "one idle window short");
        plan.trying("b");
        plan.profiled();
        plan.window_ended();
        for _ in 0..IDLE_WINDOWS {
            assert!(plan.wants("z"));
            plan.window_ended();
        }
        assert_eq!(plan.stopped(), Some(&Stopped::Idle));
        assert!(!plan.wants("z"));
    }

    #[test]
    fn an_error_stops_for_good_and_keeps_its_reason() {
        let mut plan = Plan::new(64);
        plan.stop(Stopped::Failed("cuptiRangeProfilerEnable failed".into()));
        plan.stop(Stopped::Idle);
        assert!(!plan.wants("a"));
        assert!(matches!(plan.stopped(), Some(Stopped::Failed(m)) if m.contains("Enable")));
    }
}
