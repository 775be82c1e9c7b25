//! The share of kernel launches a duty cycle traced, counted from CUPTI's grid ids.
//!
//! Why: scaling sampled counts by the traced share of *time* assumes the application
//! launches as fast while traced as while not. It does not: tracing slows a
//! launch-bound loop, and detaching CUPTI between windows gives the speed back, so a
//! window holds fewer launches than its share of time (on the H100 a training loop read
//! 8% low). The driver numbers a context's launches with consecutive grid ids whether
//! or not CUPTI is attached, so from the first grid id of one window to the first of
//! the next, that many launches happened, and the records of the first window are the
//! traced ones: their ratio is the traced share of launches, whatever the speed.
//!
//! A process changes pace (warm-up, evaluation, another phase), so the share is taken
//! over the last [`WINDOWS`] windows only ([`RecentLaunches`]). Memory is bounded: at
//! most [`MAX_CONTEXTS`] contexts are followed per window; records of others are
//! ignored (the share is a ratio, so a sample of contexts still estimates it).

use std::collections::{BTreeMap, VecDeque};

/// Most contexts followed per window.
pub const MAX_CONTEXTS: usize = 64;
/// Windows the share covers: the current one, whose records only mark where the
/// period before it ended, and the eight before it (32 s at the default 4 s period).
pub const WINDOWS: usize = 9;

/// Grid ids seen in one context: the lowest, the highest and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    first: i64,
    last: i64,
    traced: u64,
}

impl Span {
    /// Launches between the first and the last traced one, both included.
    fn launches(&self) -> u64 {
        self.last.abs_diff(self.first) + 1
    }
}

/// The grid ids of the launches traced in one window (or one buffer), per context.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LaunchSpans {
    contexts: BTreeMap<u32, Span>,
    /// A grid id was not positive: ids do not number launches here.
    unusable: bool,
}

impl LaunchSpans {
    /// Counts one traced launch.
    pub fn add(&mut self, context: u32, grid_id: i64) {
        if grid_id <= 0 {
            self.unusable = true;
            return;
        }
        self.merge_span(
            context,
            Span {
                first: grid_id,
                last: grid_id,
                traced: 1,
            },
        );
    }

    /// Adds what `other` counted (a buffer's records into the process's total).
    pub fn merge(&mut self, other: &LaunchSpans) {
        self.unusable |= other.unusable;
        for (&context, &span) in &other.contexts {
            self.merge_span(context, span);
        }
    }

    fn merge_span(&mut self, context: u32, span: Span) {
        if let Some(seen) = self.contexts.get_mut(&context) {
            seen.first = seen.first.min(span.first);
            seen.last = seen.last.max(span.last);
            seen.traced += span.traced;
        } else if self.contexts.len() < MAX_CONTEXTS {
            self.contexts.insert(context, span);
        }
    }

    /// Each context's (id, first grid id, last grid id, records), for diagnostics.
    pub fn contexts(&self) -> impl Iterator<Item = (u32, i64, i64, u64)> + '_ {
        self.contexts
            .iter()
            .map(|(&c, span)| (c, span.first, span.last, span.traced))
    }

    /// Whether no context has more records than grid ids between its first and last
    /// (ids that repeat do not number launches).
    fn ids_unique(&self) -> bool {
        self.contexts
            .values()
            .all(|span| span.traced <= span.launches())
    }
}

/// The traced share of launches over the last [`WINDOWS`] windows of a duty cycle.
///
/// The records of a window must all be merged before the next window starts (the
/// duty cycle drains and flushes them while records are off).
#[derive(Debug, Default)]
pub struct RecentLaunches {
    /// Oldest first; the last is the current window.
    windows: VecDeque<LaunchSpans>,
}

impl RecentLaunches {
    /// Adds a buffer's launches to the current window.
    pub fn merge(&mut self, launches: &LaunchSpans) {
        match self.windows.back_mut() {
            Some(current) => current.merge(launches),
            None => self.windows.push_back(launches.clone()),
        }
    }

    /// The current window's launches so far.
    pub fn current(&self) -> Option<&LaunchSpans> {
        self.windows.back()
    }

    /// Starts a new window, forgetting the oldest beyond [`WINDOWS`].
    pub fn window_started(&mut self) {
        self.windows.push_back(LaunchSpans::default());
        while self.windows.len() > WINDOWS {
            self.windows.pop_front();
        }
    }

    /// The traced share of launches in ppm (1..=1 000 000) over the periods between the
    /// first window of each context and the last; `None` when it cannot be told: no
    /// context was seen in two windows yet, some grid id was not positive, ids repeat
    /// within a window, or no launch went untraced (then the ids do not number
    /// every launch).
    pub fn share_ppm(&self) -> Option<u32> {
        if self.windows.iter().any(|w| w.unusable || !w.ids_unique()) {
            return None;
        }
        let mut contexts: BTreeMap<u32, Closed> = BTreeMap::new();
        for window in &self.windows {
            for (&context, span) in &window.contexts {
                contexts
                    .entry(context)
                    .and_modify(|closed| closed.next_window(span))
                    .or_insert_with(|| Closed::first_window(span));
            }
        }
        let (mut traced, mut launches) = (0u128, 0u128);
        for closed in contexts.values() {
            traced += u128::from(closed.traced);
            launches += u128::from(closed.launches());
        }
        (traced < launches).then(|| crate::wire::share_ppm(traced, launches))
    }
}

