//! The duty cycle on CUPTI: records on for a window, off (and CUPTI detached) for the
//! rest of each period; a window ends once its records are all in (`crate::windows`
//! measures it). Before each window and at its end it checks that no other CUPTI
//! client (a profiler started later in the process) subscribed; once one has, the
//! library steps aside for good and leaves CUPTI to it.

use super::library::{self, Cupti};
use super::{buffer_completed, buffer_requested, lock, promise_zeroed_buffers, SHARED};
use crate::detach;
use crate::tracing_state::{run_duty_cycle, EachKind, Switch, TRACING};
use crate::windows::Window;
use crate::wire::{share_ppm, DutyCycle, FULL_DUTY_PPM};
use cudarc::cupti::sys::{CUptiResult, CUpti_ActivityFlag, CUpti_ActivityKind};
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running duty-cycle thread.
pub struct DutyThread {
    stop: std::sync::mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl DutyThread {
    /// Stops toggling and leaves every kind enabled (so the final flush is whole).
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
        every_record_traced_from_now();
    }
}

/// How long the duty thread waits for the application to finalize CUPTI at its next
/// driver API call; an idle application leaves it pending until the next on phase.
const DETACH_WAIT: Duration = Duration::from_millis(100);

/// How long records may still arrive after they are disabled: work launched during
/// the on phase that the GPU has not run yet. Finalizing CUPTI sooner loses those
/// records (on the H100 a training loop queued tens of milliseconds ahead and lost
/// 14% of a 200 ms window's kernels).
const DRAIN: Duration = Duration::from_millis(250);

/// The records of a duty cycle: `kinds` go on and off together; with `detach`, CUPTI
/// is finalized while off and attached again before records go on. It measures how
/// long records were really on (attaching takes time out of the on phase, detaching
/// makes the period longer) and, at the start of each period, publishes the share of
/// the whole periods so far, so scaling stays unbiased.
struct CuptiSwitch {
    cupti: &'static Cupti,
    kinds: Vec<CUpti_ActivityKind>,
    window_log: Option<std::fs::File>,
    detach: bool,
    started: Instant,
    on_since: Option<Instant>,
    traced: Duration,
    /// Another CUPTI client took over: no CUPTI call from here on.
    aside: bool,
}

impl CuptiSwitch {
    /// Publishes the traced share of the time since the first period began; called
    /// when a period begins, so only whole periods are counted.
    fn publish_ratio(&self) {
        let ppm = share_ppm(self.traced.as_nanos(), self.started.elapsed().as_nanos());
        if let Some(shared) = SHARED.get() {
            shared.duty_ppm.store(ppm, Ordering::Relaxed);
        }
    }

    /// The window's records are all in: the window before it can be measured.
    fn window_ended(&mut self) {
        let Some(shared) = SHARED.get() else {
            return;
        };
        let mut windows = lock(&shared.windows);
        if let Some(log) = &mut self.window_log {
            log_window(log, self.started.elapsed(), windows.current());
        }
        let shares = windows.window_ended(shared.duty_ppm.load(Ordering::Relaxed));
        if let Some(log) = &mut self.window_log {
            use std::io::Write;
            for share in shares {
                let _ = writeln!(
                    log,
                    "pid={} measured_window_share_ppm={share}",
                    std::process::id()
                );
            }
        }
    }

    /// Leaves CUPTI to the client that subscribed: records are no longer taken, the
    /// windows waiting are measured against the launches the current one saw, and the
    /// current one, which may lack records the other client took, is dropped. Record
    /// kinds are left as they are: disabling them would stop the other client's.
    fn step_aside(&mut self, why: detach::OtherClient) {
        self.aside = true;
        crate::counters::close();
        if let Some(shared) = SHARED.get() {
            shared.closed.store(true, Ordering::Relaxed);
            shared.sampling.store(false, Ordering::Release);
            lock(&shared.windows).cut_short();
        }
        eprintln!("poolprof-inject: {why}, stepping aside; the counts sent so far stay");
    }

    fn each_kind(
        &self,
    ) -> EachKind<
        '_,
        CUpti_ActivityKind,
        impl FnMut(CUpti_ActivityKind) -> bool,
        impl FnMut(CUpti_ActivityKind) -> bool,
    > {
        let cupti = self.cupti;
        EachKind {
            kinds: &self.kinds,
            enable: move |kind| cupti.enable_kind(kind) == CUptiResult::CUPTI_SUCCESS,
            disable: move |kind| cupti.disable_kind(kind) == CUptiResult::CUPTI_SUCCESS,
        }
    }
}

impl Switch for CuptiSwitch {
    fn off(&mut self) {
        if let Some(since) = self.on_since.take() {
            self.traced += since.elapsed();
        }
        // Kernel counters hold a subscription in the window: released first, so the
        // checks below see only other clients and detaching can subscribe.
        crate::counters::window_ending();
        // A profiler that started during the window has registered its callbacks
        // and enabled its kinds: turning them off would stop its records.
        if let Err(other) = detach::check_alone(detach::no_other_subscriber) {
            return self.step_aside(other);
        }
        let _ = detach::with_attached(|| self.each_kind().off());
        // Every record of the window is in before it ends: windows are measured by
        // the records that arrive in them.
        std::thread::sleep(DRAIN);
        let forced = CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED as u32;
        let _ = detach::with_attached(|| self.cupti.flush(forced));
        self.window_ended();
        // CUPTI must never be finalized under another client; one that subscribed
        // during the drain makes subscribing fail.
        let detached = self
            .detach
            .then(|| detach::detach(DETACH_WAIT, super::driver_call));
        if let Some(log) = &mut self.window_log {
            log_detach(log, &detached);
        }
        match detached {
            Some(Err(CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)) => {
                self.step_aside(detach::OtherClient)
            }
            Some(Err(_)) => self.detach = false,
            _ => {}
        }
    }

