//! The records of duty-cycle windows, held until each window's period is measured.
//!
//! A window's share of its period's launches is known once each of its contexts
//! launched in a later window (`launch_share`), so a window that ended waits until
//! then (at most [`MAX_WAIT_WINDOWS`] windows); it is then scaled by that share and
//! ready to send, oldest first. Metrics of a sampled process therefore lag by a
//! period (4 s by default), more while it pauses. Without a duty cycle, and after it
//! stopped (records stay on to the exit), everything is ready at once.

use crate::aggregate::Aggregator;
use crate::launch_share::{period_share_ppm, Counted, LaunchSpans};
use crate::sample::Sample;
use std::collections::VecDeque;

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

/// How many later windows a window waits for each of its contexts to launch again,
/// which ends its period exactly; a context still idle then is taken as stopped.
pub const MAX_WAIT_WINDOWS: u32 = 3;

/// A window whose period is not measured yet.
#[derive(Debug)]
struct Pending {
    window: Window,
    /// The traced share of time when it ended, for contexts whose ids are unusable.
    time_ppm: u32,
    /// Each context's first later window with launches.
    later: LaunchSpans,
    /// Later windows that ended since.
    waited: u32,
}

/// The current window, those waiting for their period to be measured, and what is
/// ready to send.
#[derive(Debug)]
pub struct Windows {
    max_kernels: usize,
    current: Window,
    pending: VecDeque<Pending>,
    ready: Sample,
    /// How far each context's launches are accounted for.
    counted: Counted,
    /// A duty cycle ended windows: the current one's launches before it that no period
    /// counted count with it at the end.
    sampled: bool,
}

impl Windows {
    /// No window yet; an idle report says `share_ppm`.
    pub fn new(max_kernels: usize, share_ppm: u32) -> Self {
        Self {
            max_kernels,
            current: Window::new(max_kernels),
            pending: VecDeque::new(),
            ready: Sample::new(Aggregator::new(max_kernels), share_ppm),
            counted: Counted::default(),
            sampled: false,
        }
    }

    /// The window records arrive in.
    pub fn current(&mut self) -> &mut Window {
        &mut self.current
    }

    /// The current window ended (its records all arrived) with `time_ppm` the traced
    /// share of time so far. Earlier windows whose contexts all launched again, or that
    /// waited [`MAX_WAIT_WINDOWS`], are measured and made ready; the shares they were
    /// given are returned.
    pub fn window_ended(&mut self, time_ppm: u32) -> Vec<u32> {
        self.sampled = true;
        let ended = std::mem::replace(&mut self.current, Window::new(self.max_kernels));
        for pending in &mut self.pending {
            pending.later.add_new_contexts(&ended.launches);
            pending.waited += 1;
        }
        let shares = self.release(|p| {
            p.window.launches.contexts_within(&p.later) || p.waited >= MAX_WAIT_WINDOWS
        });
        if !ended.records.is_empty() {
            self.pending.push_back(Pending {
                window: ended,
                time_ppm,
                later: LaunchSpans::default(),
                waited: 0,
            });
        }
        shares
    }

    /// What is ready to send, while a duty cycle runs.
    pub fn take_ready(&mut self) -> Sample {
        self.ready.take()
    }

    /// Everything held, when no duty cycle runs (any more): the windows waiting,
    /// measured against the current one, and the current one as a `current_ppm`
    /// sample (every launch since it began was traced, unless records are never on).
    /// After a duty cycle, launches before the current window that no period counted
    /// count with it.
    pub fn take_all(&mut self, current_ppm: u32) -> Sample {
        let current = self.end_current();
        if !current.records.is_empty() {
            let share = match self.sampled {
                true => {
                    let end = current.launches.ended_here();
                    period_share_ppm(&current.launches, &end, current_ppm, &mut self.counted)
                }
                false => current_ppm,
            };
            self.ready.absorb(Sample::new(current.records, share));
        }
        self.ready.take()
    }

    /// Records stopped for good before the current window ended (another CUPTI client
    /// took them over): the waiting windows are measured against the launches it saw
    /// and made ready; its own records, which may lack some, are dropped.
    pub fn cut_short(&mut self) {
        let _dropped = self.end_current();
    }