/// One context's closed periods: from the first grid id of its first window to the
/// first of its latest, and the records of every window before the latest.
#[derive(Debug)]
struct Closed {
    first: i64,
    latest_first: i64,
    traced: u64,
    latest_traced: u64,
}

impl Closed {
    fn first_window(span: &Span) -> Self {
        Self {
            first: span.first,
            latest_first: span.first,
            traced: 0,
            latest_traced: span.traced,
        }
    }

    /// The context shows up in a later window: the period before it is closed.
    fn next_window(&mut self, span: &Span) {
        self.traced += self.latest_traced;
        self.latest_traced = span.traced;
        self.latest_first = span.first;
    }

    fn launches(&self) -> u64 {
        self.latest_first.abs_diff(self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(launches: impl IntoIterator<Item = (u32, i64)>) -> LaunchSpans {
        let mut s = LaunchSpans::default();
        for (context, grid) in launches {
            s.add(context, grid);
        }
        s
    }

    /// Windows in context 1, each tracing `traced` launches from the ids given.
    fn windows(starts: impl IntoIterator<Item = i64>, traced: i64) -> RecentLaunches {
        let mut recent = RecentLaunches::default();
        for (i, first) in starts.into_iter().enumerate() {
            if i > 0 {
                recent.window_started();
            }
            recent.merge(&spans((first..first + traced).map(|g| (1, g))));
        }
        recent
    }

    #[test]
    fn closed_periods_give_the_launch_share_and_the_current_window_only_ends_one() {
        // 100 launches a period, the first 10 traced; the third window is current.
        let recent = windows([1, 101, 201], 10);
        assert_eq!(recent.share_ppm(), Some(100_000));
    }

    #[test]
    fn the_share_is_unknown_until_a_period_closed_with_untraced_launches() {
        assert_eq!(RecentLaunches::default().share_ppm(), None);
        assert_eq!(windows([1], 10).share_ppm(), None, "one window");
        // Two windows whose ids run on without a gap: the ids missed the untraced.
        assert_eq!(windows([1, 11], 10).share_ppm(), None);
    }

    #[test]
    fn contexts_are_counted_apart_and_summed() {
        let mut recent = RecentLaunches::default();
        recent.merge(&spans(
            (1..=10)
                .map(|g| (1, g))
                .chain((1001..=1030).map(|g| (2, g))),
        ));
        recent.window_started();
        recent.merge(&spans(
            (101..=110)
                .map(|g| (1, g))
                .chain((1101..=1130).map(|g| (2, g))),
        ));
        // (10 + 30) traced of (100 + 100) launches.
        assert_eq!(recent.share_ppm(), Some(200_000));
    }

    #[test]
    fn a_context_idle_in_some_windows_spans_them() {
        let mut recent = RecentLaunches::default();
        recent.merge(&spans((1..=10).map(|g| (1, g))));
        recent.window_started();
        recent.window_started();
        recent.window_started();
        recent.merge(&spans((301..=310).map(|g| (1, g))));
        assert_eq!(recent.share_ppm(), Some(33_333), "10 of 300");
    }

    #[test]
    fn buffers_merged_out_of_order_count_the_same() {
        let mut recent = RecentLaunches::default();
        recent.merge(&spans((6..=10).rev().map(|g| (1, g))));
        recent.merge(&spans((1..=5).map(|g| (1, g))));
        recent.window_started();
        recent.merge(&spans((101..=110).map(|g| (1, g))));
        assert_eq!(recent.share_ppm(), Some(100_000));
    }

    #[test]
    fn ids_that_do_not_number_launches_give_no_share() {
        let mut recent = windows([1, 101, 201], 10);
        recent.merge(&spans([(1, 0)]));
        assert_eq!(recent.share_ppm(), None, "zero id");
        let mut recent = windows([1, 101, 201], 10);
        recent.merge(&spans([(1, -4)]));
        assert_eq!(recent.share_ppm(), None, "negative id");
        let mut recent = windows([1, 101, 201], 10);
        recent.merge(&spans([(1, 205), (1, 205), (1, 205)]));
        assert_eq!(recent.share_ppm(), None, "13 records over 10 ids");
    }

    #[test]
    fn only_the_last_windows_count() {
        let n = WINDOWS as i64;
        // A phase tracing 50 of every 100 launches, then one tracing 10.
        let mut recent = windows((0..n).map(|p| 1 + 100 * p), 50);
        assert_eq!(recent.share_ppm(), Some(500_000));
        for p in n..2 * n {
            recent.window_started();
            recent.merge(&spans((1 + 100 * p..11 + 100 * p).map(|g| (1, g))));
        }
        assert_eq!(
            recent.share_ppm(),
            Some(100_000),
            "the first phase is forgotten"
        );
    }

    #[test]
    fn contexts_beyond_the_bound_are_ignored() {
        let mut recent = RecentLaunches::default();
        let contexts = 0..(MAX_CONTEXTS as u32 + 10);
        recent.merge(&spans(contexts.clone().map(|c| (c, 1))));
        assert_eq!(recent.windows[0].contexts.len(), MAX_CONTEXTS);
        recent.window_started();
        recent.merge(&spans(contexts.map(|c| (c, 5))));
        assert_eq!(
            recent.share_ppm(),
            Some(250_000),
            "1 of 4 in each context followed"
        );
    }
}
