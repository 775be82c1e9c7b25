//! One info line per kind of refusal per interval.
//!
//! A hostile or broken peer can be refused thousands of times a second; a line for
//! each would flood the log, none at all leaves the operator guessing why a process's
//! kernels are missing. So the first refusal of a kind is logged at once, later ones
//! of that kind are counted, and the next line (once `interval` has passed) says how
//! many were not logged; when no refusal of that kind comes again, [`RejectionLog::flush`]
//! says it once the interval is over. The counters in `/metrics` count every one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What was last logged for one kind.
#[derive(Debug)]
struct Kind {
    logged_at: Instant,
    suppressed: u64,
}

/// Rate limiter for refusal log lines, keyed by a fixed reason label.
#[derive(Debug)]
pub struct RejectionLog {
    interval: Duration,
    kinds: HashMap<&'static str, Kind>,
}

impl RejectionLog {
    /// Logs each kind at most once per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            kinds: HashMap::new(),
        }
    }

    /// Notes one refusal of `kind`; returns the number of refusals of that kind not
    /// logged since its last line when this one is to be logged, `None` when it is to
    /// be suppressed.
    pub fn admit(&mut self, kind: &'static str, now: Instant) -> Option<u64> {
        match self.kinds.get_mut(kind) {
            Some(k) if now.saturating_duration_since(k.logged_at) < self.interval => {
                k.suppressed += 1;
                None
            }
            Some(k) => {
                let suppressed = k.suppressed;
                k.logged_at = now;
                k.suppressed = 0;
                Some(suppressed)
            }
            None => {
                self.kinds.insert(
                    kind,
                    Kind {
                        logged_at: now,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
        }
    }

    /// The kinds whose suppressed refusals are due to be reported (their interval is
    /// over), with their counts; they start a new interval.
    pub fn due(&mut self, now: Instant) -> Vec<(&'static str, u64)> {
        let mut due = Vec::new();
        for (kind, k) in &mut self.kinds {
            if k.suppressed > 0 && now.saturating_duration_since(k.logged_at) >= self.interval {
                due.push((*kind, k.suppressed));
                k.suppressed = 0;
                k.logged_at = now;
            }
        }
        due
    }

    /// Logs the refusals suppressed in intervals now over, one line per kind.
    pub fn flush(&mut self) {
        for (kind, suppressed) in self.due(Instant::now()) {
            tracing::info!(
                reason = kind,
                suppressed,
                interval = %humantime::format_duration(self.interval),
                "kernel listener: more refusals or closed injection connections of this reason"
            );
        }
    }

    /// Logs one refusal of `kind` (subject to the interval) with a sentence saying
    /// what happened and what to do.
    pub fn log(&mut self, kind: &'static str, what: &str) {
        if let Some(suppressed) = self.admit(kind, Instant::now()) {
            tracing::info!(
                reason = kind,
                suppressed,
                interval = %humantime::format_duration(self.interval),
                "kernel listener: {what}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_kind_per_interval_with_the_suppressed_count() {
        let mut log = RejectionLog::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(log.admit("timeout", t0), Some(0));
        assert_eq!(log.admit("timeout", t0 + Duration::from_secs(1)), None);
        assert_eq!(log.admit("timeout", t0 + Duration::from_secs(2)), None);
        // another kind is not held back by the first
        assert_eq!(log.admit("busy", t0 + Duration::from_secs(3)), Some(0));
        assert_eq!(
            log.admit("timeout", t0 + Duration::from_secs(61)),
            Some(2),
            "the next line counts the two not logged"
        );
        assert_eq!(log.admit("timeout", t0 + Duration::from_secs(62)), None);
        // a burst that ends is still reported once its interval is over
        assert_eq!(log.admit("busy", t0 + Duration::from_secs(4)), None);
        assert_eq!(log.due(t0 + Duration::from_secs(62)), vec![]);
        let mut due = log.due(t0 + Duration::from_secs(122));
        due.sort();
        assert_eq!(due, vec![("busy", 1), ("timeout", 1)]);
        assert_eq!(log.due(t0 + Duration::from_secs(300)), vec![]);
    }
}
