//! Pairs as `bench/workloads/corun.py` measured them.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use poolprof_analyzer::analysis::colocate::Mode;
use serde_json::Value;

/// One pair in one mode: each repetition's progress of both sides (names sorted).
pub struct Measured {
    pub mode: Mode,
    pub a: String,
    pub b: String,
    pub reps: Vec<(f64, f64)>,
}

impl Measured {
    /// The mean over repetitions.
    pub fn mean(&self) -> (f64, f64) {
        let n = self.reps.len() as f64;
        let (x, y) = self
            .reps
            .iter()
            .fold((0.0, 0.0), |(x, y), r| (x + r.0, y + r.1));
        (x / n, y / n)
    }
}

/// The median of `v` (not empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Reads one runs file.
pub fn read(path: &Path) -> Result<Vec<Measured>> {
    let text = std::fs::read_to_string(path)?;
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let rate = |l: &Value, n: &str| {
        l["results"][n]["rate"]
            .as_f64()
            .with_context(|| format!("no rate for {n}"))
    };
    let mut alone: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut mode = None;
    for l in &lines {
        mode = match l["label"].as_str() {
            Some("ts") => Some(Mode::TimeSlicing),
            Some("mps") => Some(Mode::Mps),
            _ => mode,
        };
        if l["kind"] == "alone" {
            let n = l["programs"][0]
                .as_str()
                .context("alone run without a program")?;
            alone.entry(n.to_string()).or_default().push(rate(l, n)?);
        }
    }
    let Some(mode) = mode else {
        bail!("no line labelled ts or mps")
    };
    let reference: BTreeMap<String, f64> = alone.into_iter().map(|(n, v)| (n, median(v))).collect();
    let mut pairs: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l["kind"] == "pair") {
        let (x, y) = (
            l["programs"][0].as_str().context("pair")?,
            l["programs"][1].as_str().context("pair")?,
        );
        let progress = |n: &str| -> Result<f64> {
            Ok(rate(l, n)? / reference.get(n).context("no alone run")?)
        };
        let (px, py) = (progress(x)?, progress(y)?);
        let (key, p) = if x <= y {
            ((x.to_string(), y.to_string()), (px, py))
        } else {
            ((y.to_string(), x.to_string()), (py, px))
        };
        pairs.entry(key).or_default().push(p);
    }
    Ok(pairs
        .into_iter()
        .map(|((a, b), reps)| Measured { mode, a, b, reps })
        .collect())
}
