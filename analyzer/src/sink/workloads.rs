//! The workload and co-location families of DESIGN.md ("Analyzer output"): classes,
//! types and arithmetic intensity per workload; scores, each side's predicted progress,
//! MPS SM shares and the recommendation per pair; and per workload and GPU, what placing
//! the workload beside the GPU's current load would cost each.

use super::exposition::{Exposition, Kind};
use crate::analysis::classify::{Boundedness, WorkloadType};
use crate::analysis::colocate::{Mode, PairPrediction, Placement, Recommendation};
use crate::pipeline::{RunReport, WorkloadReport};

const CLASS: &str = "poolprof_workload_class";
const TYPE: &str = "poolprof_workload_type";
const INTENSITY: &str = "poolprof_workload_arithmetic_intensity";
const SCORE: &str = "poolprof_colocation_score";
const PROGRESS: &str = "poolprof_colocation_predicted_progress_ratio";
const SM_SHARE: &str = "poolprof_colocation_sm_share_ratio";
const RECOMMENDATION: &str = "poolprof_colocation_recommendation";
const PROFILED: &str = "poolprof_analyzer_workloads_profiled";
const PLACEMENT_SCORE: &str = "poolprof_placement_score";
const PLACEMENT_PROGRESS: &str = "poolprof_placement_predicted_progress_ratio";
const PLACEMENT_RESIDENT: &str = "poolprof_placement_resident_progress_ratio";
const PLACEMENT_RECOMMENDATION: &str = "poolprof_placement_recommendation";

/// Declares the families, so each has HELP and TYPE even when empty.
pub fn declare(out: &mut Exposition) {
    let g = Kind::Gauge;
    out.family(CLASS, g, "1 for the workload's current class (compute_bound, memory_bound, mixed, latency_bound, idle), 0 for the others.");
    out.family(TYPE, g, "1 for the workload's current type (training, inference, interactive, idle), 0 for the others.");
    out.family(INTENSITY, g, "Achieved FLOP per DRAM byte while the workload ran alone, from GPM activity and the GPU's peaks.");
    out.family(SCORE, g, "Predicted mean normalized progress of the pair in the mode, 0-1 (1 no interference, 0.5 no better than taking turns, 0 cannot run).");
    out.family(
        PROGRESS,
        g,
        "Predicted throughput of workload beside peer in the mode over its throughput alone, 0-1.",
    );
    out.family(SM_SHARE, g, "MPS active-thread share the model suggests for workload beside peer, 0-1 (1 when no limit helps).");
    out.family(
        RECOMMENDATION,
        g,
        "1 for the pair's recommended mode with its verdict (good, caution, avoid).",
    );
    out.family(
        PROFILED,
        g,
        "Workloads profiled in the last successful run.",
    );
    out.family(PLACEMENT_SCORE, g, "Predicted mean normalized progress if the workload joined the GPU (uuid) beside what runs there now, per mode, 0-1.");
    out.family(PLACEMENT_PROGRESS, g, "Predicted throughput of the workload on the GPU (uuid) beside its current load over alone, per mode, 0-1.");
    out.family(PLACEMENT_RESIDENT, g, "Predicted throughput the GPU's (uuid) current load keeps if the workload joined it, per mode, 0-1.");
    out.family(PLACEMENT_RECOMMENDATION, g, "1 for the verdict (good, caution, avoid) on the recommended mode of placing the workload on the GPU (uuid).");
}

/// Adds the samples of `report`'s workloads and pairs.
pub fn add(out: &mut Exposition, report: &RunReport) {
    out.set(PROFILED, &[], report.workloads.len() as f64);
    for w in &report.workloads {
        add_workload(out, w);
    }
    for p in &report.pairs {
        add_pair(out, p);
    }
    for p in &report.placements {
        add_placement(out, p);
    }
}

fn add_placement(out: &mut Exposition, p: &Placement) {
    let (w, uuid) = (p.workload.as_str(), p.uuid.as_str());
    for m in &p.modes {
        let labels = [("workload", w), ("uuid", uuid), ("mode", m.mode.label())];
        out.set(PLACEMENT_SCORE, &labels, m.score);
        out.set(PLACEMENT_PROGRESS, &labels, m.progress_a);
        out.set(PLACEMENT_RESIDENT, &labels, m.progress_b);
    }
    let mode = p.recommended_mode.map_or("none", Mode::label);
    for r in [
        Recommendation::Good,
        Recommendation::Caution,
        Recommendation::Avoid,
    ] {
        let on = if r == p.recommendation { 1.0 } else { 0.0 };
        out.set(
            PLACEMENT_RECOMMENDATION,
            &[
                ("workload", w),
                ("uuid", uuid),
                ("mode", mode),
                ("recommendation", r.label()),
            ],
            on,
        );
    }
}

fn add_workload(out: &mut Exposition, w: &WorkloadReport) {
    let id = w.profile.workload.as_str();
    for c in Boundedness::ALL {
        let on = if c == w.class.class { 1.0 } else { 0.0 };
        out.set(CLASS, &[("workload", id), ("class", c.label())], on);
    }
    for t in WorkloadType::ALL {
        let on = if t == w.kind.kind { 1.0 } else { 0.0 };
        out.set(TYPE, &[("workload", id), ("type", t.label())], on);
    }
    if let Some(ai) = w.class.arithmetic_intensity.filter(|v| v.is_finite()) {
        out.set(INTENSITY, &[("workload", id)], ai);
    }
}

fn add_pair(out: &mut Exposition, p: &PairPrediction) {
    let (a, b) = (p.workload_a.as_str(), p.workload_b.as_str());
    for m in &p.modes {
        let mode = m.mode.label();
        out.set(
            SCORE,
            &[("workload_a", a), ("workload_b", b), ("mode", mode)],
            m.score,
        );
        out.set(
            PROGRESS,
            &[("workload", a), ("peer", b), ("mode", mode)],
            m.progress_a,
        );
        out.set(
            PROGRESS,
            &[("workload", b), ("peer", a), ("mode", mode)],
            m.progress_b,
        );
        if m.mode == Mode::Mps && m.feasible {
            let (sa, sb) = m.sm_share.map_or((1.0, 1.0), |s| {
                (
                    f64::from(s.a_percent) / 100.0,
                    f64::from(s.b_percent) / 100.0,
                )
            });
            out.set(SM_SHARE, &[("workload", a), ("peer", b)], sa);
            out.set(SM_SHARE, &[("workload", b), ("peer", a)], sb);
        }
    }
    let mode = p.recommended_mode.map_or("none", Mode::label);
    for r in [
        Recommendation::Good,
        Recommendation::Caution,
        Recommendation::Avoid,
    ] {
        let on = if r == p.recommendation { 1.0 } else { 0.0 };
        out.set(
            RECOMMENDATION,
            &[
                ("workload_a", a),
                ("workload_b", b),
                ("mode", mode),
                ("recommendation", r.label()),
            ],
            on,
        );
    }
}
