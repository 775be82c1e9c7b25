//! The scenario file format (TOML, see `docs/scenario.md`) and its validation into a
//! [`Scenario`]. Every error names the origin and the field path, e.g.
//! `demo.toml: gpus[2].period_seconds: must be > 0 …`.

use super::h100::{self, MigProfile, MIG_SLICES};
use super::scenario::{
    GpuMode, GpuSpec, MigInstanceSpec, ProcessSpec, Scenario, ScenarioError, Tenant, MAX_GPUS,
};
use super::workload::{Load, GIB};
use serde::Deserialize;

/// The top level of a scenario file. GPUs stay raw TOML here so that each one is
/// deserialized on its own and its errors can name its index.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    gpus: Vec<toml::Value>,
}

/// One `[[gpus]]` table as written; which fields apply depends on `kind`. The fields
/// are those of docs/scenario.md ("GPU fields"), with the same names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGpu {
    pub kind: String,
    pub seed: Option<u64>,
    pub period_seconds: Option<f64>,
    pub duty: Option<f64>,
    pub burst_ratio: Option<f64>,
    pub memory_used_gib: Option<f64>,
    pub fail_at_seconds: Option<f64>,
    pub recover_at_seconds: Option<f64>,
    pub processes: Option<Vec<RawProcess>>,
    pub instances: Option<Vec<RawInstance>>,
}

/// One MIG instance of a `kind = "mig"` GPU (docs/scenario.md, "Instance fields").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInstance {
    pub profile: String,
    pub kind: Option<String>,
    pub period_seconds: Option<f64>,
    pub duty: Option<f64>,
    pub burst_ratio: Option<f64>,
    pub memory_used_gib: Option<f64>,
    pub processes: Option<Vec<RawProcess>>,
}

/// One process of a GPU or instance (docs/scenario.md, "Process fields").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProcess {
    pub pid: u32,
    pub name: Option<String>,
    pub workload: Option<String>,
    pub memory_gib: Option<f64>,
}

/// GPU kinds and the fields each accepts (besides `kind`).
const GPU_KINDS: [(&str, &[&str]); 6] = [
    (
        "training",
        &[
            "seed",
            "period_seconds",
            "duty",
            "memory_used_gib",
            "processes",
        ],
    ),
    (
        "inference",
        &["seed", "burst_ratio", "memory_used_gib", "processes"],
    ),
    ("idle", &["seed"]),
    ("memory_bound", &["seed", "memory_used_gib", "processes"]),
    (
        "failing",
        &[
            "seed",
            "period_seconds",
            "duty",
            "memory_used_gib",
            "processes",
            "fail_at_seconds",
            "recover_at_seconds",
        ],
    ),
    ("mig", &["seed", "instances"]),
];

/// Instance kinds and the fields each accepts (besides `kind` and `profile`).
const INSTANCE_KINDS: [(&str, &[&str]); 4] = [
    (
        "training",
        &["period_seconds", "duty", "memory_used_gib", "processes"],
    ),
    (
        "inference",
        &["burst_ratio", "memory_used_gib", "processes"],
    ),
    ("idle", &[]),
    ("memory_bound", &["memory_used_gib", "processes"]),
];

/// The longest training period accepted: one day.
const MAX_PERIOD_SECONDS: f64 = 86_400.0;
/// The latest failure time accepted: one year, in seconds.
const MAX_FAIL_SECONDS: f64 = 31_536_000.0;
/// Linux's largest pid (`pid_max` limit).
const MAX_PID: u32 = 4_194_304;
/// Longest process name and workload label.
const MAX_NAME_CHARS: usize = 128;

