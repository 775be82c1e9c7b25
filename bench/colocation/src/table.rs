//! The earlier pooling profiler's answer: a class per workload from fixed
//! arithmetic-intensity thresholds (> 50 FLOP/B compute, < 10 memory, else mixed) and a
//! fixed score per pair of classes. The issue that filed this work quotes three of its
//! entries (compute + memory 0.95, compute + compute 0.25, memory + memory 0.15); the
//! entries with `mixed` are not quoted and are filled here as 0.6 (beside compute or
//! memory) and 0.5 (two mixed).

use poolprof_analyzer::analysis::profile::{ProfileSignal as S, WorkloadProfile};

/// H100 SXM peaks: dense BF16 tensor 989 TFLOP/s, FP32 67 TFLOP/s, FP64 34, DRAM 3.35 TB/s.
const TENSOR: f64 = 989e12;
const FP32: f64 = 67e12;
const FP64: f64 = 34e12;
const DRAM: f64 = 3.35e12;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    Compute,
    Memory,
    Mixed,
}

/// The class by the fixed thresholds, from GPM activity.
pub fn class(p: &WorkloadProfile) -> Class {
    let g = |s| p.get(s).unwrap_or(0.0);
    let flops = g(S::TensorActive) * TENSOR + g(S::PipeFp32) * FP32 + g(S::PipeFp64) * FP64;
    let bytes = g(S::DramActive) * DRAM;
    let ai = if bytes > 0.0 {
        flops / bytes
    } else {
        f64::INFINITY
    };
    if ai > 50.0 {
        Class::Compute
    } else if ai < 10.0 {
        Class::Memory
    } else {
        Class::Mixed
    }
}

/// The fixed score of a pair of classes.
pub fn score(a: Class, b: Class) -> f64 {
    use Class::*;
    match (a, b) {
        (Compute, Memory) | (Memory, Compute) => 0.95,
        (Compute, Compute) => 0.25,
        (Memory, Memory) => 0.15,
        (Mixed, Mixed) => 0.5,
        _ => 0.6,
    }
}
