//! The built-in scenario of `--simulate N`: the six workloads round-robin, in the order
//! training, inference, idle, memory_bound, failing, mig. `exporter/scenarios/demo.toml`
//! spells out the first six.

use super::format::{self, RawGpu, RawInstance, RawProcess};
use super::scenario::{Scenario, ScenarioError, MAX_GPUS};

/// The order of the round-robin.
pub const ORDER: [&str; 6] = [
    "training",
    "inference",
    "idle",
    "memory_bound",
    "failing",
    "mig",
];

/// `n` built-in GPUs; `n` must be 1 to 64.
pub fn scenario(n: u32) -> Result<Scenario, ScenarioError> {
    if n == 0 || n as usize > MAX_GPUS {
        return Err(ScenarioError::Invalid {
            origin: "--simulate".to_string(),
            field: "N".to_string(),
            message: format!("must be 1 to {MAX_GPUS} GPUs (got {n})"),
        });
    }
    let gpus: Vec<RawGpu> = (0..n).map(gpu).collect();
    format::validate(&gpus, "--simulate")
}

/// The built-in GPU at `index`. GPUs past the first six repeat the workloads with their
/// own seed, pids and a `-<round>` suffix on workload labels.
fn gpu(index: u32) -> RawGpu {
    let round = index / ORDER.len() as u32;
    let suffix = if round == 0 {
        String::new()
    } else {
        format!("-{round}")
    };
    let pid = |k: u32| 4000 + 100 * index + k;
    let process = |k: u32, name: &str, label: &str| RawProcess {
        pid: pid(k),
        name: Some(name.to_string()),
        workload: Some(format!("{label}{suffix}")),
        memory_gib: None,
    };
    let kind = ORDER[index as usize % ORDER.len()];
    let base = RawGpu {
        kind: kind.to_string(),
        seed: Some(u64::from(index)),
        ..RawGpu::default()
    };
    match kind {
        "training" => RawGpu {
            period_seconds: Some(300.0),
            duty: Some(0.8),
            memory_used_gib: Some(60.0),
            processes: Some(vec![process(1, "python", "llm-pretrain")]),
            ..base
        },
        "inference" => RawGpu {
            burst_ratio: Some(0.35),
            memory_used_gib: Some(22.0),
            processes: Some(vec![process(1, "tritonserver", "chat-inference")]),
            ..base
        },
        "memory_bound" => RawGpu {
            memory_used_gib: Some(48.0),
            processes: Some(vec![process(1, "python", "embedding-etl")]),
            ..base
        },
        "failing" => RawGpu {
            period_seconds: Some(120.0),
            duty: Some(0.75),
            memory_used_gib: Some(36.0),
            fail_at_seconds: Some(10.0),
            recover_at_seconds: Some(310.0),
            processes: Some(vec![process(1, "python", "vision-train")]),
            ..base
        },
        "mig" => RawGpu {
            instances: Some(vec![
                RawInstance {
                    profile: "3g.40gb".to_string(),
                    kind: Some("training".to_string()),
                    period_seconds: Some(180.0),
                    duty: Some(0.7),
                    memory_used_gib: Some(30.0),
                    processes: Some(vec![process(1, "python", "mig-finetune")]),
                    ..RawInstance::default()
                },
                RawInstance {
                    profile: "2g.20gb".to_string(),
                    kind: Some("inference".to_string()),
                    burst_ratio: Some(0.5),
                    memory_used_gib: Some(12.0),
                    processes: Some(vec![process(2, "tritonserver", "mig-serving")]),
                    ..RawInstance::default()
                },
                RawInstance {
                    profile: "2g.20gb".to_string(),
                    kind: Some("idle".to_string()),
                    ..RawInstance::default()
                },
            ]),
            ..base
        },
        _ => base,
    }
}
