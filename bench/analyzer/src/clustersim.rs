//! A virtual GPU cluster, simulated job by job, for the evaluation class "cluster jobs
//! (simulated)" (issue 11): what a scheduler's metrics look like when the series is
//! driven by jobs, not drawn as a curve. G GPUs in nodes of 8; Poisson arrivals whose
//! rate follows the time of day and the weekday; occasional sweeps of tens to hundreds
//! of jobs at once; GPU demand from {1, …, 64}, mostly small; lognormal durations with a
//! heavy tail; a FIFO queue, with first-fit backfill on some clusters. Oversubscribed
//! clusters pin at 100% and queue; quiet nights and weekends drain them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// GPUs per node.
pub(crate) const NODE_GPUS: usize = 8;
/// GPU demands a job may ask for, and their weights (mostly small jobs).
const DEMANDS: [(usize, f64); 7] = [
    (1, 0.38),
    (2, 0.2),
    (4, 0.15),
    (8, 0.13),
    (16, 0.07),
    (32, 0.04),
    (64, 0.03),
];
/// Longest job, seconds (a week: longer ones are checkpointed and resubmitted).
const MAX_DURATION: f64 = 7.0 * 86_400.0;
/// Queued jobs beyond which users stop submitting (arrivals are dropped).
const MAX_QUEUE: usize = 5_000;

/// What one emitted series measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Share of the GPUs held by jobs, percent.
    Share,
    /// Nodes with any GPU held.
    NodesBusy,
    /// Jobs started during the step.
    Starts,
}

/// A simulated cluster's settings, drawn per case.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Number of nodes of [`NODE_GPUS`] GPUs.
    pub nodes: usize,
    /// Offered load: GPU-seconds asked for per GPU-second, before bursts.
    pub load: f64,
    /// Daily swing of the arrival rate (0 = flat).
    pub daily: f64,
    /// Hour of the day at which submissions peak.
    pub peak_hour: f64,
    /// Arrival rate on weekends relative to weekdays.
    pub weekend: f64,
    /// Weekday of the first simulated day (0 = Monday).
    pub first_weekday: usize,
    /// Sweeps (submission bursts) per day, on average.
    pub bursts_per_day: f64,
    /// Median job duration, seconds.
    pub median_duration: f64,
    /// Log-standard deviation of job durations.
    pub sigma: f64,
    /// Whether jobs behind a blocked head may start where they fit.
    pub backfill: bool,
}

impl Cluster {
    /// Draws a cluster: 16 to 512 GPUs, load 0.15–1.4 of capacity, some nearly flat.
    pub fn draw(r: &mut ChaCha8Rng) -> Cluster {
        let nodes = log_uniform(r, 2.0, 64.0).round() as usize;
        let daily = if r.gen::<f64>() < 0.25 {
            r.gen_range(0.0..0.1)
        } else {
            r.gen_range(0.2..0.9)
        };
        Cluster {
            nodes,
            load: log_uniform(r, 0.15, 1.4),
            daily,
            peak_hour: r.gen_range(9.0..17.0),
            weekend: r.gen_range(0.2..1.0),
            first_weekday: r.gen_range(0..7),
            bursts_per_day: if r.gen::<f64>() < 0.3 {
                0.0
            } else {
                r.gen_range(0.1..1.5)
            },
            median_duration: log_uniform(r, 600.0, 4.0 * 3600.0),
            sigma: r.gen_range(1.0..2.0),
            backfill: r.gen(),
        }
    }

    fn gpus(&self) -> usize {
        self.nodes * NODE_GPUS
    }

    /// Arrival rate relative to its mean at `t` seconds: daily cycle times weekday.
    fn intensity(&self, t: f64) -> f64 {
        let day = (t / 86_400.0).floor() as usize;
        let hour = (t / 3600.0) % 24.0;
        let cycle =
            1.0 + self.daily * (2.0 * std::f64::consts::PI * (hour - self.peak_hour) / 24.0).cos();
        let weekday = (self.first_weekday + day) % 7;
        cycle * if weekday >= 5 { self.weekend } else { 1.0 }
    }

