//! Classification of a workload: what bounds it (against its GPU's roofline) and what
//! kind of job it is, each with the evidence in words.

pub mod boundedness;
pub mod kernel_counters;
pub mod kernel_name;
pub mod workload_type;

pub use boundedness::{classify, Basis, Boundedness, Classification, KernelCounters, Thresholds};
pub use kernel_counters::class_from_counters;
pub use kernel_name::class_by_name;
pub use workload_type::{workload_type, TypeVerdict, WorkloadType};
