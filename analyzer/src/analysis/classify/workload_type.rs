//! Training, inference, interactive or idle, with the evidence.
//!
//! Kernel names are the strongest evidence: backward passes and optimizer steps run
//! kernels whose names say so (PyTorch's `*Backward*`, `*_grad_*`, cuDNN's `dgrad` and
//! `wgrad`, `multi_tensor_apply` for fused optimizers, `adam`, `sgd`). Without kernel
//! names, a steady high duty cycle reads as training, a low one as interactive.

use serde::{Deserialize, Serialize};

use crate::analysis::profile::WorkloadProfile;

/// Kernel-name fragments (lower case) that only training runs.
pub const TRAINING_KERNELS: [&str; 8] = [
    "backward",
    "_grad",
    "dgrad",
    "wgrad",
    "multi_tensor_apply",
    "adam",
    "sgd",
    "optimizer",
];
/// Duty cycle under which a workload is idle.
pub const IDLE_BELOW: f64 = 0.02;
/// Duty cycle under which a workload without training kernels is interactive:
/// mostly waiting for requests (a notebook, a service at low load).
pub const INTERACTIVE_BELOW: f64 = 0.1;
/// Duty cycle at and above which a workload without kernel names reads as training.
pub const STEADY_TRAINING: f64 = 0.8;

/// What kind of job a workload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadType {
    /// Forward, backward and optimizer steps.
    Training,
    /// Forward passes only, sustained.
    Inference,
    /// Mostly idle, busy in short bursts.
    Interactive,
    /// Hardly uses the GPU.
    Idle,
}

impl WorkloadType {
    /// Every type, in label order.
    pub const ALL: [WorkloadType; 4] = [
        WorkloadType::Training,
        WorkloadType::Inference,
        WorkloadType::Interactive,
        WorkloadType::Idle,
    ];

    /// The `type` label value.
    pub fn label(self) -> &'static str {
        match self {
            WorkloadType::Training => "training",
            WorkloadType::Inference => "inference",
            WorkloadType::Interactive => "interactive",
            WorkloadType::Idle => "idle",
        }
    }
}

/// A type with the evidence for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeVerdict {
    /// The type.
    pub kind: WorkloadType,
    /// Why, in short sentences.
    pub evidence: Vec<String>,
}

/// The type of the workload in `profile`.
pub fn workload_type(profile: &WorkloadProfile) -> TypeVerdict {
    let duty = profile.duty().unwrap_or(0.0);
    let busy = format!("the GPU ran its kernels {:.1}% of the time", duty * 100.0);
    if duty < IDLE_BELOW {
        return TypeVerdict {
            kind: WorkloadType::Idle,
            evidence: vec![busy],
        };
    }
    let total: f64 = profile.kernels.iter().map(|k| k.busy).sum();
    let training: f64 = profile
        .kernels
        .iter()
        .filter(|k| {
            let n = k.name.to_ascii_lowercase();
            TRAINING_KERNELS.iter().any(|t| n.contains(t))
        })
        .map(|k| k.busy)
        .sum();
    if total > 0.0 {
        if training > 0.0 {
            let share = format!(
                "{:.0}% of kernel time is backward or optimizer kernels",
                100.0 * training / total
            );
            return TypeVerdict {
                kind: WorkloadType::Training,
                evidence: vec![share, busy],
            };
        }
        let forward = "no backward or optimizer kernels among its kernels".to_string();
        let kind = if duty < INTERACTIVE_BELOW {
            WorkloadType::Interactive
        } else {
            WorkloadType::Inference
        };
        return TypeVerdict {
            kind,
            evidence: vec![forward, busy],
        };
    }
    let no_names = "no kernel names (no injection library): judged by the duty cycle".to_string();
    let kind = if duty >= STEADY_TRAINING {
        WorkloadType::Training
    } else if duty < INTERACTIVE_BELOW {
        WorkloadType::Interactive
    } else {
        WorkloadType::Inference
    };
    TypeVerdict {
        kind,
        evidence: vec![no_names, busy],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::profile::{Coverage, KernelStat, ProfileSignal as S, Window};

    const W: Window = Window {
        start: 0.0,
        end: 1.0,
    };

    fn with_kernels(duty: f64, names: &[&str]) -> WorkloadProfile {
        let mut p = WorkloadProfile::new("w", Coverage::Kernels).with(S::Busy, duty, W);
        p.kernels = names
            .iter()
            .map(|n| KernelStat {
                name: n.to_string(),
                launches_per_second: 100.0,
                busy: 0.1,
                shape: None,
                counters: None,
            })
            .collect();
        p
    }

    #[test]
    fn backward_and_optimizer_kernels_mean_training() {
        let t = workload_type(&with_kernels(
            0.6,
            &[
                "ampere_gemm",
                "native::GammaBetaBackwardCUDAKernelTemplate",
                "native::multi_tensor_apply_kernel",
            ],
        ));
        assert_eq!(t.kind, WorkloadType::Training);
        assert!(t.evidence[0].contains("67%"), "{t:?}");
        let cudnn = workload_type(&with_kernels(0.6, &["sm90_xmma_wgrad_implicit_gemm"]));
        assert_eq!(cudnn.kind, WorkloadType::Training);
    }

    #[test]
    fn forward_only_kernels_are_inference_or_interactive_by_duty() {
        assert_eq!(
            workload_type(&with_kernels(0.9, &["gemm", "softmax"])).kind,
            WorkloadType::Inference
        );
        assert_eq!(
            workload_type(&with_kernels(0.05, &["gemm"])).kind,
            WorkloadType::Interactive
        );
        assert_eq!(
            workload_type(&with_kernels(0.01, &["gemm"])).kind,
            WorkloadType::Idle
        );
    }

    #[test]
    fn without_kernel_names_the_duty_cycle_decides() {
        let p = |d| WorkloadProfile::new("w", Coverage::NvmlOnly).with(S::Busy, d, W);
        assert_eq!(workload_type(&p(0.9)).kind, WorkloadType::Training);
        assert_eq!(workload_type(&p(0.5)).kind, WorkloadType::Inference);
        assert_eq!(workload_type(&p(0.05)).kind, WorkloadType::Interactive);
        assert!(workload_type(&p(0.9)).evidence[0].contains("no kernel names"));
    }
}
