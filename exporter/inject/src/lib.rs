//! poolprof-inject: the CUPTI injection library (`CUDA_INJECTION64_PATH`) and the wire
//! protocol it shares with `poolprof-exporter`.
//!
//! The exporter only uses [`wire`]; the rest runs inside the profiled process.

pub mod wire;