    /// Ends the current window for good: every waiting window is measured against it
    /// (a context it did not see is taken as stopped) and made ready.
    fn end_current(&mut self) -> Window {
        let current = std::mem::replace(&mut self.current, Window::new(self.max_kernels));
        for pending in &mut self.pending {
            pending.later.add_new_contexts(&current.launches);
        }
        self.release(|_| true);
        current
    }

    /// Measures the waiting windows that are `due`, oldest first and in order (each
    /// moves on how far launches are counted), and makes them ready.
    fn release(&mut self, due: impl Fn(&Pending) -> bool) -> Vec<u32> {
        let mut shares = Vec::new();
        while let Some(pending) = self.pending.pop_front() {
            if !due(&pending) {
                self.pending.push_front(pending);
                break;
            }
            let (launches, time_ppm) = (&pending.window.launches, pending.time_ppm);
            let share = period_share_ppm(launches, &pending.later, time_ppm, &mut self.counted);
            self.ready
                .absorb(Sample::new(pending.window.records, share));
            shares.push(share);
        }
        shares
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
        assert!(
            w.window_ended(TIME).is_empty(),
            "nothing before the first window"
        );
        assert!(w.take_ready().is_empty(), "its period is not measured yet");
        launch(&mut w, 201, 10);
        assert_eq!(w.window_ended(TIME), [50_000], "10 of 200 launches");
        let ready = w.take_ready();
        assert_eq!((ready.records.launches(), ready.share_ppm()), (10, 50_000));
        launch(&mut w, 301, 10);
        assert_eq!(w.window_ended(TIME), [100_000], "10 of 100");
    }

    #[test]
    fn the_first_window_with_launches_also_stands_for_those_before_it() {
        let mut w = Windows::new(64, TIME);
        assert!(
            w.window_ended(TIME).is_empty(),
            "CUDA still starting: no launch"
        );
        launch(&mut w, 101, 10); // 100 launches happened before this window
        assert!(w.window_ended(TIME).is_empty(), "nothing to measure yet");
        launch(&mut w, 201, 10);
        assert_eq!(w.window_ended(TIME), [50_000], "10 of the 200 from id 1");
        launch(&mut w, 301, 10);
        assert_eq!(w.window_ended(TIME), [100_000], "later windows: 10 of 100");
    }

    #[test]
    fn taking_all_measures_the_pending_window_and_sends_the_current_whole() {
        let mut w = after_one_window();
        // The duty cycle stopped with records on: 40 launches, every one traced.
        launch(&mut w, 101, 40);
        let all = w.take_all(crate::wire::FULL_DUTY_PPM);
        // 10 at 10% and 40 at 100%: 50 launches standing for 140.
        assert_eq!(all.records.launches(), 50);
        assert_eq!(all.share_ppm(), 357_142);
        assert!(w.take_all(crate::wire::FULL_DUTY_PPM).is_empty());
    }

    #[test]
    fn cut_short_measures_the_waiting_window_and_drops_the_current_one() {
        let mut w = after_one_window();
        // Another client took the records over during this window: 3 of them came.
        launch(&mut w, 101, 3);
        w.cut_short();
        let sent = w.take_all(TIME);
        assert_eq!(
            (sent.records.launches(), sent.share_ppm()),
            (10, 100_000),
            "the first window: 10 of the 100 launches before the cut one"
        );
        assert!(w.take_all(TIME).is_empty(), "nothing of the cut window");
    }

    #[test]
    fn a_window_waits_through_a_pause_for_its_period_to_end() {
        let mut w = after_one_window();
        assert!(
            w.window_ended(TIME).is_empty(),
            "paused through the next window"
        );
        launch(&mut w, 301, 10);
        // The period ran on to the launches after the pause: 10 of 300.
        assert_eq!(w.window_ended(TIME), [33_333]);
    }

    /// Ten launches (ids 1 to 10) in a window that ended; nothing measured yet.
    fn after_one_window() -> Windows {
        let mut w = Windows::new(64, TIME);
        launch(&mut w, 1, 10);
        w.window_ended(TIME);
        w
    }

