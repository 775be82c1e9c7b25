//! The share of a period's kernel launches that its traced window holds, counted from
//! CUPTI's grid ids.
//!
//! Why: scaling sampled counts by the traced share of *time* assumes the application
//! launches as fast while traced as while not. It does not: tracing slows a
//! launch-bound loop, and detaching CUPTI between windows gives the speed back, so a
//! window holds fewer launches than its share of time (on the H100 a training loop read
//! 8% low); and a program that pauses or speeds up between windows is misjudged too.
//! The driver numbers a context's launches with consecutive grid ids whether or not
//! CUPTI is attached, so from the first grid id of one window to the first of the next,
//! that many launches happened, and the window's ids from its first to its last are
//! the traced ones: their ratio is that period's traced share, whatever the pace.
//! Ids, not records, because not every id is a kernel launch (on the H100, 4% of a
//! training loop's ids within a window had no kernel record; none of a loop of tiny
//! kernels' did).
//!
//! Launches that fell in no period (before a process's first window, or during a pause
//! longer than a window waits for) are known from the ids too, and count with the next
//! window of their context ([`Counted`]). A context that stopped after a window is the
//! one estimate left: it is taken to have stopped halfway through the period.
//! A context whose ids do not look like consecutive launch numbers (fewer than half of
//! a window's ids traced, ids that repeat or go backwards, ids not positive) falls
//! back to the traced share of time.
//! Memory is bounded: at most [`MAX_CONTEXTS`] contexts are followed per window; the
//! records of others are still counted, at the share of time.

use crate::wire::{share_ppm, FULL_DUTY_PPM};
use std::collections::BTreeMap;

/// Most contexts followed per window.
pub const MAX_CONTEXTS: usize = 64;

/// Grid ids traced in one context: the lowest, the highest and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    first: i64,
    last: i64,
    traced: u64,
}

impl Span {
    /// Whether the ids look like consecutive launch numbers: while a window traces,
    /// nearly every launch between its first and last id has a record (all of them in
    /// a loop of tiny kernels on the H100, 96% in a training loop). Ids that are not
    /// positive never reach a span ([`LaunchSpans::add`]).
    fn dense(&self) -> bool {
        let ids = self.ids();
        self.traced <= ids && self.traced * 2 >= ids
    }

    /// Grid ids from the first to the last, both included.
    fn ids(&self) -> u64 {
        self.last.abs_diff(self.first) + 1
    }
}

/// The grid ids of the launches traced in one window (or one buffer), per context.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LaunchSpans {
    contexts: BTreeMap<u32, Span>,
    /// Launches of contexts beyond [`MAX_CONTEXTS`], or with ids that are not positive.
    unfollowed: u64,
}

impl LaunchSpans {
    /// Counts one traced launch.
    pub fn add(&mut self, context: u32, grid_id: i64) {
        if grid_id <= 0 {
            self.unfollowed += 1;
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

    /// Adds what `other` counted (a buffer's launches into its window's).
    pub fn merge(&mut self, other: &LaunchSpans) {
        self.unfollowed += other.unfollowed;
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
        } else {
            self.unfollowed += span.traced;
        }
    }

    /// Adds the contexts of `later` not seen in this one yet, as they were there: the
    /// first later window each context launched in, which ends a pending window's
    /// period.
    pub fn add_new_contexts(&mut self, later: &LaunchSpans) {
        for (&context, &span) in &later.contexts {
            if !self.contexts.contains_key(&context) && self.contexts.len() < MAX_CONTEXTS {
                self.contexts.insert(context, span);
            }
        }
    }

    /// Whether every context of `self` is in `other`.
    pub fn contexts_within(&self, other: &LaunchSpans) -> bool {
        self.contexts.keys().all(|c| other.contexts.contains_key(c))
    }

    /// For each context, a window that launched right after this one's last id: it
    /// ends this one's period there (records stayed on to the end).
    pub fn ended_here(&self) -> LaunchSpans {
        let contexts = self.contexts.iter().map(|(&c, span)| {
            let next = span.last.saturating_add(1);
            (
                c,
                Span {
                    first: next,
                    last: next,
                    traced: 1,
                },
            )
        });
        LaunchSpans {
            contexts: contexts.collect(),
            unfollowed: 0,
        }
    }

    /// Each context's (id, first grid id, last grid id, records), for diagnostics.
    pub fn contexts(&self) -> impl Iterator<Item = (u32, i64, i64, u64)> + '_ {
        self.contexts
            .iter()
            .map(|(&c, span)| (c, span.first, span.last, span.traced))
    }
}

/// How far each context's launches are accounted for: the last grid id counted in a
/// measured period. A context's launches after it that fell in no period (before the
/// process's first window, or during a pause longer than a window waits) count with
/// the next window it launches in.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counted {
    up_to: BTreeMap<u32, i64>,
}

