//! Where the simulator's "now" comes from: seconds since the scenario started, read
//! from the wall clock (live exporter) or set explicitly (history writer, tests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A time the caller sets: `simulate --history` steps it, tests pin it.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock at scenario time 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock to `seconds` since the scenario started (negative or non-finite
    /// values are clamped to 0, since the scenario has no time before its start).
    pub fn set(&self, seconds: f64) {
        let seconds = if seconds.is_finite() {
            seconds.max(0.0)
        } else {
            0.0
        };
        self.0.store(seconds.to_bits(), Ordering::Release);
    }

    /// The time last set.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Acquire))
    }
}

/// The simulator's source of "now", in seconds since the scenario started.
#[derive(Debug, Clone)]
pub enum SimClock {
    /// Seconds elapsed since this instant (the backend's start).
    Live(Instant),
    /// An explicit time shared with whoever holds the [`ManualClock`].
    Manual(ManualClock),
}

impl SimClock {
    /// A live clock starting now.
    pub fn live() -> Self {
        Self::Live(Instant::now())
    }

    /// Seconds since the scenario started.
    pub fn now_seconds(&self) -> f64 {
        match self {
            Self::Live(started) => started.elapsed().as_secs_f64(),
            Self::Manual(clock) => clock.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_shared_between_clones() {
        let manual = ManualClock::new();
        let clock = SimClock::Manual(manual.clone());
        manual.set(1234.5);
        assert_eq!(clock.now_seconds(), 1234.5);
        manual.set(-3.0);
        assert_eq!(clock.now_seconds(), 0.0);
    }

    #[test]
    fn live_clock_advances_from_zero() {
        let clock = SimClock::live();
        let first = clock.now_seconds();
        assert!((0.0..1.0).contains(&first));
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(clock.now_seconds() > first);
    }
}
