//! MPS with SM limits: pairs measured with every client limited to the same share of
//! the SMs (`CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`) against the model's prediction for
//! that split. Progress is over the program's alone rate *without* a limit (from a
//! separate reference file): what the limit and the peer cost together.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use poolprof_analyzer::analysis::colocate::evaluate::agreement;
use poolprof_analyzer::analysis::colocate::mps;
use poolprof_analyzer::analysis::colocate::{Constants, Demand, SmShare};
use poolprof_analyzer::analysis::profile::WorkloadProfile;
use serde_json::Value;

use crate::measured::median;

fn lines(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).context("a JSON line"))
        .collect()
}

fn rate(l: &Value, n: &str) -> Result<f64> {
    l["results"][n]["rate"]
        .as_f64()
        .with_context(|| format!("no rate for {n}"))
}

/// Median alone rate of each program in a runs file.
fn alone_medians(lines: &[Value]) -> Result<BTreeMap<String, f64>> {
    let mut alone: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l["kind"] == "alone") {
        let n = l["programs"][0]
            .as_str()
            .context("alone run without a program")?;
        alone.entry(n.to_string()).or_default().push(rate(l, n)?);
    }
    Ok(alone.into_iter().map(|(n, v)| (n, median(v))).collect())
}

/// Prints the comparison for `percent` on each side.
pub fn report(
    profiles: &[WorkloadProfile],
    limited: &Path,
    reference: &Path,
    percent: u8,
    c: &Constants,
) -> Result<()> {
    let by_name: BTreeMap<&str, Demand> = profiles
        .iter()
        .map(|p| (p.workload.as_str(), Demand::of(p)))
        .collect();
    let free = alone_medians(&lines(reference)?)?;
    let limited = lines(limited)?;
    let capped = alone_medians(&limited)?;
    let share = SmShare {
        a_percent: percent,
        b_percent: percent,
    };
    println!("# MPS with every client limited to {percent}% of the SMs\n");
    println!("## Alone, limited (rate over the unlimited alone rate)\n");
    println!("| program | measured | predicted |\n| --- | ---: | ---: |");
    let idle = Demand::idle();
    let (mut meas, mut pred) = (Vec::new(), Vec::new());
    for (n, r) in &capped {
        let (Some(f), Some(d)) = (free.get(n), by_name.get(n.as_str())) else {
            bail!("{n}: no unlimited alone rate or no profile");
        };
        let p = mps::progress_limited(d, &idle, share).0;
        println!("| {n} | {:.3} | {p:.3} |", r / f);
        meas.push((r / f, r / f));
        pred.push((p, p));
    }
    let a = agreement(&pred, &meas);
    println!(
        "\nAlone: ρ {:.3}, MAE {:.3} over {} programs.\n",
        a.rho,
        a.mae,
        meas.len()
    );
    println!("## Pairs (each side over its unlimited alone rate)\n");
    println!("| pair | measured | predicted with limits | predicted without limits |");
    println!("| --- | --- | --- | --- |");
    let (mut meas, mut limited_pred, mut free_pred) = (Vec::new(), Vec::new(), Vec::new());
    let mut reps: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for l in limited.iter().filter(|l| l["kind"] == "pair") {
        let (x, y) = (
            l["programs"][0].as_str().context("pair")?,
            l["programs"][1].as_str().context("pair")?,
        );
        let progress =
            |n: &str| -> Result<f64> { Ok(rate(l, n)? / free.get(n).context("no alone run")?) };
        let (px, py) = (progress(x)?, progress(y)?);
        let (key, p) = if x <= y {
            ((x, y), (px, py))
        } else {
            ((y, x), (py, px))
        };
        reps.entry((key.0.to_string(), key.1.to_string()))
            .or_default()
            .push(p);
    }
    for ((a, b), r) in &reps {
        let n = r.len() as f64;
        let m = (
            r.iter().map(|p| p.0).sum::<f64>() / n,
            r.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let (Some(da), Some(db)) = (by_name.get(a.as_str()), by_name.get(b.as_str())) else {
            bail!("no profile for {a} or {b}");
        };
        let lp = mps::progress_limited(da, db, share);
        let fp = mps::progress(da, db, c);
        println!(
            "| {a} + {b} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} |",
            m.0, m.1, lp.0, lp.1, fp.0, fp.1
        );
        meas.push(m);
        limited_pred.push(lp);
        free_pred.push(fp);
    }
    let (l, f) = (
        agreement(&limited_pred, &meas),
        agreement(&free_pred, &meas),
    );
    println!(
        "\nPairs ({}): with the limits modelled ρ {:.3}, MAE {:.3}; the unlimited prediction ρ {:.3}, MAE {:.3}.",
        meas.len(),
        l.rho,
        l.mae,
        f.rho,
        f.mae
    );
    Ok(())
}
