//! A third forecast evaluation set: a GPU cluster driven by the people who use it, for
//! the GPU-cluster target of issue 11 (beat naive by 10% in MAE), built independently
//! of [`crate::clustersim`] and without looking at the forecaster's results. Where the
//! first simulator draws anonymous Poisson arrivals, here every job comes from a user:
//!
//! - **researchers** submit batches of alike jobs (1–64) on working days around their
//!   own hour, some days not at all; a share of their jobs fails within minutes and
//!   is resubmitted;
//! - **long runners** keep a few large jobs (8–64 GPUs) running for days, each
//!   resubmitted after a pause when it ends (a checkpointed pretraining run);
//! - **debuggers** start short one-GPU jobs through their working hours.
//!
//! Users join and leave during the history (level shifts), some weekdays are holidays,
//! and some clusters are drained for a maintenance window (every job killed and
//! resubmitted when it ends). Jobs of up to 8 GPUs go on one node (best fit), larger
//! ones take whole nodes; the queue is FIFO, with backfill on half the clusters. One
//! class per metric, as the schedulers' exporters report it: the share of GPUs held,
//! the nodes with any GPU held, the jobs started per step. Step 5 or 10 min, 7 or 14
//! days of history after a warm-up of 3–7 days, ending at any time of day; horizon one
//! day. Deterministic per seed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::clustersim::{log_uniform, normal, Allocation, Fit, Metric, State, NODE_GPUS};
use crate::evalset::Case;
use crate::fcast_eval::{cases, evaluate};

/// Waiting jobs a backfill pass looks at (the scheduler's own bound).
const BACKFILL_DEPTH: usize = 256;
/// Seconds in a day.
const DAY: u64 = 86_400;

/// The classes, in table order: one per metric.
pub const CLASSES: [&str; 3] = [
    "tenants: share of GPUs held",
    "tenants: nodes busy",
    "tenants: jobs started",
];

/// Scores `per_class` series of each class (seed base `base`) with the shared scoring;
/// `EVAL_CLASS=k` keeps class k only.
pub fn run(base: u64, per_class: usize, threads: usize) {
    let cases = cases(CLASSES.len(), base, per_class, case);
    let title = format!("tenants set, seed base {base}, {per_class} series per class");
    evaluate(&title, &CLASSES, &cases, None, threads);
}

/// One case of class `class` (0 share, 1 nodes busy, 2 jobs started).
pub fn case(class: usize, seed: u64) -> Case {
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x7e4a_4750);
    let metric = [Metric::Share, Metric::NodesBusy, Metric::Starts][class];
    let step: u64 = if r.gen() { 300 } else { 600 };
    let per_day = (DAY / step) as usize;
    let days = if r.gen() { 7 } else { 14 };
    let warm = r.gen_range(3..=7);
    // the history ends at any time of day, not at midnight
    let skip = warm * per_day + r.gen_range(0..per_day);
    let total = (skip + (days + 1) * per_day) as u64 * step;
    let tenants = Tenants::draw(&mut r, total, warm as u64 * DAY);
    let mut y = tenants.simulate(&mut r, total, step, metric);
    let future = y.split_off(skip + days * per_day);
    let hist = y.split_off(skip);
    let history = hist
        .iter()
        .enumerate()
        .map(|(t, v)| (t as f64 * step as f64, *v))
        .collect();
    Case {
        class: CLASSES[class],
        step: step as f64,
        seasons: vec![per_day],
        history,
        filled: hist,
        future,
        siblings: Vec::new(),
    }
}

/// What kind of user, with the user's own habits.
#[derive(Debug, Clone)]
enum Habit {
    /// Batches of alike jobs on working days.
    Researcher {
        /// Chance of submitting on a working day (a tenth of it on other days).
        active: f64,
        /// Hour of the day the batches come around.
        hour: f64,
        /// Jobs per batch, median.
        batch: f64,
        /// GPUs per job.
        gpus: usize,
        /// Median job duration, seconds.
        median: f64,
        /// Chance a job fails within minutes.
        fails: f64,
    },
    /// A few large jobs kept running, each resubmitted after a pause.
    LongRunner {
        /// Jobs kept running at once.
        jobs: usize,
        /// GPUs per job.
        gpus: usize,
        /// Median job duration, seconds.
        median: f64,
        /// Mean pause before the next job, seconds.
        pause: f64,
    },
    /// Short one-GPU jobs through working hours.
    Debugger {
        /// Jobs per working hour.
        rate: f64,
        /// First and last working hour.
        hours: (f64, f64),
    },
}

/// A user: habits and the time they use the cluster.
#[derive(Debug, Clone)]
struct User {
    habit: Habit,
    /// Seconds from the simulation's start during which the user submits.
    from: u64,
    until: u64,
}

