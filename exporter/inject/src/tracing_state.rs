//! Whether activity records (kernels, and memcpy and memset unless turned off) are
//! being collected right now, for the application: `poolprof_inject_tracing()`
//! returns 1 while they are (the on part of a duty cycle), 0 while they are off and -1
//! when the library is not running (stepped aside, disabled, not yet started or
//! stopped at exit).
//!
//! The flag is raised only after every record kind was enabled and lowered before
//! they are disabled, so a caller that reads 1 before and after a piece of work knows
//! the whole of it was traced.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// What the library is doing with activity records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Tracing {
    /// Not running: stepped aside, disabled, not started or stopped.
    Inactive = -1,
    /// Running, records off.
    Off = 0,
    /// Running, every record kind on.
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

/// 1 while activity records are enabled, 0 while a duty cycle has them off,
/// -1 when the library is not running. One atomic load: safe to call from any thread
/// at any rate, before or after `InitializeInjection`.
#[no_mangle]
pub extern "C" fn poolprof_inject_tracing() -> c_int {
    TRACING.get() as c_int
}

/// What a duty cycle turns on and off: every record kind at once, so every kind is
/// sampled over the same time and one ratio scales them all.
pub trait Switch {
    /// Turns records on; whether every kind is on now.
    fn on(&mut self) -> bool;
    /// Turns records off. A kind that fails to go off stays on: the flag still says
    /// Off, which is safe for a caller that treats "not 1" as "not known to be traced".
    fn off(&mut self);
    /// Whether the switch stepped aside for good (another CUPTI client took over):
    /// the cycle ends and touches nothing more.
    fn aside(&self) -> bool {
        false
    }
}

/// A [`Switch`] over kinds toggled one by one: `enable` and `disable` act on one kind
/// and return whether the call succeeded. Every kind is tried even after a failure,
/// so none stays off by accident.
pub struct EachKind<'a, K, E, D> {
    /// The kinds, toggled in this order.
    pub kinds: &'a [K],
    /// Enables one kind.
    pub enable: E,
    /// Disables one kind.
    pub disable: D,
}

impl<K: Copy, E: FnMut(K) -> bool, D: FnMut(K) -> bool> Switch for EachKind<'_, K, E, D> {
    fn on(&mut self) -> bool {
        let mut all_on = true;
        for kind in self.kinds {
            all_on &= (self.enable)(*kind);
        }
        all_on
    }

    fn off(&mut self) {
        for kind in self.kinds {
            let _ = (self.disable)(*kind);
        }
    }
}