    /// Ten launches in one window, then windows without a launch until the next one
    /// ends the wait.
    fn idle_after_one_window() -> Windows {
        let mut w = after_one_window();
        for _ in 1..MAX_WAIT_WINDOWS {
            assert!(w.window_ended(TIME).is_empty());
        }
        w
    }

    #[test]
    fn a_window_whose_process_stopped_is_taken_halfway() {
        let mut w = idle_after_one_window();
        // 10 records: between 10 launches and 200 at 5% of the time; 105.
        assert_eq!(w.window_ended(TIME), [95_238]);
        let mut w = after_one_window();
        let at_exit = w.take_all(crate::wire::FULL_DUTY_PPM);
        assert_eq!(
            (at_exit.records.launches(), at_exit.share_ppm()),
            (10, 95_238)
        );
    }

    #[test]
    fn launches_during_a_pause_longer_than_the_wait_count_with_the_next_window() {
        let mut w = idle_after_one_window();
        assert_eq!(
            w.window_ended(TIME),
            [95_238],
            "taken as stopped: up to id 105"
        );
        // It resumed between windows: ids 106..=400 fell in no window.
        launch(&mut w, 401, 10);
        w.window_ended(TIME);
        launch(&mut w, 501, 10);
        // 10 records for ids 106..=500: 395 launches.
        assert_eq!(w.window_ended(TIME), [25_316]);
    }

    /// Scaled launches of `sample` (each launch over the share it samples), and how
    /// far the share's rounding to whole ppm can move them.
    fn scaled(sample: &Sample) -> (f64, f64) {
        let share = f64::from(sample.share_ppm());
        let scaled = sample.records.launches() as f64 * 1e6 / share;
        (scaled, scaled / share)
    }

    proptest::proptest! {
        /// A process launching at any pace inside and outside windows, pausing through
        /// up to two windows at a time, that exits just after its first launch in a
        /// window: every launch is counted, but for the estimate of that last window.
        #[test]
        fn scaled_launches_add_up_to_the_launches_made(
            periods in proptest::collection::vec((0u32..300, 0u32..3000), 1..40),
            before in 0u32..5000,
        ) {
            let mut w = Windows::new(64, TIME);
            let mut next_id = 1 + i64::from(before); // launched before the first window
            let mut made = u64::from(before);
            let (mut sent, mut rounding) = (0.0, 0.0);
            let mut idle_windows = 0;
            for (inside, outside) in periods {
                // At most two windows in a row without a launch.
                let inside = if inside == 0 && idle_windows == 2 { 1 } else { inside };
                idle_windows = if inside == 0 { idle_windows + 1 } else { 0 };
                launch(&mut w, next_id, i64::from(inside));
                w.window_ended(TIME);
                let (launches, error) = scaled(&w.take_ready());
                (sent, rounding) = (sent + launches, rounding + error);
                next_id += i64::from(inside + outside);
                made += u64::from(inside + outside);
            }
            launch(&mut w, next_id, 1);
            made += 1;
            // The last sample absorbs the windows still waiting (at most
            // MAX_WAIT_WINDOWS) and the current one: each share was rounded before
            // the absorbed share is rounded again, and only that last one is seen here
            // (a window of 1 launch in 5,182 at 192 ppm, absorbed with the exit's
            // launch at 383 ppm: 26 launches from the first rounding, 13 from the second).
            let (launches, error) = scaled(&w.take_all(crate::wire::FULL_DUTY_PPM));
            let parts = f64::from(MAX_WAIT_WINDOWS + 2);
            (sent, rounding) = (sent + launches, rounding + parts * error);
            // The last window's one launch was taken halfway to a whole period at 5%.
            let last_window = (1.0 + 1e6 / f64::from(TIME)) / 2.0;
            proptest::prop_assert!(
                (sent - made as f64).abs() <= last_window + rounding + 1e-6 * made as f64,
                "sent {sent}, made {made}, rounding {rounding}"
            );
        }
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
