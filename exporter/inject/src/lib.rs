//! poolprof-inject: the CUPTI injection library (`CUDA_INJECTION64_PATH`) and the wire
//! protocol it shares with `poolprof-exporter`.
//!
//! The exporter only uses [`wire`]; the rest runs inside the profiled process:
//! CUPTI delivers activity buffers ([`buffers`], [`cupti`]), their records
//! ([`records`]) are summed per buffer ([`batch`]) and aggregated ([`aggregate`]) and a background thread ships the
//! aggregates to the exporter's socket ([`sender`]), configured by environment
//! variables ([`config`]). Between samples CUPTI leaves the process ([`detach`]);
//! each sampled window is held ([`windows`]) until its share of its period's launches
//! is known ([`launch_share`]) and travels with it ([`sample`]).
//! With `POOLPROF_KERNEL_COUNTERS=1` the first launch of each kernel is profiled once
//! ([`counters`]). [`injection`] is the entry point CUDA calls;
//! [`tracing_state`] tells the application whether records are being collected.

pub mod aggregate;
pub mod batch;
pub mod buffers;
pub mod config;
pub mod counters;
pub mod cupti;
pub mod detach;
pub mod injection;
pub mod launch_share;
pub mod records;
pub mod sample;
pub mod sender;
pub mod tracing_state;
pub mod windows;
pub mod wire;