/// Runs a duty cycle until `stop` receives a message or its sender is dropped:
/// `on` with records on, then `off` with them off, and so on, keeping `flag` in step.
/// Records are assumed on at entry and are left on at return (so the final flush is
/// whole); the flag claims On only when the switch says every kind is on. When the
/// switch steps aside the cycle ends at once, with the flag Inactive.
pub fn run_duty_cycle(
    on: Duration,
    off: Duration,
    stop: &Receiver<()>,
    flag: &TracingFlag,
    switch: &mut impl Switch,
) {
    let keep_going = |wait| matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
    flag.set(Tracing::On);
    while keep_going(on) {
        flag.set(Tracing::Off);
        switch.off();
        if switch.aside() {
            break;
        }
        let again = keep_going(off);
        if switch.on() {
            flag.set(Tracing::On);
        }
        if !again || switch.aside() {
            break;
        }
    }
    if switch.aside() {
        flag.set(Tracing::Inactive);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{mpsc, Arc, Mutex};
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

    /// The kinds a sampled library with memory records toggles: kernel, memcpy, memset.
    const KINDS: [usize; 3] = [0, 1, 2];

    /// Fake CUPTI: which kinds are enabled, and every call in order.
    struct FakeKinds {
        enabled: [AtomicBool; 3],
        calls: Mutex<Vec<(usize, bool)>>,
    }

    impl FakeKinds {
        fn all_on() -> Self {
            Self {
                enabled: std::array::from_fn(|_| AtomicBool::new(true)),
                calls: Mutex::new(Vec::new()),
            }
        }

        fn enabled(&self) -> [bool; 3] {
            std::array::from_fn(|k| self.enabled[k].load(Ordering::SeqCst))
        }
    }

    /// Runs a 30 ms on / 30 ms off cycle over [`KINDS`] for `run_for`, with fake CUPTI
    /// calls that check the flag never claims On while a kind is off (enabling
    /// `failing` always fails); returns the states seen by a sampling thread, the fake
    /// and the flag's last state.
    fn cycle(run_for: Duration, failing: Option<usize>) -> (Vec<Tracing>, Arc<FakeKinds>, Tracing) {
        let flag = Arc::new(TracingFlag::new());
        let fake = Arc::new(FakeKinds::all_on());
        let (tx, rx) = mpsc::channel();
        let (f, k) = (flag.clone(), fake.clone());
        let worker = std::thread::spawn(move || {
            let (k1, k2) = (k.clone(), k.clone());
            let f2 = f.clone();
            let mut switch = EachKind {
                kinds: &KINDS,
                enable: move |kind: usize| {
                    k1.calls.lock().unwrap().push((kind, true));
                    let ok = failing != Some(kind);
                    if ok {
                        k1.enabled[kind].store(true, Ordering::SeqCst);
                    }
                    ok
                },
                disable: move |kind: usize| {
                    assert_ne!(f2.get(), Tracing::On, "flag still On while disabling");
                    k2.calls.lock().unwrap().push((kind, false));
                    k2.enabled[kind].store(false, Ordering::SeqCst);
                    true
                },
            };
            run_duty_cycle(
                Duration::from_millis(30),
                Duration::from_millis(30),
                &rx,
                &f,
                &mut switch,
            )
        });
        let mut seen = Vec::new();
        let t0 = Instant::now();
        while t0.elapsed() < run_for {
            let state = flag.get();
            let kinds_on = fake.enabled();
            if state == Tracing::On && flag.get() == Tracing::On {
                // On at both reads: no 30 ms phase fits between them.
                assert_eq!(kinds_on, [true; 3], "flag On while a kind is off");
            }
            let started = !(seen.is_empty() && state == Tracing::Inactive);
            if started && seen.last() != Some(&state) {
                seen.push(state);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(tx);
        worker.join().unwrap();
        (seen, fake, flag.get())
    }

    #[test]
    fn the_duty_cycle_alternates_the_flag_and_ends_traced() {
        let (seen, fake, last) = cycle(Duration::from_millis(200), None);
        let ons = seen.iter().filter(|s| **s == Tracing::On).count();
        let offs = seen.iter().filter(|s| **s == Tracing::Off).count();
        assert!(ons >= 2 && offs >= 2, "{seen:?}");
        assert!(!seen.contains(&Tracing::Inactive), "{seen:?}");
        assert_eq!(
            fake.enabled(),
            [true; 3],
            "every kind must be left enabled after stop"
        );
        assert_eq!(last, Tracing::On);
    }

    #[test]
    fn every_kind_goes_off_and_on_together() {
        let (_, fake, _) = cycle(Duration::from_millis(200), None);
        let calls = fake.calls.lock().unwrap().clone();
        let rounds: Vec<&[(usize, bool)]> = calls.chunks(KINDS.len()).collect();
        assert!(rounds.len() >= 4, "{calls:?}");
        for (i, round) in rounds.iter().enumerate() {
            // Rounds alternate off, on, off, ... and each one covers every kind once.
            let want_on = i % 2 == 1;
            let mut kinds: Vec<usize> = round.iter().map(|(kind, _)| *kind).collect();
            kinds.sort_unstable();
            assert_eq!(kinds, KINDS, "round {i}: {calls:?}");
            assert!(
                round.iter().all(|(_, on)| *on == want_on),
                "round {i}: {calls:?}"
            );
        }
        assert!(rounds.last().unwrap()[0].1, "the last round enables");
    }

    /// Steps aside at its `at`-th call (on and off counted together).
    struct StepsAside {
        calls: u32,
        at: u32,
    }

    impl Switch for StepsAside {
        fn on(&mut self) -> bool {
            assert!(!self.aside(), "on() after stepping aside");
            self.calls += 1;
            true
        }
        fn off(&mut self) {
            assert!(!self.aside(), "off() after stepping aside");
            self.calls += 1;
        }
        fn aside(&self) -> bool {
            self.calls >= self.at
        }
    }

    #[test]
    fn a_switch_that_steps_aside_ends_the_cycle_inactive() {
        for at in [1, 2, 5] {
            let flag = TracingFlag::new();
            let (_tx, rx) = mpsc::channel::<()>();
            let mut switch = StepsAside { calls: 0, at };
            let ms = Duration::from_millis(1);
            run_duty_cycle(ms, ms, &rx, &flag, &mut switch);
            assert_eq!(switch.calls, at, "nothing is touched after stepping aside");
            assert_eq!(flag.get(), Tracing::Inactive, "stepped aside at call {at}");
        }
    }

    #[test]
    fn a_kind_that_fails_to_enable_never_lets_the_flag_claim_tracing() {
        let (seen, fake, last) = cycle(Duration::from_millis(150), Some(1));
        assert_eq!(seen.first(), Some(&Tracing::On), "{seen:?}");
        assert_eq!(&seen[1..], &[Tracing::Off], "{seen:?}");
        assert_eq!(
            fake.enabled(),
            [true, false, true],
            "the other kinds are still enabled"
        );
        assert_eq!(last, Tracing::Off);
    }
}