impl Counted {
    /// Launches of `context` before grid id `first` not counted yet: the gap since the
    /// last one counted; for the process's first context, all of them (taking its ids
    /// to number from 1 made whole sampled processes agree with tracing every launch on
    /// the H100, runs 20 and 21); none for a later one, whose ids might number the
    /// process's launches rather than its own.
    fn uncounted_before(&self, context: u32, first: i64) -> u64 {
        match self.up_to.get(&context) {
            Some(&up_to) if first > up_to => first.abs_diff(up_to) - 1,
            Some(_) => 0,
            None if self.up_to.is_empty() => first.abs_diff(1),
            None => 0,
        }
    }

    fn set(&mut self, context: u32, up_to: i64) {
        if self.up_to.contains_key(&context) || self.up_to.len() < MAX_CONTEXTS {
            self.up_to.insert(context, up_to);
        }
    }
}

/// The share of its period's launches that `window` traced, in ppm (1..=1 000 000):
/// the period runs from the window's first grid id to the first in `next`, per
/// context (`next` holds, for each context, the first later window it launched in),
/// and takes in the launches before it that no period counted (`counted`, which this
/// moves on). A context missing from `next` went idle after the window; its period is
/// taken halfway between its last traced launch and a whole period at the window's
/// pace. A context whose ids are unusable (see the module) counts at `time_ppm`, the
/// traced share of time; so does everything when no context is measured.
pub fn period_share_ppm(
    window: &LaunchSpans,
    next: &LaunchSpans,
    time_ppm: u32,
    counted: &mut Counted,
) -> u32 {
    let time_ppm = u128::from(time_ppm.clamp(1, FULL_DUTY_PPM));
    let million = u128::from(FULL_DUTY_PPM);
    // Launches are summed in millionths, so records at the share of time add exactly.
    let at_time_share = |records: u64| u128::from(records) * million * million / time_ppm;
    let (mut traced, mut launches) = (0u128, 0u128);
    let mut measured = false;
    let mut add = |records: u64, millionths: u128| {
        traced += u128::from(records);
        launches += millionths;
    };
    add(window.unfollowed, at_time_share(window.unfollowed));
    for (&context, span) in &window.contexts {
        let ids = span.ids();
        let (period, up_to) = match next.contexts.get(&context) {
            Some(after) if span.dense() && after.dense() && after.first > span.last => {
                (span.first.abs_diff(after.first), after.first - 1)
            }
            // It stopped somewhere between its last traced launch and a whole period
            // at the window's pace; halfway errs by at most half of that.
            None if span.dense() => {
                let whole = u128::from(ids) * million / time_ppm;
                let period = ((u128::from(ids) + whole) / 2).min(u128::from(u64::MAX)) as u64;
                (period, span.first.saturating_add_unsigned(period) - 1)
            }
            _ => {
                add(span.traced, at_time_share(span.traced));
                counted.set(context, span.last);
                continue;
            }
        };
        let before = counted.uncounted_before(context, span.first);
        // Not every id is a kernel launch: the window's records stand for its ids.
        let period_ids = u128::from(period) + u128::from(before);
        add(
            span.traced,
            period_ids * million * u128::from(span.traced) / u128::from(ids),
        );
        counted.set(context, up_to);
        measured = true;
    }
    if !measured {
        return time_ppm as u32;
    }
    share_ppm(traced * million, launches)
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

    /// `traced` consecutive launches of context 1 from id `first`.
    fn window(first: i64, traced: i64) -> LaunchSpans {
        spans((first..first + traced).map(|g| (1, g)))
    }

    /// The share of `this` up to `next`, every launch before `this` counted already.
    fn share(this: &LaunchSpans, next: &LaunchSpans) -> u32 {
        let mut counted = Counted::default();
        for (context, first, _, _) in this.contexts() {
            counted.set(context, first - 1);
        }
        period_share_ppm(this, next, TIME, &mut counted)
    }

    const TIME: u32 = 50_000;

    #[test]
    fn a_window_holds_its_records_over_the_launches_until_the_next_window() {
        // 10 traced of the 100 launches numbered 1..=100.
        assert_eq!(share(&window(1, 10), &window(101, 10)), 100_000);
        // A program twice as fast between windows as while traced: 10 of 200.
        assert_eq!(share(&window(1, 10), &window(201, 10)), 50_000);
    }

    #[test]
    fn launches_before_a_window_that_no_period_counted_count_with_it() {
        let (first, next) = (window(91, 10), window(191, 10));
        // A context not seen before: its ids number from 1, so 90 launches came before.
        let mut counted = Counted::default();
        assert_eq!(
            period_share_ppm(&first, &next, TIME, &mut counted),
            52_631,
            "10 of 190"
        );
        // Counted up to the next window's first launch: nothing before that one.
        let then = window(291, 10);
        assert_eq!(period_share_ppm(&next, &then, TIME, &mut counted), 100_000);
        // A pause the window before did not wait through: ids 291..=390 fell in no
        // period, and count with the window after it.
        let mut counted = Counted::default();
        counted.set(1, 290);
        let (resumed, after) = (window(391, 10), window(491, 10));
        assert_eq!(
            period_share_ppm(&resumed, &after, TIME, &mut counted),
            50_000,
            "10 of 200"
        );
    }

    #[test]
    fn only_the_first_context_counts_its_launches_from_id_1() {
        let mut counted = Counted::default();
        let first = spans(
            (91..=100)
                .map(|g| (1, g))
                .chain((5001..=5010).map(|g| (2, g))),
        );
        let next = spans([(1, 191), (2, 5101)]);
        // Context 1 (seen first, lowest id): 10 of 190; context 2: 10 of 100.
        assert_eq!(period_share_ppm(&first, &next, TIME, &mut counted), 68_965);
    }

    #[test]
    fn a_stopped_context_is_counted_up_to_its_estimate_and_resumes_after_it() {
        let mut counted = Counted::default();
        // Ids 1..=10, then idle: halfway to 200 ids at 5%, 105 ids, counted to 105.
        let stopped = period_share_ppm(&window(1, 10), &LaunchSpans::default(), TIME, &mut counted);
        assert_eq!(stopped, 95_238);
        assert_eq!(counted.uncounted_before(1, 306), 200, "ids 106..=305");
    }

    #[test]
    fn the_share_is_of_ids_when_some_ids_are_not_kernels() {
        // 8 kernel records among the 10 ids of the window: 10 of the period's 100 ids.
        let window = spans([1, 2, 3, 5, 6, 7, 9, 10].map(|g| (1, g)));
        assert_eq!(share(&window, &spans([(1, 101)])), 100_000);
    }

    #[test]
    fn a_window_that_traced_every_launch_of_its_period_reads_one() {
        let burst_then_idle = share(&window(1, 40), &window(41, 3));
        assert_eq!(burst_then_idle, FULL_DUTY_PPM);
    }

    #[test]
    fn contexts_are_counted_apart_and_summed() {
        let this = spans(
            (1..=10)
                .map(|g| (1, g))
                .chain((1001..=1030).map(|g| (2, g))),
        );
        let next = spans(
            (101..=105)
                .map(|g| (1, g))
                .chain((1101..=1110).map(|g| (2, g))),
        );
        // (10 + 30) traced of (100 + 100) launches.
        assert_eq!(share(&this, &next), 200_000);
    }

    #[test]
    fn buffers_merged_out_of_order_count_the_same() {
        let mut this = spans((6..=10).rev().map(|g| (1, g)));
        this.merge(&spans((1..=5).map(|g| (1, g))));
        assert_eq!(this, window(1, 10));
    }

    #[test]
    fn without_a_measurable_context_the_share_of_time_is_used() {
        let empty = LaunchSpans::default();
        assert_eq!(share(&empty, &window(1, 5)), TIME);
        let sparse = spans([(1, 1), (1, 1000)]);
        assert_eq!(share(&sparse, &window(5001, 5)), TIME, "2 of 1000 ids");
        let outlier = spans((1..=10).map(|g| (1, g)).chain([(1, 9_000_000)]));
        assert_eq!(share(&outlier, &window(101, 5)), TIME, "one stray id");
        assert_eq!(share(&window(101, 10), &window(1, 10)), TIME, "backwards");
        let repeated = spans([(1, 5), (1, 5), (1, 5)]);
        assert_eq!(share(&repeated, &window(101, 5)), TIME, "repeats");
        let zero = spans([(1, 0), (1, -3)]);
        assert_eq!(share(&zero, &window(101, 5)), TIME, "not positive");
    }

    #[test]
    fn a_context_that_went_idle_is_taken_halfway_through_its_period() {
        // 10 records over ids 1..=10; a whole period at 5% would be 200 launches: 105.
        let stopped = share(&window(1, 10), &LaunchSpans::default());
        assert_eq!(stopped, 95_238);
    }

    #[test]
    fn later_windows_add_only_contexts_not_seen_yet() {
        let mut later = spans([(1, 101)]);
        later.add_new_contexts(&spans([(1, 201), (2, 7)]));
        assert_eq!(later, spans([(1, 101), (2, 7)]));
        assert!(spans([(2, 1)]).contexts_within(&later));
        assert!(!spans([(3, 1)]).contexts_within(&later));
    }

    #[test]
    fn unmeasurable_contexts_count_at_the_share_of_time_beside_measured_ones() {
        // Context 1: 10 of 100 launches. Context 2's ids are sparse (2 records over 100
        // ids), so its records stand for 2 / 5% = 40 launches: 12 of 140 in all.
        let this = spans((1..=10).map(|g| (1, g)).chain([(2, 501), (2, 600)]));
        let next = spans([(1, 101), (2, 700)]);
        assert_eq!(share(&this, &next), 85_714);
    }

    #[test]
    fn contexts_beyond_the_bound_count_at_the_share_of_time() {
        let contexts = 0..(MAX_CONTEXTS as u32 + 1);
        let this = spans(contexts.clone().flat_map(|c| [(c, 1), (c, 2)]));
        let next = spans(contexts.map(|c| (c, 21)));
        assert_eq!(this.contexts.len(), MAX_CONTEXTS);
        assert_eq!(this.unfollowed, 2);
        // 64 contexts at 2 of 20 launches; the last one's 2 records at 5%: 130 of 1320.
        assert_eq!(share(&this, &next), 98_484);
    }
}