/// Parses and validates scenario TOML.
pub(super) fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
        origin: origin.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let gpus = raw
        .gpus
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            value
                .try_into::<RawGpu>()
                .map_err(|e| gpu_parse_error(origin, i, &e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    validate(&gpus, origin)
}

/// A GPU table's type error, with the nested path toml reports (`\nin `a.b``) moved
/// into the field name.
fn gpu_parse_error(origin: &str, index: usize, message: &str) -> ScenarioError {
    let message = message.trim_end();
    let (message, field) = match message.rsplit_once("\nin `") {
        Some((head, tail)) => (
            head,
            format!("gpus[{index}].{}", tail.trim_end_matches('`')),
        ),
        None => (message, format!("gpus[{index}]")),
    };
    ScenarioError::Parse {
        origin: origin.to_string(),
        message: format!("{field}: {message}"),
    }
}

/// Validates raw GPUs (from a file or the built-in list) into a scenario.
pub(super) fn validate(gpus: &[RawGpu], origin: &str) -> Result<Scenario, ScenarioError> {
    let check = Check { origin };
    if gpus.is_empty() || gpus.len() > MAX_GPUS {
        return Err(check.invalid(
            "gpus",
            format!(
                "a scenario has 1 to {MAX_GPUS} GPUs (got {}); add [[gpus]] tables",
                gpus.len()
            ),
        ));
    }
    let gpus = gpus
        .iter()
        .enumerate()
        .map(|(i, raw)| check.gpu(i, raw))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Scenario { gpus })
}

/// Validation with the origin at hand for error messages.
struct Check<'a> {
    origin: &'a str,
}