    fn on(&mut self) -> bool {
        self.publish_ratio();
        match detach::attach(detach::no_other_subscriber, || reattach(self.cupti)) {
            Ok(true) => {}
            Ok(false) => return false,
            Err(other) => {
                self.step_aside(other);
                return false;
            }
        }
        let all_on = detach::with_attached(|| self.each_kind().on()).unwrap_or(false);
        if all_on {
            self.on_since = Some(Instant::now());
            crate::counters::window_started();
        }
        all_on
    }

    fn aside(&self) -> bool {
        self.aside
    }
}

/// Appends the window that just ended, one line per context (best effort: a failed
/// write only loses the diagnostic).
fn log_window(log: &mut std::fs::File, at: Duration, window: &Window) {
    use std::io::Write;
    for (context, first, last, traced) in window.launches.contexts() {
        let _ = writeln!(
            log,
            "pid={} t_ms={} context={context} first={first} last={last} records={traced}",
            std::process::id(),
            at.as_millis()
        );
    }
}

/// Opens the window log for appending and records which libcupti this process uses;
/// `None` (and one line on stderr) when it cannot be opened.
fn open_window_log(path: &std::path::Path, cupti: &Cupti) -> Option<std::fs::File> {
    use std::io::Write;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    let mut log = file
        .map_err(|e| {
            eprintln!(
                "poolprof-inject: cannot open the window log {}: {e}; not logging windows",
                path.display()
            )
        })
        .ok()?;
    let _ = writeln!(log, "pid={} libcupti={}", std::process::id(), cupti.path);
    Some(log)
}

/// Appends how detaching went: `detach`'s answer, what the last `cuptiFinalize`
/// returned and whether this thread (the library's driver call) or an application
/// thread ran it.
fn log_detach(log: &mut std::fs::File, detached: &Option<Result<bool, CUptiResult>>) {
    use std::io::Write;
    let (finalize, tid) = detach::last_finalize();
    // SAFETY: gettid has no preconditions.
    let by = match tid == unsafe { libc::gettid() } {
        true => "library",
        false => "application",
    };
    let pid = std::process::id();
    let _ = writeln!(
        log,
        "pid={pid} detached={detached:?} last_finalize={finalize} by={by}"
    );
}

/// Registers the buffer callbacks with a freshly attached CUPTI, and promises zeroed
/// buffers again when the first start did (never otherwise: the pool would not zero).
fn reattach(cupti: &Cupti) -> bool {
    let registered = cupti.register(Some(buffer_requested), Some(buffer_completed))
        == CUptiResult::CUPTI_SUCCESS;
    if registered && SHARED.get().is_some_and(|s| s.zeroed_buffers) {
        let _ = promise_zeroed_buffers(cupti);
    }
    registered
}

/// Starts the thread that turns `kinds` (kernels, memcpy, memset) on for `trace_ms` of
/// every `period_ms`, all together, detaching CUPTI in between when `detach` is set
/// (and this CUPTI can), and keeps [`TRACING`] in step; `None` when every record is
/// traced. When the thread cannot start, every record stays traced and the reports
/// say so (ratio 1), so nothing is scaled up by mistake.
pub fn spawn_duty_cycle(
    duty: DutyCycle,
    kinds: &[CUpti_ActivityKind],
    detach: bool,
    window_log: Option<&std::path::Path>,
) -> Option<DutyThread> {
    let DutyCycle::Sampled {
        trace_ms,
        period_ms,
    } = duty
    else {
        return None;
    };
    // Loaded by `start`, which ran before.
    let cupti = library::get()?;
    let started = Instant::now();
    let window_log = window_log.and_then(|path| open_window_log(path, cupti));
    let mut switch = CuptiSwitch {
        cupti,
        kinds: kinds.to_vec(),
        window_log,
        detach,
        started,
        on_since: Some(started),
        traced: Duration::ZERO,
        aside: false,
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let on = Duration::from_millis(u64::from(trace_ms));
    let off = Duration::from_millis(u64::from(period_ms - trace_ms));
    let thread = std::thread::Builder::new()
        .name("poolprof-duty".into())
        .spawn(move || run_duty_cycle(on, off, &rx, &TRACING, &mut switch));
    match thread {
        Ok(thread) => {
            if let Some(shared) = SHARED.get() {
                shared.sampling.store(true, Ordering::Release);
            }
            Some(DutyThread { stop: tx, thread })
        }
        Err(_) => {
            every_record_traced_from_now();
            None
        }
    }
}

/// Records stay on from here to the exit: what the current window holds is whole.
fn every_record_traced_from_now() {
    if let Some(shared) = SHARED.get() {
        shared.duty_ppm.store(FULL_DUTY_PPM, Ordering::Relaxed);
        shared.sampling.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_share_is_traced_over_elapsed_time_within_the_wire_bounds() {
        let ms = |n: u64| Duration::from_millis(n).as_nanos();
        assert_eq!(share_ppm(ms(200), ms(4000)), 50_000);
        assert_eq!(share_ppm(ms(190), ms(4030)), 47_146);
        assert_eq!(share_ppm(0, ms(4000)), 1, "never zero");
        assert_eq!(share_ppm(ms(10), 0), 1_000_000, "never above all");
    }
}
