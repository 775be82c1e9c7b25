//! Compute processes joined with their utilization samples. NVML buffers
//! per-process samples; each read asks only for those newer than the last one seen,
//! and answers one entry per process whose ratios are the mean over that whole
//! stretch, idle sample periods counted as 0 (`docs/validation/process-samples-h100.md`).

use super::convert::percent_u32_to_ratio;
use crate::backend::{ProcessUsage, Utilization};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::struct_wrappers::device::{ProcessInfo, ProcessUtilizationSample};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The SM and memory busy ratios of one process in a batch of samples (the newest
/// entry, should the driver ever answer more than one).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Busy {
    timestamp: u64,
    sm: f64,
    memory: f64,
}

/// Keeps each pid's newest sample.
fn newest_per_pid(samples: &[ProcessUtilizationSample]) -> HashMap<u32, Busy> {
    let mut newest: HashMap<u32, Busy> = HashMap::new();
    for s in samples {
        let busy = Busy {
            timestamp: s.timestamp,
            sm: percent_u32_to_ratio(s.sm_util),
            memory: percent_u32_to_ratio(s.mem_util),
        };
        newest
            .entry(s.pid)
            .and_modify(|b| {
                if busy.timestamp >= b.timestamp {
                    *b = busy;
                }
            })
            .or_insert(busy);
    }
    newest
}

/// The timestamp to pass next time: the newest seen so far.
pub fn next_timestamp(previous: Option<u64>, samples: &[ProcessUtilizationSample]) -> Option<u64> {
    samples.iter().map(|s| s.timestamp).chain(previous).max()
}

/// The process-utilization samples last read and when, reused for a while: the
/// query costs about 2.1 ms of CPU on an H100 whenever a compute process runs
/// (`docs/validation/cost/h100-collector-cpu.md`), more than the exporter's whole budget of
/// 0.2% of a core at a 1 s interval. NVML buffers the samples and averages them over
/// the stretch a read asks for, so a read every `max_age` loses no busy time: its
/// ratios are the mean over the last `max_age`, at most `max_age` old.
#[derive(Debug)]
pub struct Sampling {
    max_age: Duration,
    /// Newest sample timestamp seen (µs), for the next query.
    timestamp: Option<u64>,
    /// When the last batch was read, and the batch (`None`: the GPU cannot sample).
    batch: Option<(Instant, Option<Vec<ProcessUtilizationSample>>)>,
}

impl Sampling {
    /// Nothing read yet; batches are reused for `max_age`.
    pub const fn new(max_age: Duration) -> Self {
        Self {
            max_age,
            timestamp: None,
            batch: None,
        }
    }

    /// The last batch while it is younger than `max_age` at `now`, else a new one
    /// from `query`, which is given the newest timestamp seen. Errors are not kept.
    pub fn get<E>(
        &mut self,
        now: Instant,
        query: impl FnOnce(Option<u64>) -> Result<Option<Vec<ProcessUtilizationSample>>, E>,
    ) -> Result<Option<Vec<ProcessUtilizationSample>>, E> {
        if let Some((at, batch)) = &self.batch {
            if now.saturating_duration_since(*at) < self.max_age {
                return Ok(batch.clone());
            }
        }
        let batch = query(self.timestamp)?;
        if let Some(samples) = &batch {
            self.timestamp = next_timestamp(self.timestamp, samples);
        }
        self.batch = Some((now, batch.clone()));
        Ok(batch)
    }

    /// Drops the kept batch (no process runs), so the next process is sampled at once.
    pub fn forget(&mut self) {
        self.batch = None;
    }
}

/// The only process on a GPU, given the GPU's busy ratios: with nothing beside it,
/// the GPU's busy time is its busy time.
pub fn lone(info: &ProcessInfo, gpu: Utilization) -> ProcessUsage {
    usage(info, Some(gpu.gpu), Some(gpu.memory))
}

/// The usage of process `info` with these SM and memory-controller busy ratios.
fn usage(info: &ProcessInfo, sm_ratio: Option<f64>, memory_ratio: Option<f64>) -> ProcessUsage {
    ProcessUsage {
        pid: info.pid,
        used_memory_bytes: used_memory(info),
        sm_ratio,
        memory_ratio,
        gpu_instance_id: info.gpu_instance_id,
        workload: None,
    }
}

fn used_memory(info: &ProcessInfo) -> Option<u64> {
    match info.used_gpu_memory {
        UsedGpuMemory::Used(bytes) => Some(bytes),
        UsedGpuMemory::Unavailable => None,
    }
}