    /// Mean GPU demand per job, each capped at the cluster's size.
    fn mean_demand(&self) -> f64 {
        let total: f64 = DEMANDS.iter().map(|d| d.1).sum();
        DEMANDS
            .iter()
            .map(|&(g, w)| g.min(self.gpus()) as f64 * w)
            .sum::<f64>()
            / total
    }
}

/// A job waiting or running.
#[derive(Debug, Clone, Copy)]
struct Job {
    gpus: usize,
    seconds: u64,
}

/// Simulates `cluster` for `seconds` and returns `metric` at every `step` (the value at
/// the end of each step; starts counted over it).
pub fn simulate(
    r: &mut ChaCha8Rng,
    cluster: &Cluster,
    seconds: u64,
    step: u64,
    metric: Metric,
) -> Vec<f64> {
    let arrivals = arrivals(r, cluster, seconds as f64);
    let mut state = State::new(cluster.nodes);
    let mut queue = Queue::default();
    // (end time, first node, allocation id) of running jobs
    let mut running: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut allocations: Vec<Allocation> = Vec::new();
    let mut out = Vec::with_capacity((seconds / step) as usize);
    let (mut next_sample, mut next_arrival, mut starts) = (step, 0usize, 0usize);
    while next_sample <= seconds {
        let arrival_at = arrivals.get(next_arrival).map_or(u64::MAX, |a| a.0);
        let end_at = running.peek().map_or(u64::MAX, |e| e.0 .0);
        let now = arrival_at.min(end_at);
        if now > next_sample {
            out.push(match metric {
                Metric::Share => 100.0 * state.held as f64 / cluster.gpus() as f64,
                Metric::NodesBusy => state.busy_nodes() as f64,
                Metric::Starts => starts as f64,
            });
            starts = 0;
            next_sample += step;
            continue;
        }
        if end_at <= arrival_at {
            let Reverse((_, id)) = running.pop().expect("a running job");
            state.release(&allocations[id]);
        } else {
            if queue.len < MAX_QUEUE {
                queue.push(arrivals[next_arrival].1);
            }
            next_arrival += 1;
        }
        while let Some(job) = queue.next(&state.room(), cluster.backfill) {
            let alloc = state
                .place(job.gpus, Fit::First)
                .expect("the queue checked the room");
            running.push(Reverse((now + job.seconds, allocations.len())));
            allocations.push(alloc);
            starts += 1;
        }
    }
    out
}

/// Every submission over `seconds`, in time order: Poisson arrivals thinned by the
/// cluster's intensity, and sweeps of many alike jobs submitted within minutes.
fn arrivals(r: &mut ChaCha8Rng, c: &Cluster, seconds: f64) -> Vec<(u64, Job)> {
    let mean_seconds = c.median_duration * (c.sigma * c.sigma / 2.0).exp();
    let per_second = c.load * c.gpus() as f64 / (c.mean_demand() * mean_seconds);
    let top = (1.0 + c.daily) * per_second;
    let mut out = Vec::new();
    let mut t = 0.0;
    loop {
        t += -r.gen_range(1e-12..1.0f64).ln() / top;
        if t >= seconds {
            break;
        }
        if r.gen::<f64>() * top < per_second * c.intensity(t) {
            let job = Job {
                gpus: demand(r, c.gpus()),
                seconds: duration(r, c.median_duration, c.sigma),
            };
            out.push((t as u64, job));
        }
    }
    let burst_top = (1.0 + c.daily) * c.bursts_per_day / 86_400.0;
    let mut t = 0.0;
    // no sweeps on a cluster without them (a rate of 0 would never pass `seconds`)
    while burst_top > 0.0 && t < seconds {
        t += -r.gen_range(1e-12..1.0f64).ln() / burst_top;
        if t >= seconds {
            break;
        }
        if r.gen::<f64>() * (1.0 + c.daily) < c.intensity(t) {
            sweep(r, c, t, &mut out);
        }
    }
    out.sort_by_key(|a| a.0);
    out
}

