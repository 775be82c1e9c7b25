//! Compute processes joined with their utilization samples. NVML buffers
//! per-process samples; each read asks only for those newer than the last one seen.

use super::convert::percent_u32_to_ratio;
use crate::backend::ProcessUsage;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::struct_wrappers::device::{ProcessInfo, ProcessUtilizationSample};
use std::collections::HashMap;

/// The newest SM and memory busy ratios of one process in a batch of samples.
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
            ProcessUsage {
                pid: p.pid,
                used_memory_bytes: match p.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => Some(bytes),
                    UsedGpuMemory::Unavailable => None,
                },
                sm_ratio: ratio(|b| b.sm),
                memory_ratio: ratio(|b| b.memory),
                gpu_instance_id: p.gpu_instance_id,
                workload: None,
            }
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
    fn samples_of_exited_processes_are_dropped() {
        let procs = merge(&[info(1, None)], &[sample(99, 5, 100, 100)], true);
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0].pid, 1);
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