impl Check<'_> {
    fn invalid(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            origin: self.origin.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn gpu(&self, index: usize, raw: &RawGpu) -> Result<GpuSpec, ScenarioError> {
        let path = format!("gpus[{index}]");
        let kind = self.kind(&path, &raw.kind, &GPU_KINDS)?;
        self.applicable(&path, kind, &GPU_KINDS, &gpu_fields(raw))?;
        let seed = raw.seed.unwrap_or(index as u64);
        let defaults = Defaults {
            pid: 10_000 + 100 * index as u32,
            label: format!("{kind}-gpu{index}"),
            memory_gib: None,
        };
        let mode = match kind {
            "failing" => self.failing(&path, raw, &defaults)?,
            "mig" => GpuMode::Mig(self.instances(&path, raw.instances.as_deref(), &defaults)?),
            _ => GpuMode::Whole(self.tenant(
                &path,
                kind,
                &Params::of_gpu(raw),
                h100::MEMORY_GIB - h100::RESERVED_GIB,
                &defaults,
            )?),
        };
        Ok(GpuSpec { mode, seed })
    }

    fn failing(&self, path: &str, raw: &RawGpu, d: &Defaults) -> Result<GpuMode, ScenarioError> {
        let max_memory = h100::MEMORY_GIB - h100::RESERVED_GIB;
        let tenant = self.tenant(path, "failing", &Params::of_gpu(raw), max_memory, d)?;
        let fail_field = format!("{path}.fail_at_seconds");
        let fail_at = raw.fail_at_seconds.unwrap_or(10.0);
        self.number(&fail_field, fail_at, 0.0, MAX_FAIL_SECONDS, "seconds")?;
        let recover_at = match raw.recover_at_seconds {
            Some(at) if !(at.is_finite() && at > fail_at) => {
                return Err(self.invalid(
                    &format!("{path}.recover_at_seconds"),
                    format!("must be after fail_at_seconds ({fail_at}) (got {at})"),
                ))
            }
            other => other,
        };
        Ok(GpuMode::Failing {
            tenant,
            fail_at_seconds: fail_at,
            recover_at_seconds: recover_at,
        })
    }

    fn instances(
        &self,
        path: &str,
        raw: Option<&[RawInstance]>,
        d: &Defaults,
    ) -> Result<Vec<MigInstanceSpec>, ScenarioError> {
        let field = format!("{path}.instances");
        let raw = match raw {
            Some(list) if !list.is_empty() => list,
            _ => return Err(self.invalid(&field, "a mig GPU needs at least one instance")),
        };
        let mut specs = Vec::with_capacity(raw.len());
        for (i, instance) in raw.iter().enumerate() {
            specs.push(self.instance(&format!("{field}[{i}]"), i, instance, d)?);
        }
        let slices: u32 = specs.iter().map(|s| s.profile.slices).sum();
        if slices > MIG_SLICES {
            return Err(self.invalid(
                &field,
                format!("the profiles use {slices} compute slices; an H100 has {MIG_SLICES}"),
            ));
        }
        self.unique_pids(&field, specs.iter().flat_map(|s| &s.tenant.processes))?;
        Ok(specs)
    }

    fn instance(
        &self,
        path: &str,
        index: usize,
        raw: &RawInstance,
        d: &Defaults,
    ) -> Result<MigInstanceSpec, ScenarioError> {
        let profile = MigProfile::by_name(&raw.profile).ok_or_else(|| {
            self.invalid(
                &format!("{path}.profile"),
                format!(
                    "unknown MIG profile `{}`; the H100 80GB offers {}",
                    raw.profile,
                    MigProfile::names()
                ),
            )
        })?;
        let kind = self.kind(path, raw.kind.as_deref().unwrap_or("idle"), &INSTANCE_KINDS)?;
        self.applicable(path, kind, &INSTANCE_KINDS, &instance_fields(raw))?;
        let id = index as u32 + 1;
        let defaults = Defaults {
            pid: d.pid + 10 * id,
            label: format!("{}-gi{id}", d.label),
            memory_gib: Some(f64::from(profile.memory_gib) * 0.6),
        };
        let params = Params::of_instance(raw);
        let tenant = self.tenant(
            path,
            kind,
            &params,
            f64::from(profile.memory_gib),
            &defaults,
        )?;
        Ok(MigInstanceSpec {
            gpu_instance_id: id,
            profile,
            tenant,
        })
    }

    /// Builds a workload from its parameters, filling defaults.
    fn tenant(
        &self,
        path: &str,
        kind: &str,
        p: &Params,
        max_memory_gib: f64,
        d: &Defaults,
    ) -> Result<Tenant, ScenarioError> {
        let load = self.load(path, kind, p)?;
        let default_memory = match (&load, d.memory_gib) {
            (Load::Idle, _) => 0.0,
            (_, Some(gib)) => gib,
            (_, None) => default_memory_gib(kind),
        };
        let memory_gib = p.memory_used_gib.unwrap_or(default_memory);
        self.number(
            &format!("{path}.memory_used_gib"),
            memory_gib,
            0.0,
            max_memory_gib,
            "GiB",
        )?;
        let processes = match (&load, p.processes) {
            (_, Some(list)) => self.processes(&format!("{path}.processes"), list, memory_gib)?,
            (Load::Idle, None) => Vec::new(),
            (_, None) => vec![ProcessSpec {
                pid: d.pid + 1,
                name: "python".to_string(),
                workload: d.label.clone(),
                memory_bytes: None,
            }],
        };
        Ok(Tenant {
            load,
            memory_used_bytes: (memory_gib * GIB) as u64,
            processes,
        })
    }

    fn load(&self, path: &str, kind: &str, p: &Params) -> Result<Load, ScenarioError> {
        Ok(match kind {
            "training" | "failing" => {
                let default_period = if kind == "failing" { 120.0 } else { 300.0 };
                let period = p.period_seconds.unwrap_or(default_period);
                let field = format!("{path}.period_seconds");
                if !(period.is_finite() && period > 0.0) {
                    return Err(self.invalid(&field, format!("must be > 0 (got {period})")));
                }
                self.number(&field, period, 0.0, MAX_PERIOD_SECONDS, "seconds")?;
                let duty = p.duty.unwrap_or(0.8);
                if !(duty > 0.0 && duty < 1.0) {
                    return Err(self.invalid(
                        &format!("{path}.duty"),
                        format!("must be between 0 and 1, exclusive (got {duty})"),
                    ));
                }
                Load::Training {
                    period_seconds: period,
                    duty,
                }
            }
            "inference" => {
                let burst_ratio = p.burst_ratio.unwrap_or(0.35);
                self.number(&format!("{path}.burst_ratio"), burst_ratio, 0.0, 1.0, "")?;
                Load::Inference { burst_ratio }
            }
            "memory_bound" => Load::MemoryBound,
            _ => Load::Idle,
        })
    }

    fn processes(
        &self,
        path: &str,
        raw: &[RawProcess],
        memory_gib: f64,
    ) -> Result<Vec<ProcessSpec>, ScenarioError> {
        let mut specs = Vec::with_capacity(raw.len());
        for (i, process) in raw.iter().enumerate() {
            specs.push(self.process(&format!("{path}[{i}]"), process, memory_gib)?);
        }
        let explicit_gib: f64 = raw.iter().filter_map(|p| p.memory_gib).sum();
        if explicit_gib > memory_gib + 1e-9 {
            return Err(self.invalid(
                path,
                format!("the processes hold {explicit_gib} GiB, more than memory_used_gib ({memory_gib})"),
            ));
        }
        self.unique_pids(path, specs.iter())?;
        Ok(specs)
    }

    fn process(
        &self,
        path: &str,
        raw: &RawProcess,
        memory_gib: f64,
    ) -> Result<ProcessSpec, ScenarioError> {
        if raw.pid == 0 || raw.pid > MAX_PID {
            return Err(self.invalid(
                &format!("{path}.pid"),
                format!("must be 1 to {MAX_PID} (got {})", raw.pid),
            ));
        }
        let name = raw.name.clone().unwrap_or_else(|| "python".to_string());
        self.label(&format!("{path}.name"), &name)?;
        let workload = raw
            .workload
            .clone()
            .unwrap_or_else(|| format!("{name}-{}", raw.pid));
        self.label(&format!("{path}.workload"), &workload)?;
        if let Some(gib) = raw.memory_gib {
            self.number(&format!("{path}.memory_gib"), gib, 0.0, memory_gib, "GiB")?;
        }
        Ok(ProcessSpec {
            pid: raw.pid,
            name,
            workload,
            memory_bytes: raw.memory_gib.map(|gib| (gib * GIB) as u64),
        })
    }

    fn unique_pids<'p>(
        &self,
        path: &str,
        processes: impl Iterator<Item = &'p ProcessSpec>,
    ) -> Result<(), ScenarioError> {
        let mut seen = std::collections::BTreeSet::new();
        for p in processes {
            if !seen.insert(p.pid) {
                return Err(self.invalid(path, format!("pid {} appears twice", p.pid)));
            }
        }
        Ok(())
    }

    fn label(&self, field: &str, value: &str) -> Result<(), ScenarioError> {
        let chars = value.chars().count();
        if chars == 0 || chars > MAX_NAME_CHARS || value.chars().any(char::is_control) {
            return Err(self.invalid(
                field,
                format!("must be 1 to {MAX_NAME_CHARS} printable characters (got {value:?})"),
            ));
        }
        Ok(())
    }

    fn number(
        &self,
        field: &str,
        value: f64,
        min: f64,
        max: f64,
        unit: &str,
    ) -> Result<(), ScenarioError> {
        if !(value.is_finite() && value >= min && value <= max) {
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            };
            return Err(self.invalid(
                field,
                format!("must be between {min} and {max}{unit} (got {value})"),
            ));
        }
        Ok(())
    }

    /// Checks `kind` is one of `kinds`, returning the static name.
    fn kind(
        &self,
        path: &str,
        kind: &str,
        kinds: &[(&'static str, &[&str])],
    ) -> Result<&'static str, ScenarioError> {
        kinds
            .iter()
            .map(|(name, _)| *name)
            .find(|name| *name == kind)
            .ok_or_else(|| {
                let names: Vec<&str> = kinds.iter().map(|(name, _)| *name).collect();
                self.invalid(
                    &format!("{path}.kind"),
                    format!(
                        "unknown workload kind `{kind}`; expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }

    /// Rejects a field that the kind does not use, so a typo'd kind is not silently
    /// simulated with its parameters ignored.
    fn applicable(
        &self,
        path: &str,
        kind: &str,
        kinds: &[(&'static str, &[&str])],
        present: &[&'static str],
    ) -> Result<(), ScenarioError> {
        let allowed = kinds
            .iter()
            .find(|(name, _)| *name == kind)
            .map_or(&[][..], |(_, fields)| *fields);
        match present.iter().find(|field| !allowed.contains(field)) {
            Some(field) => Err(self.invalid(
                &format!("{path}.{field}"),
                format!(
                    "not a parameter of kind `{kind}` (it takes: {})",
                    if allowed.is_empty() {
                        "nothing".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ),
            )),
            None => Ok(()),
        }
    }
}

/// Defaults that depend on where the workload sits.
struct Defaults {
    /// Base of the default pid.
    pid: u32,
    /// Default `workload` label.
    label: String,
    /// Default memory; `None` takes the kind's default.
    memory_gib: Option<f64>,
}

/// The workload parameters shared by GPUs and instances.
struct Params<'a> {
    period_seconds: Option<f64>,
    duty: Option<f64>,
    burst_ratio: Option<f64>,
    memory_used_gib: Option<f64>,
    processes: Option<&'a [RawProcess]>,
}

impl<'a> Params<'a> {
    fn of_gpu(raw: &'a RawGpu) -> Self {
        Self {
            period_seconds: raw.period_seconds,
            duty: raw.duty,
            burst_ratio: raw.burst_ratio,
            memory_used_gib: raw.memory_used_gib,
            processes: raw.processes.as_deref(),
        }
    }

    fn of_instance(raw: &'a RawInstance) -> Self {
        Self {
            period_seconds: raw.period_seconds,
            duty: raw.duty,
            burst_ratio: raw.burst_ratio,
            memory_used_gib: raw.memory_used_gib,
            processes: raw.processes.as_deref(),
        }
    }
}

fn default_memory_gib(kind: &str) -> f64 {
    match kind {
        "training" => 60.0,
        "inference" => 22.0,
        "memory_bound" => 48.0,
        "failing" => 36.0,
        _ => 0.0,
    }
}

/// The fields of `raw` that the file sets, in the order they are checked.
fn gpu_fields(raw: &RawGpu) -> Vec<&'static str> {
    set_fields(&[
        ("seed", raw.seed.is_some()),
        ("period_seconds", raw.period_seconds.is_some()),
        ("duty", raw.duty.is_some()),
        ("burst_ratio", raw.burst_ratio.is_some()),
        ("memory_used_gib", raw.memory_used_gib.is_some()),
        ("fail_at_seconds", raw.fail_at_seconds.is_some()),
        ("recover_at_seconds", raw.recover_at_seconds.is_some()),
        ("processes", raw.processes.is_some()),
        ("instances", raw.instances.is_some()),
    ])
}

/// The fields of `raw` that the file sets, in the order they are checked.
fn instance_fields(raw: &RawInstance) -> Vec<&'static str> {
    set_fields(&[
        ("period_seconds", raw.period_seconds.is_some()),
        ("duty", raw.duty.is_some()),
        ("burst_ratio", raw.burst_ratio.is_some()),
        ("memory_used_gib", raw.memory_used_gib.is_some()),
        ("processes", raw.processes.is_some()),
    ])
}

/// The names of `fields` whose flag is set, in their order.
fn set_fields(fields: &[(&'static str, bool)]) -> Vec<&'static str> {
    fields
        .iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| *name)
        .collect()
}