/// A sweep at `t`: 10 to 300 jobs of one size and a similar length, over 0–10 minutes.
fn sweep(r: &mut ChaCha8Rng, c: &Cluster, t: f64, out: &mut Vec<(u64, Job)>) {
    let jobs = log_uniform(r, 10.0, 300.0).round() as usize;
    let gpus = demand(r, c.gpus()).min(8);
    let median = duration(r, c.median_duration, c.sigma) as f64;
    let spread = r.gen_range(0.0..600.0);
    for _ in 0..jobs {
        let at = t + r.gen_range(0.0..=spread);
        out.push((
            at as u64,
            Job {
                gpus,
                seconds: duration(r, median, 0.4),
            },
        ));
    }
}

/// A job's GPU demand, capped at the cluster's size.
fn demand(r: &mut ChaCha8Rng, gpus: usize) -> usize {
    let total: f64 = DEMANDS.iter().map(|d| d.1).sum();
    let mut u = r.gen::<f64>() * total;
    for &(g, w) in &DEMANDS {
        if u < w {
            return g.min(gpus);
        }
        u -= w;
    }
    DEMANDS[DEMANDS.len() - 1].0.min(gpus)
}

/// A lognormal duration in whole seconds, one minute to [`MAX_DURATION`].
fn duration(r: &mut ChaCha8Rng, median: f64, sigma: f64) -> u64 {
    (median * (sigma * normal(r)).exp()).clamp(60.0, MAX_DURATION) as u64
}

/// A standard normal draw (Box-Muller).
pub(crate) fn normal(r: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = r.gen_range(1e-12..1.0);
    let u2: f64 = r.gen();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A draw whose logarithm is uniform between those of `lo` and `hi`.
pub(crate) fn log_uniform(r: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    (r.gen_range(lo.ln()..hi.ln())).exp()
}

/// Waiting jobs, one FIFO per GPU demand: jobs of one demand fit or not alike, so a
/// backfill over the whole queue only needs to look at the head of each.
#[derive(Default)]
struct Queue {
    /// (demand, its jobs with their arrival numbers, oldest first)
    by_demand: Vec<(usize, VecDeque<(usize, Job)>)>,
    arrived: usize,
    len: usize,
}

impl Queue {
    fn push(&mut self, job: Job) {
        let at = match self.by_demand.iter().position(|q| q.0 == job.gpus) {
            Some(at) => at,
            None => {
                self.by_demand.push((job.gpus, VecDeque::new()));
                self.by_demand.len() - 1
            }
        };
        self.by_demand[at].1.push_back((self.arrived, job));
        self.arrived += 1;
        self.len += 1;
    }

    /// The next job to start, taken off the queue: the oldest if it fits (FIFO), else
    /// with `backfill` the oldest of those that fit, else none.
    fn next(&mut self, room: &Room, backfill: bool) -> Option<Job> {
        let oldest = |fitting: bool| {
            self.by_demand
                .iter()
                .enumerate()
                .filter(|(_, q)| !fitting || room.fits(q.0))
                .filter_map(|(i, q)| q.1.front().map(|j| (j.0, i)))
                .min()
        };
        let (_, at) = oldest(false)?;
        let at = if room.fits(self.by_demand[at].0) {
            at
        } else if backfill {
            oldest(true)?.1
        } else {
            return None;
        };
        self.len -= 1;
        self.by_demand[at].1.pop_front().map(|j| j.1)
    }
}

/// Where a job could go: the most GPUs free on one node, and the wholly free nodes.
#[derive(Debug, Clone, Copy)]
struct Room(usize, usize);

impl Room {
    /// Whether a job of `gpus` fits ([`State::place`] would find it room).
    fn fits(self, gpus: usize) -> bool {
        if gpus >= NODE_GPUS {
            self.1 * NODE_GPUS >= gpus
        } else {
            self.0 >= gpus
        }
    }
}

/// GPUs held by a running job: (node, GPUs) per node.
pub(crate) type Allocation = Vec<(usize, usize)>;

/// Where a job smaller than a node goes among the nodes it fits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// The first (this simulator's scheduler).
    First,
    /// The fullest (`tenants`' scheduler, which packs to keep whole nodes free).
    Best,
}