/// Joins running processes with their newest samples. A process without a
/// sample in this window was idle: its ratios are 0 when sampling works at all
/// (`sampled`), and unknown otherwise.
pub fn merge(
    running: &[ProcessInfo],
    samples: &[ProcessUtilizationSample],
    sampled: bool,
) -> Vec<ProcessUsage> {
    let busy = newest_per_pid(samples);
    running
        .iter()
        .map(|p| {
            let b = busy.get(&p.pid);
            let ratio = |f: fn(&Busy) -> f64| match b {
                Some(b) => Some(f(b)),
                None if sampled => Some(0.0),
                None => None,
            };
            usage(p, ratio(|b| b.sm), ratio(|b| b.memory))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(pid: u32, mem: Option<u64>) -> ProcessInfo {
        ProcessInfo {
            pid,
            used_gpu_memory: mem.map_or(UsedGpuMemory::Unavailable, UsedGpuMemory::Used),
            gpu_instance_id: None,
            compute_instance_id: None,
        }
    }

    fn sample(pid: u32, timestamp: u64, sm: u32, mem: u32) -> ProcessUtilizationSample {
        ProcessUtilizationSample {
            pid,
            timestamp,
            sm_util: sm,
            mem_util: mem,
            enc_util: 0,
            dec_util: 0,
        }
    }

    #[test]
    fn newest_sample_wins_and_percent_becomes_ratio() {
        let procs = merge(
            &[info(10, Some(1 << 30))],
            &[
                sample(10, 100, 20, 5),
                sample(10, 300, 80, 40),
                sample(10, 200, 50, 9),
            ],
            true,
        );
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0].sm_ratio, Some(0.8));
        assert_eq!(procs[0].memory_ratio, Some(0.4));
        assert_eq!(procs[0].used_memory_bytes, Some(1 << 30));
    }

    #[test]
    fn idle_process_is_zero_when_sampling_works_and_unknown_otherwise() {
        let running = [info(1, None), info(2, Some(5))];
        let samples = [sample(2, 1, 10, 10)];
        let sampled = merge(&running, &samples, true);
        assert_eq!(sampled[0].sm_ratio, Some(0.0));
        assert_eq!(sampled[0].used_memory_bytes, None);
        let unsampled = merge(&running, &[], false);
        assert_eq!(unsampled[0].sm_ratio, None);
        assert_eq!(unsampled[1].memory_ratio, None);
    }

    #[test]
    fn a_lone_process_has_the_gpus_busy_ratios() {
        let usage = lone(
            &info(42, Some(7 << 30)),
            Utilization {
                gpu: 0.97,
                memory: 0.31,
            },
        );
        assert_eq!(usage.pid, 42);
        assert_eq!(usage.sm_ratio, Some(0.97));
        assert_eq!(usage.memory_ratio, Some(0.31));
        assert_eq!(usage.used_memory_bytes, Some(7 << 30));
    }

    #[test]
    fn samples_of_exited_processes_are_dropped() {
        let procs = merge(&[info(1, None)], &[sample(99, 5, 100, 100)], true);
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0].pid, 1);
    }

    #[test]
    fn sampling_reuses_a_batch_until_max_age_then_asks_from_the_newest_timestamp() {
        let mut sampling = Sampling::new(Duration::from_secs(5));
        let t0 = Instant::now();
        let mut asked = Vec::new();
        let mut query = |since: Option<u64>, batch: Vec<ProcessUtilizationSample>| {
            asked.push(since);
            Ok::<_, ()>(Some(batch))
        };
        let first = sampling.get(t0, |since| query(since, vec![sample(1, 70, 50, 0)]));
        assert_eq!(first, Ok(Some(vec![sample(1, 70, 50, 0)])));
        let reused = sampling.get(t0 + Duration::from_secs(4), |since| {
            query(since, vec![sample(1, 90, 10, 0)])
        });
        assert_eq!(reused, first, "a batch younger than max_age is reused");
        let fresh = sampling.get(t0 + Duration::from_secs(5), |since| {
            query(since, vec![sample(1, 90, 10, 0)])
        });
        assert_eq!(fresh, Ok(Some(vec![sample(1, 90, 10, 0)])));
        assert_eq!(asked, vec![None, Some(70)]);
    }

    #[test]
    fn sampling_keeps_no_error_and_forgets_on_request() {
        let mut sampling = Sampling::new(Duration::from_secs(5));
        let t0 = Instant::now();
        assert_eq!(
            sampling.get(t0, |_| Err::<Option<Vec<_>>, _>("lost")),
            Err("lost")
        );
        let mut reads = 0;
        let mut read = |_: Option<u64>| {
            reads += 1;
            Ok::<_, &str>(None)
        };
        assert_eq!(sampling.get(t0, &mut read), Ok(None));
        assert_eq!(sampling.get(t0, &mut read), Ok(None));
        sampling.forget();
        assert_eq!(sampling.get(t0, &mut read), Ok(None));
        assert_eq!(
            reads, 2,
            "an error is not kept, a forgotten batch is read again"
        );
    }

    #[test]
    fn next_timestamp_moves_forward_only() {
        assert_eq!(next_timestamp(None, &[]), None);
        assert_eq!(next_timestamp(Some(50), &[]), Some(50));
        assert_eq!(
            next_timestamp(Some(50), &[sample(1, 70, 0, 0), sample(1, 60, 0, 0)]),
            Some(70)
        );
        assert_eq!(next_timestamp(Some(90), &[sample(1, 70, 0, 0)]), Some(90));
    }
}
