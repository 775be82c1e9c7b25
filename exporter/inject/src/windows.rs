//! The records of duty-cycle windows, held until each window's period is measured.
//!
//! A window's share of its period's launches is known once the next window has
//! launched (`launch_share`), so a window that ended waits, pending, until the next
//! one ends; it is then scaled by that share and ready to send. Metrics of a sampled
//! process therefore lag by one period (4 s by default). Without a duty cycle, and
//! after it stopped (records stay on to the exit), everything is ready at once.

use crate::aggregate::Aggregator;
use crate::launch_share::{period_share_ppm, LaunchSpans};
use crate::sample::Sample;

/// One window's records and the grid ids of its launches.
#[derive(Debug)]
pub struct Window {
    /// The records.
    pub records: Aggregator,
    /// The grid ids of its kernel launches.
    pub launches: LaunchSpans,
}

impl Window {
    fn new(max_kernels: usize) -> Self {
        Self {
            records: Aggregator::new(max_kernels),
            launches: LaunchSpans::default(),
        }
    }
}

/// A window whose period is not measured yet, and the share of time to fall back on.
#[derive(Debug)]
struct Pending {
    window: Window,
    time_ppm: u32,
}

/// The current window, the one before it, and what is ready to send.
#[derive(Debug)]
pub struct Windows {
    max_kernels: usize,
    current: Window,
    pending: Option<Pending>,
    ready: Sample,
    /// A window with launches was measured: the process's first context is known.
    opened: bool,
}

impl Windows {
    /// No window yet; an idle report says `share_ppm`.
    pub fn new(max_kernels: usize, share_ppm: u32) -> Self {
        Self {
            max_kernels,
            current: Window::new(max_kernels),
            pending: None,
            ready: Sample::new(Aggregator::new(max_kernels), share_ppm),
            opened: false,
        }
    }

    /// The window records arrive in.
    pub fn current(&mut self) -> &mut Window {
        &mut self.current
    }

    /// The current window ended (its records all arrived) with `time_ppm` the traced
    /// share of time so far: the window before it is measured against it and made
    /// ready, and it becomes the pending one. Returns the share given to the window
    /// made ready, if any.
    pub fn window_ended(&mut self, time_ppm: u32) -> Option<u32> {
        let ended = std::mem::replace(&mut self.current, Window::new(self.max_kernels));
        let share = self.measure_pending(&ended.launches);
        self.pending = Some(Pending {
            window: ended,
            time_ppm,
        });
        share
    }

    /// What is ready to send, while a duty cycle runs.
    pub fn take_ready(&mut self) -> Sample {
        self.ready.take()
    }

    /// Everything held, when no duty cycle runs (any more): the pending window,
    /// measured against the current one, and the current one as a `current_ppm`
    /// sample (every launch since it began was traced, unless records are never on).
    pub fn take_all(&mut self, current_ppm: u32) -> Sample {
        let current = std::mem::replace(&mut self.current, Window::new(self.max_kernels));
        self.measure_pending(&current.launches);
        if !current.records.is_empty() {
            self.ready.absorb(Sample::new(current.records, current_ppm));
        }
        self.ready.take()
    }

    fn measure_pending(&mut self, next: &LaunchSpans) -> Option<u32> {
        let Pending { window, time_ppm } = self.pending.take()?;
        // The process's first window with launches also stands for those before it.
        let opening = match self.opened {
            true => None,
            false => window.launches.contexts().min_by_key(|c| c.1).map(|c| c.0),
        };
        self.opened |= opening.is_some();
        let share = period_share_ppm(&window.launches, next, time_ppm, opening);
        if !window.records.is_empty() {
            self.ready.absorb(Sample::new(window.records, share));
        }
        Some(share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::KernelRun;
    use crate::wire::Geometry;

    const TIME: u32 = 50_000;

    /// Records `n` launches numbered from `first` in the current window.
    fn launch(windows: &mut Windows, first: i64, n: i64) {
        let window = windows.current();
        for grid_id in first..first + n {
            window.launches.add(1, grid_id);
            window.records.record_kernel(&KernelRun {
                device: 0,
                name: "k",
                start_ns: 0,
                end_ns: 10,
                geometry: Geometry::default(),
            });
        }
    }

    #[test]
    fn a_window_is_ready_once_the_next_window_ended_with_its_period_share() {
        let mut w = Windows::new(64, TIME);
        launch(&mut w, 1, 10);
        assert_eq!(
            w.window_ended(TIME),
            None,
            "nothing before the first window"
        );
        assert!(w.take_ready().is_empty(), "its period is not measured yet");
        launch(&mut w, 201, 10);
        assert_eq!(w.window_ended(TIME), Some(50_000), "10 of 200 launches");
        let ready = w.take_ready();
        assert_eq!((ready.records.launches(), ready.share_ppm()), (10, 50_000));
        launch(&mut w, 301, 10);
        assert_eq!(w.window_ended(TIME), Some(100_000), "10 of 100");
        assert_eq!(w.take_ready().share_ppm(), 100_000);
    }

    #[test]
    fn the_first_window_with_launches_also_stands_for_those_before_it() {
        let mut w = Windows::new(64, TIME);
        w.window_ended(TIME); // CUDA still starting: no launch
        launch(&mut w, 101, 10); // 100 launches happened before this window
        assert_eq!(w.window_ended(TIME), Some(TIME), "nothing to measure yet");
        launch(&mut w, 201, 10);
        assert_eq!(
            w.window_ended(TIME),
            Some(50_000),
            "10 of the 200 from id 1"
        );
        launch(&mut w, 301, 10);
        assert_eq!(
            w.window_ended(TIME),
            Some(100_000),
            "later windows: 10 of 100"
        );
    }

    #[test]
    fn taking_all_measures_the_pending_window_and_sends_the_current_whole() {
        let mut w = Windows::new(64, TIME);
        launch(&mut w, 1, 10);
        w.window_ended(TIME);
        // The duty cycle stopped with records on: 40 launches, every one traced.
        launch(&mut w, 101, 40);
        let all = w.take_all(crate::wire::FULL_DUTY_PPM);
        // 10 at 10% and 40 at 100%: 50 launches standing for 140.
        assert_eq!(all.records.launches(), 50);
        assert_eq!(all.share_ppm(), 357_142);
        assert!(w.take_all(crate::wire::FULL_DUTY_PPM).is_empty());
    }

    #[test]
    fn a_pending_window_without_a_next_one_falls_back_to_the_share_of_time() {
        let mut w = Windows::new(64, TIME);
        launch(&mut w, 1, 10);
        w.window_ended(40_000);
        let all = w.take_all(crate::wire::FULL_DUTY_PPM);
        assert_eq!((all.records.launches(), all.share_ppm()), (10, 40_000));
    }

    #[test]
    fn without_a_duty_cycle_everything_is_ready_at_once() {
        let mut w = Windows::new(64, crate::wire::FULL_DUTY_PPM);
        launch(&mut w, 1, 7);
        let all = w.take_all(crate::wire::FULL_DUTY_PPM);
        assert_eq!((all.records.launches(), all.share_ppm()), (7, 1_000_000));
        let idle = w.take_all(crate::wire::FULL_DUTY_PPM);
        assert!(idle.is_empty());
        assert_eq!(idle.share_ppm(), 1_000_000);
    }
}