/// A drawn cluster with its users.
#[derive(Debug, Clone)]
struct Tenants {
    nodes: usize,
    users: Vec<User>,
    backfill: bool,
    first_weekday: usize,
    holidays: Vec<u64>,
    /// Maintenance: (start, end) seconds, every job killed at the start.
    maintenance: Option<(u64, u64)>,
}

impl Tenants {
    /// Draws 3–25 users and a cluster sized to 0.2–1.6 times their weekday demand.
    fn draw(r: &mut ChaCha8Rng, total: u64, warm: u64) -> Tenants {
        let count = log_uniform(r, 3.0, 25.0).round() as usize;
        let mut users: Vec<User> = (0..count)
            .map(|_| {
                let habit = Habit::draw(r);
                let (mut from, mut until) = (0, total);
                if r.gen::<f64>() < 0.15 {
                    from = r.gen_range(warm..total);
                }
                if r.gen::<f64>() < 0.15 {
                    until = r.gen_range(warm..total);
                }
                User { habit, from, until }
            })
            .collect();
        users.retain(|u| u.from < u.until);
        let demand: f64 = users.iter().map(|u| u.habit.gpu_seconds_per_day()).sum();
        let gpus = demand / DAY as f64 / log_uniform(r, 0.2, 1.6);
        let nodes = ((gpus / NODE_GPUS as f64).ceil() as usize).clamp(2, 64);
        let days = total / DAY + 1;
        let holidays = (0..days).filter(|_| r.gen::<f64>() < 0.03).collect();
        let maintenance = (r.gen::<f64>() < 0.25).then(|| {
            let start = r.gen_range(warm..total);
            (start, start + r.gen_range(2 * 3600..10 * 3600))
        });
        Tenants {
            nodes,
            users,
            backfill: r.gen(),
            first_weekday: r.gen_range(0..7),
            holidays,
            maintenance,
        }
    }

    /// Whether day `day` (from the start) is a working day.
    fn working(&self, day: u64) -> bool {
        (self.first_weekday + day as usize) % 7 < 5 && !self.holidays.contains(&day)
    }

    /// Runs the cluster for `seconds` and returns `metric` at the end of every `step`
    /// (jobs started counted over the step).
    fn simulate(&self, r: &mut ChaCha8Rng, seconds: u64, step: u64, metric: Metric) -> Vec<f64> {
        let mut sim = Sim::new(self);
        for (u, user) in self.users.iter().enumerate() {
            user.submit_days(r, self, u, seconds, &mut sim);
        }
        if let Some((start, end)) = self.maintenance {
            sim.at(start, Event::Drain);
            sim.at(end, Event::Resume);
        }
        let mut out = Vec::with_capacity((seconds / step) as usize);
        let mut next_sample = step;
        while next_sample <= seconds {
            if sim.next_time() > next_sample {
                out.push(match metric {
                    Metric::Share => {
                        100.0 * sim.nodes.held as f64 / (self.nodes * NODE_GPUS) as f64
                    }
                    Metric::NodesBusy => sim.nodes.busy_nodes() as f64,
                    Metric::Starts => sim.starts as f64,
                });
                sim.starts = 0;
                next_sample += step;
                continue;
            }
            sim.handle(r, self);
        }
        out
    }
}

impl Habit {
    fn draw(r: &mut ChaCha8Rng) -> Habit {
        let u: f64 = r.gen();
        if u < 0.6 {
            Habit::Researcher {
                active: r.gen_range(0.3..0.9),
                hour: r.gen_range(8.0..20.0),
                batch: log_uniform(r, 1.0, 64.0),
                gpus: [1, 1, 2, 4, 8, 8, 16][r.gen_range(0..7)],
                median: log_uniform(r, 1800.0, DAY as f64),
                fails: r.gen_range(0.05..0.4),
            }
        } else if u < 0.8 {
            Habit::LongRunner {
                jobs: r.gen_range(1..=4),
                gpus: [8, 16, 32, 64][r.gen_range(0..4)],
                median: log_uniform(r, DAY as f64, 5.0 * DAY as f64),
                pause: log_uniform(r, 600.0, DAY as f64),
            }
        } else {
            let start = r.gen_range(7.0..11.0);
            Habit::Debugger {
                rate: r.gen_range(1.0..6.0),
                hours: (start, start + r.gen_range(6.0..11.0)),
            }
        }
    }

    /// GPU-seconds asked for on a working day, roughly (to size the cluster).
    fn gpu_seconds_per_day(&self) -> f64 {
        match *self {
            Habit::Researcher {
                active,
                batch,
                gpus,
                median,
                fails,
                ..
            } => active * 1.5 * batch * gpus as f64 * median * 1.3 * (1.0 - fails),
            Habit::LongRunner {
                jobs,
                gpus,
                median,
                pause,
            } => (jobs * gpus) as f64 * DAY as f64 * median / (median + pause),
            Habit::Debugger { rate, hours } => rate * (hours.1 - hours.0) * 900.0,
        }
    }

