//! Whether kernel records are being collected right now, for the application:
//! `poolprof_inject_tracing()` returns 1 while they are (the on part of a duty cycle),
//! 0 while they are off and -1 when the library is not running (stepped aside,
//! disabled, not yet started or stopped at exit).
//!
//! The flag is raised only after kernel records were enabled and lowered before they
//! are disabled, so a caller that reads 1 before and after a piece of work knows the
//! whole of it was traced.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// What the library is doing with kernel records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Tracing {
    /// Not running: stepped aside, disabled, not started or stopped.
    Inactive = -1,
    /// Running, kernel records off.
    Off = 0,
    /// Running, kernel records on.
    On = 1,
}

/// A [`Tracing`] state readable from any thread with one atomic load.
#[derive(Debug)]
pub struct TracingFlag(AtomicI32);

impl TracingFlag {
    /// A flag in the [`Tracing::Inactive`] state.
    pub const fn new() -> Self {
        Self(AtomicI32::new(Tracing::Inactive as i32))
    }

    /// Records the new state.
    pub fn set(&self, state: Tracing) {
        self.0.store(state as i32, Ordering::Release);
    }

    /// The current state.
    pub fn get(&self) -> Tracing {
        match self.0.load(Ordering::Acquire) {
            1 => Tracing::On,
            0 => Tracing::Off,
            _ => Tracing::Inactive,
        }
    }
}

impl Default for TracingFlag {
    fn default() -> Self {
        Self::new()
    }
}

/// The library's state, as `poolprof_inject_tracing()` reports it.
pub static TRACING: TracingFlag = TracingFlag::new();

/// 1 while kernel activity records are enabled, 0 while a duty cycle has them off,
/// -1 when the library is not running. One atomic load: safe to call from any thread
/// at any rate, before or after `InitializeInjection`.
#[no_mangle]
pub extern "C" fn poolprof_inject_tracing() -> c_int {
    TRACING.get() as c_int
}

/// Runs a duty cycle until `stop` receives a message or its sender is dropped:
/// `on` with kernel records enabled, then `off` with them disabled, and so on,
/// keeping `flag` in step. Kernel records are assumed enabled on entry and are left
/// enabled on return (so the final flush is whole). `enable` and `disable` return
/// whether the call succeeded; the flag only claims what succeeded.
pub fn run_duty_cycle(
    on: Duration,
    off: Duration,
    stop: &Receiver<()>,
    flag: &TracingFlag,
    mut enable: impl FnMut() -> bool,
    mut disable: impl FnMut() -> bool,
) {
    let keep_going = |wait| matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
    flag.set(Tracing::On);
    while keep_going(on) {
        flag.set(Tracing::Off);
        // A failed disable leaves records on: claiming Off is still safe for a caller
        // that treats "not 1" as "not known to be traced".
        let _ = disable();
        let again = keep_going(off);
        if enable() {
            flag.set(Tracing::On);
        }
        if !again {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc};
    use std::time::Instant;

    #[test]
    fn a_new_flag_is_inactive_and_reports_what_was_set() {
        let flag = TracingFlag::new();
        assert_eq!(flag.get(), Tracing::Inactive);
        flag.set(Tracing::On);
        assert_eq!(flag.get(), Tracing::On);
        flag.set(Tracing::Off);
        assert_eq!(flag.get(), Tracing::Off);
    }

    #[test]
    fn the_exported_function_reads_the_library_flag() {
        // The only test touching the global flag.
        TRACING.set(Tracing::On);
        assert_eq!(poolprof_inject_tracing(), 1);
        TRACING.set(Tracing::Off);
        assert_eq!(poolprof_inject_tracing(), 0);
        TRACING.set(Tracing::Inactive);
        assert_eq!(poolprof_inject_tracing(), -1);
    }

    /// Runs a 30 ms on / 30 ms off cycle for `run_for` with fake CUPTI calls that
    /// check the flag never claims On while records are off; returns the states
    /// seen by a sampling thread and whether records ended enabled.
    fn cycle(run_for: Duration, enable_ok: bool) -> (Vec<Tracing>, bool, Tracing) {
        let flag = Arc::new(TracingFlag::new());
        let enabled = Arc::new(AtomicBool::new(true));
        let (tx, rx) = mpsc::channel();
        let (f, e) = (flag.clone(), enabled.clone());
        let worker = std::thread::spawn(move || {
            let (e1, e2) = (e.clone(), e.clone());
            let f2 = f.clone();
            run_duty_cycle(
                Duration::from_millis(30),
                Duration::from_millis(30),
                &rx,
                &f,
                move || {
                    if enable_ok {
                        e1.store(true, Ordering::SeqCst);
                    }
                    enable_ok
                },
                move || {
                    assert_ne!(f2.get(), Tracing::On, "flag still On while disabling");
                    e2.store(false, Ordering::SeqCst);
                    true
                },
            )
        });
        let mut seen = Vec::new();
        let t0 = Instant::now();
        while t0.elapsed() < run_for {
            let state = flag.get();
            let records_on = enabled.load(Ordering::SeqCst);
            if state == Tracing::On && flag.get() == Tracing::On {
                // On at both reads: no 30 ms phase fits between them.
                assert!(records_on, "flag On while records off");
            }
            let started = !(seen.is_empty() && state == Tracing::Inactive);
            if started && seen.last() != Some(&state) {
                seen.push(state);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(tx);
        worker.join().unwrap();
        (seen, enabled.load(Ordering::SeqCst), flag.get())
    }

    #[test]
    fn the_duty_cycle_alternates_the_flag_and_ends_traced() {
        let (seen, enabled, last) = cycle(Duration::from_millis(200), true);
        let ons = seen.iter().filter(|s| **s == Tracing::On).count();
        let offs = seen.iter().filter(|s| **s == Tracing::Off).count();
        assert!(ons >= 2 && offs >= 2, "{seen:?}");
        assert!(!seen.contains(&Tracing::Inactive), "{seen:?}");
        assert!(enabled, "records must be left enabled after stop");
        assert_eq!(last, Tracing::On);
    }

    #[test]
    fn a_failed_enable_never_claims_tracing() {
        let (seen, enabled, last) = cycle(Duration::from_millis(150), false);
        assert_eq!(seen.first(), Some(&Tracing::On), "{seen:?}");
        assert_eq!(&seen[1..], &[Tracing::Off], "{seen:?}");
        assert!(!enabled);
        assert_eq!(last, Tracing::Off);
    }
}
