//! What the API answers, shaped for the earlier pooling profiler's clients (`ok`,
//! `workload_a{id,type}`, `colocation_score`, `recommendation`, `sm_partition`) with
//! poolprof's own fields beside them.

use serde::Serialize;

use super::Api;
use crate::analysis::classify::{self, Boundedness, Classification, TypeVerdict};
use crate::analysis::colocate::{self, Mode, ModePrediction, PairPrediction};
use crate::analysis::profile::WorkloadProfile;

/// One workload as `/profile/{id}` and `/profiles` show it.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileView {
    /// The workload id.
    pub workload_id: String,
    /// The earlier clients' kernel type: `compute`, `memory`, `mixed`, `latency` or `idle`.
    #[serde(rename = "type")]
    pub kernel_type: &'static str,
    /// Our class label (`compute_bound`, …).
    pub class: &'static str,
    /// FLOP per DRAM byte, when known.
    pub arithmetic_intensity: Option<f64>,
    /// `training`, `inference`, `interactive` or `idle`.
    pub workload_type: &'static str,
    /// Whether it was given by hand (`POST /register`) rather than measured.
    pub registered: bool,
    /// The hand-given description.
    pub description: Option<String>,
    /// The class with its evidence.
    pub classification: Classification,
    /// The type with its evidence.
    pub type_evidence: TypeVerdict,
    /// The measured (or declared) profile.
    pub profile: WorkloadProfile,
}

/// The earlier clients' short kernel type for a class.
pub fn kernel_type(c: Boundedness) -> &'static str {
    match c {
        Boundedness::ComputeBound => "compute",
        Boundedness::MemoryBound => "memory",
        Boundedness::Mixed => "mixed",
        Boundedness::LatencyBound => "latency",
        Boundedness::Idle => "idle",
    }
}

fn view(
    profile: WorkloadProfile,
    class: Classification,
    kind: TypeVerdict,
    registered: Option<&super::registry::Registration>,
) -> ProfileView {
    ProfileView {
        workload_id: profile.workload.clone(),
        kernel_type: kernel_type(class.class),
        class: class.class.label(),
        arithmetic_intensity: class.arithmetic_intensity,
        workload_type: kind.kind.label(),
        registered: registered.is_some(),
        description: registered.and_then(|r| r.description.clone()),
        classification: class,
        type_evidence: kind,
        profile,
    }
}

/// The view of `id`: a registration wins over a measurement (an operator's word is
/// deliberate); None when neither exists.
pub fn profile(api: &Api, id: &str) -> Option<ProfileView> {
    if let Some(r) = api.registry.get(id) {
        let p = r.profile();
        let mut class = classify::classify(&p, api.thresholds);
        if let Ok(declared) = r.class() {
            class.class = declared;
            class.basis = classify::Basis::Declared;
            class.arithmetic_intensity = r.arithmetic_intensity;
            class.evidence = vec!["declared by POST /register".into()];
        }
        let kind = classify::workload_type(&p);
        return Some(view(p, class, kind, Some(&r)));
    }
    let snapshot = api.store.get();
    snapshot
        .report
        .workloads
        .iter()
        .find(|w| w.profile.workload == id)
        .map(|w| view(w.profile.clone(), w.class.clone(), w.kind.clone(), None))
}

/// Every profile, registered and measured, by id.
pub fn profiles(api: &Api) -> serde_json::Value {
    let mut ids: Vec<String> = api
        .registry
        .all()
        .into_iter()
        .map(|r| r.workload_id)
        .collect();
    ids.extend(
        api.store
            .get()
            .report
            .workloads
            .iter()
            .map(|w| w.profile.workload.clone()),
    );
    ids.sort();
    ids.dedup();
    let list: Vec<ProfileView> = ids.iter().filter_map(|id| profile(api, id)).collect();
    serde_json::json!({ "ok": true, "count": list.len(), "profiles": list })
}

/// `/health`.
pub fn health(api: &Api) -> serde_json::Value {
    let s = api.store.get();
    serde_json::json!({
        "ok": true,
        "status": if s.ready { "ok" } else { "starting" },
        "last_run_ok": s.last_run_ok,
        "last_success_timestamp_seconds": if s.ready { Some(s.report.health.finished_at) } else { None },
        "profiles_measured": s.report.workloads.len(),
        "profiles_registered": api.registry.all().len(),
    })
}

/// The earlier clients' `{id, type}`.
#[derive(Debug, Serialize)]
pub struct Side {
    /// The workload id.
    pub id: String,
    /// Its kernel type.
    #[serde(rename = "type")]
    pub kernel_type: &'static str,
}

/// `/colocation`'s answer.
#[derive(Debug, Serialize)]
pub struct ColocationView {
    /// Always true on success.
    pub ok: bool,
    /// The first workload as asked.
    pub workload_a: Side,
    /// The second workload as asked.
    pub workload_b: Side,
    /// The recommended mode's score, 0–1 (0 when nothing can run).
    pub colocation_score: f64,
    /// `good`, `caution` or `avoid`.
    pub recommendation: &'static str,
    /// MPS SM percentages per side (100 each: no limits).
    pub sm_partition: Partition,
    /// The recommended mode (`time_slicing`, `mps`, `mig`), null when none can run.
    pub mode: Option<&'static str>,
    /// Each side's predicted progress in the recommended mode, 0–1.
    pub predicted_progress: Partition,
    /// Why, in words.
    pub reason: String,
    /// Every mode's prediction, sides named as asked.
    pub modes: Vec<ModePrediction>,
}

/// A value per side, named as the earlier clients expect.
#[derive(Debug, Serialize)]
pub struct Partition {
    /// For workload a.
    pub workload_a: f64,
    /// For workload b.
    pub workload_b: f64,
}

/// The prediction for `a` and `b` (sides as asked); Err names the id with no profile.
pub fn colocation(api: &Api, a: &str, b: &str) -> Result<ColocationView, String> {
    let pa = profile(api, a).ok_or_else(|| a.to_string())?;
    let pb = profile(api, b).ok_or_else(|| b.to_string())?;
    let p: PairPrediction = colocate::predict(&pa.profile, &pb.profile, &api.constants);
    let swapped = p.workload_a != a;
    let orient = |x: f64, y: f64| if swapped { (y, x) } else { (x, y) };
    let best = p.best();
    let (sa, sb) = best.map_or((0.0, 0.0), |m| orient(m.progress_a, m.progress_b));
    let share = p.mode(Mode::Mps).and_then(|m| m.sm_share);
    let (ma, mb) = share.map_or((100.0, 100.0), |s| {
        orient(f64::from(s.a_percent), f64::from(s.b_percent))
    });
    let modes = p
        .modes
        .iter()
        .map(|m| {
            if swapped {
                m.clone().swapped()
            } else {
                m.clone()
            }
        })
        .collect();
    Ok(ColocationView {
        ok: true,
        workload_a: Side {
            id: a.to_string(),
            kernel_type: pa.kernel_type,
        },
        workload_b: Side {
            id: b.to_string(),
            kernel_type: pb.kernel_type,
        },
        colocation_score: best.map_or(0.0, |m| m.score),
        recommendation: p.recommendation.label(),
        sm_partition: Partition {
            workload_a: ma,
            workload_b: mb,
        },
        mode: p.recommended_mode.map(Mode::label),
        predicted_progress: Partition {
            workload_a: sa,
            workload_b: sb,
        },
        reason: p.reason,
        modes,
    })
}