    /// A new job of this habit.
    fn job(&self, r: &mut ChaCha8Rng, user: usize) -> Job {
        let lognormal = |r: &mut ChaCha8Rng, median: f64, sigma: f64| {
            (median * (sigma * normal(r)).exp()).clamp(60.0, 14.0 * DAY as f64) as u64
        };
        match *self {
            Habit::Researcher {
                gpus,
                median,
                fails,
                ..
            } => {
                let failed = r.gen::<f64>() < fails;
                let seconds = if failed {
                    r.gen_range(60..900)
                } else {
                    lognormal(r, median, 0.6)
                };
                Job {
                    user,
                    gpus,
                    seconds,
                    failed,
                }
            }
            Habit::LongRunner { gpus, median, .. } => Job {
                user,
                gpus,
                seconds: lognormal(r, median, 0.5),
                failed: false,
            },
            Habit::Debugger { .. } => Job {
                user,
                gpus: 1,
                seconds: lognormal(r, 600.0, 1.0),
                failed: false,
            },
        }
    }
}

impl User {
    /// Queues every submission this user plans in advance; long runners' later jobs
    /// and resubmissions follow from jobs ending.
    fn submit_days(&self, r: &mut ChaCha8Rng, t: &Tenants, u: usize, seconds: u64, sim: &mut Sim) {
        let submit = |sim: &mut Sim, at: f64, job: Job| {
            let at = at.max(0.0) as u64;
            if at >= self.from && at < self.until.min(seconds) {
                sim.at(at, Event::Submit(job));
            }
        };
        match self.habit {
            Habit::Researcher {
                active,
                hour,
                batch,
                ..
            } => {
                for day in 0..=seconds / DAY {
                    let chance = if t.working(day) {
                        active
                    } else {
                        active / 10.0
                    };
                    if r.gen::<f64>() >= chance {
                        continue;
                    }
                    for _ in 0..r.gen_range(1..=2) {
                        let at = day as f64 * DAY as f64 + 3600.0 * (hour + 2.0 * normal(r));
                        let jobs = (batch * (0.5 * normal(r)).exp()).round().max(1.0) as usize;
                        for k in 0..jobs {
                            let job = self.habit.job(r, u);
                            submit(sim, at + 5.0 * k as f64, job);
                        }
                    }
                }
            }
            Habit::LongRunner { jobs, .. } => {
                for _ in 0..jobs {
                    let at = self.from as f64 + r.gen_range(0.0..DAY as f64);
                    let job = self.habit.job(r, u);
                    submit(sim, at, job);
                }
            }
            Habit::Debugger { rate, hours } => {
                for day in 0..=seconds / DAY {
                    if !t.working(day) {
                        continue;
                    }
                    let mut at = day as f64 * DAY as f64 + 3600.0 * hours.0;
                    let end = day as f64 * DAY as f64 + 3600.0 * hours.1;
                    loop {
                        at += -(1.0 - r.gen::<f64>()).ln() * 3600.0 / rate;
                        if at >= end {
                            break;
                        }
                        let job = self.habit.job(r, u);
                        submit(sim, at, job);
                    }
                }
            }
        }
    }
}

/// A job waiting or running.
#[derive(Debug, Clone, Copy)]
struct Job {
    user: usize,
    gpus: usize,
    seconds: u64,
    failed: bool,
}

/// Something that happens at a time.
#[derive(Debug, Clone, Copy)]
enum Event {
    Submit(Job),
    /// A running job ends (its index in [`Sim::running`]).
    End(usize),
    Drain,
    Resume,
}

/// The cluster's state while it runs.
struct Sim {
    nodes: State,
    starts: usize,
    now: u64,
    queue: VecDeque<Job>,
    /// Running jobs by index: the job and its allocation (node, GPUs); None once ended.
    running: Vec<Option<(Job, Allocation)>>,
    events: BinaryHeap<Reverse<(u64, usize)>>,
    slab: Vec<Option<Event>>,
    drained: bool,
    backfill: bool,
}

impl Sim {
    fn new(t: &Tenants) -> Sim {
        Sim {
            nodes: State::new(t.nodes),
            starts: 0,
            now: 0,
            queue: VecDeque::new(),
            running: Vec::new(),
            events: BinaryHeap::new(),
            slab: Vec::new(),
            drained: false,
            backfill: t.backfill,
        }
    }

    fn at(&mut self, time: u64, event: Event) {
        self.events.push(Reverse((time, self.slab.len())));
        self.slab.push(Some(event));
    }