/// Free GPUs per node and the GPUs held.
pub(crate) struct State {
    pub free: Vec<usize>,
    pub held: usize,
}

impl State {
    /// `nodes` nodes of [`NODE_GPUS`] GPUs, all free.
    pub fn new(nodes: usize) -> State {
        State {
            free: vec![NODE_GPUS; nodes],
            held: 0,
        }
    }

    /// The most GPUs free on one node and the wholly free nodes.
    fn room(&self) -> Room {
        let most = self.free.iter().copied().max().unwrap_or(0);
        Room(most, self.free.iter().filter(|f| **f == NODE_GPUS).count())
    }

    /// Nodes with any GPU held.
    pub fn busy_nodes(&self) -> usize {
        self.free.iter().filter(|f| **f < NODE_GPUS).count()
    }

    /// A job of a node or more takes the first wholly free nodes, a smaller one a node
    /// with room chosen by `fit`; `None` when it does not fit now.
    pub fn place(&mut self, gpus: usize, fit: Fit) -> Option<Allocation> {
        let alloc: Allocation = if gpus >= NODE_GPUS {
            let whole: Allocation = (0..self.free.len())
                .filter(|&n| self.free[n] == NODE_GPUS)
                .take(gpus / NODE_GPUS)
                .map(|n| (n, NODE_GPUS))
                .collect();
            if whole.len() * NODE_GPUS < gpus {
                return None;
            }
            whole
        } else {
            let mut fitting = (0..self.free.len()).filter(|&n| self.free[n] >= gpus);
            let node = match fit {
                Fit::First => fitting.next(),
                Fit::Best => fitting.min_by_key(|&n| self.free[n]),
            }?;
            vec![(node, gpus)]
        };
        for &(n, g) in &alloc {
            self.free[n] -= g;
            self.held += g;
        }
        Some(alloc)
    }

    /// Frees what `alloc` held.
    pub fn release(&mut self, alloc: &[(usize, usize)]) {
        for &(n, g) in alloc {
            self.free[n] += g;
            self.held -= g;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn first_fit_packs_small_jobs_and_gives_big_ones_whole_nodes() {
        let mut s = State::new(3);
        assert_eq!(s.place(4, Fit::First), Some(vec![(0, 4)]));
        assert_eq!(s.place(2, Fit::First), Some(vec![(0, 2)]));
        assert_eq!(s.place(16, Fit::First), Some(vec![(1, 8), (2, 8)]));
        assert_eq!(s.place(8, Fit::First), None);
        assert_eq!((s.held, s.busy_nodes()), (22, 3));
        s.release(&[(1, 8), (2, 8)]);
        assert_eq!((s.held, s.busy_nodes()), (6, 1));
    }

    #[test]
    fn best_fit_takes_the_fullest_node_with_room_and_first_fit_the_first() {
        let mut s = State::new(2);
        s.free[1] = 3;
        s.held = 5;
        assert_eq!(s.place(2, Fit::Best), Some(vec![(1, 2)]));
        assert_eq!(s.place(2, Fit::First), Some(vec![(0, 2)]));
        assert_eq!((s.held, s.busy_nodes()), (9, 2));
    }

    #[test]
    fn an_oversubscribed_cluster_pins_and_a_light_one_does_not() {
        let mut r = ChaCha8Rng::seed_from_u64(1);
        let mut c = Cluster::draw(&mut r);
        (c.nodes, c.daily, c.bursts_per_day, c.backfill) = (8, 0.0, 0.0, true);
        (c.median_duration, c.sigma) = (1800.0, 1.0);
        c.load = 3.0;
        let busy = simulate(&mut r, &c, 3 * 86_400, 300, Metric::Share);
        assert_eq!(busy.len(), 3 * 288);
        let pinned = busy[288..].iter().filter(|v| **v == 100.0).count();
        assert!(pinned > 288, "{pinned} of 576 steps at 100%");
        c.load = 0.2;
        let light = simulate(&mut r, &c, 3 * 86_400, 300, Metric::Share);
        let mean = light.iter().sum::<f64>() / light.len() as f64;
        assert!((5.0..50.0).contains(&mean), "{mean}");
    }
}