    fn next_time(&self) -> u64 {
        self.events.peek().map_or(u64::MAX, |e| e.0 .0)
    }

    /// Handles the next event and starts what can start.
    fn handle(&mut self, r: &mut ChaCha8Rng, t: &Tenants) {
        let Reverse((time, id)) = self.events.pop().expect("an event");
        self.now = time;
        match self.slab[id].take().expect("each event once") {
            Event::Submit(job) => self.queue.push_back(self.fit_to_cluster(job)),
            Event::End(run) => {
                if let Some((job, alloc)) = self.running[run].take() {
                    self.nodes.release(&alloc);
                    self.after(r, t, job);
                }
            }
            Event::Drain => {
                self.drained = true;
                for run in 0..self.running.len() {
                    if let Some((job, alloc)) = self.running[run].take() {
                        self.nodes.release(&alloc);
                        self.queue.push_front(job);
                    }
                }
            }
            Event::Resume => self.drained = false,
        }
        if !self.drained {
            self.schedule();
        }
    }

    /// A job's demand rounded to whole nodes above one node, and at most the cluster.
    fn fit_to_cluster(&self, mut job: Job) -> Job {
        let gpus = self.nodes.free.len() * NODE_GPUS;
        if job.gpus > NODE_GPUS {
            job.gpus = job.gpus.div_ceil(NODE_GPUS) * NODE_GPUS;
        }
        job.gpus = job.gpus.min(gpus);
        job
    }

    /// What follows a job's end: a long runner's next job, a failed job resubmitted.
    fn after(&mut self, r: &mut ChaCha8Rng, t: &Tenants, job: Job) {
        let user = &t.users[job.user];
        match user.habit {
            Habit::LongRunner { pause, .. } => {
                let at = self.now + (-(1.0 - r.gen::<f64>()).ln() * pause) as u64;
                if at < user.until {
                    let next = user.habit.job(r, job.user);
                    self.at(at, Event::Submit(next));
                }
            }
            Habit::Researcher { .. } if job.failed && r.gen::<f64>() < 0.5 => {
                let at = self.now + r.gen_range(300..1800);
                if at < user.until {
                    let next = user.habit.job(r, job.user);
                    self.at(at, Event::Submit(next));
                }
            }
            _ => {}
        }
    }

    /// Starts the queue's head while it fits; with backfill, then any job within
    /// [`BACKFILL_DEPTH`] that fits.
    fn schedule(&mut self) {
        while let Some(job) = self.queue.front().copied() {
            if !self.start(job) {
                break;
            }
            self.queue.pop_front();
        }
        if !self.backfill {
            return;
        }
        let mut k = 1;
        while k < self.queue.len().min(BACKFILL_DEPTH) {
            if self.start(self.queue[k]) {
                self.queue.remove(k);
            } else {
                k += 1;
            }
        }
    }

    /// Places and starts `job` if it fits.
    fn start(&mut self, job: Job) -> bool {
        let Some(alloc) = self.nodes.place(job.gpus, Fit::Best) else {
            return false;
        };
        self.starts += 1;
        let run = self.running.len();
        self.running.push(Some((job, alloc)));
        self.at(self.now + job.seconds, Event::End(run));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maintenance_window_drains_the_cluster_and_it_refills_after() {
        let mut r = ChaCha8Rng::seed_from_u64(7);
        let mut t = Tenants::draw(&mut r, 10 * DAY, 3 * DAY);
        t.maintenance = Some((5 * DAY, 5 * DAY + 6 * 3600));
        let y = t.simulate(&mut r, 10 * DAY, 600, Metric::Share);
        let during = &y[(5 * DAY / 600 + 1) as usize..((5 * DAY + 6 * 3600) / 600) as usize];
        assert!(during.iter().all(|v| *v == 0.0), "drained: {during:?}");
        let before = &y[(4 * DAY / 600) as usize..(5 * DAY / 600) as usize];
        assert!(before.iter().any(|v| *v > 0.0), "busy before");
        let after = &y[(6 * DAY / 600) as usize..];
        assert!(after.iter().any(|v| *v > 0.0), "busy again");
    }

    #[test]
    fn each_class_is_one_metric_with_a_day_ahead() {
        for class in 0..3 {
            let c = case(class, 11);
            let per_day = (DAY as f64 / c.step) as usize;
            assert_eq!(c.future.len(), per_day);
            assert_eq!(c.seasons, vec![per_day]);
            assert!(c.filled.len() == 7 * per_day || c.filled.len() == 14 * per_day);
            assert!(c
                .filled
                .iter()
                .chain(&c.future)
                .all(|v| v.is_finite() && *v >= 0.0));
        }
        let share = case(0, 11);
        assert!(share.filled.iter().all(|v| *v <= 100.0));
    }
}
