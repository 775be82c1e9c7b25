//! Scores the co-location model against pairs measured on a GPU.
//!
//! ```text
//! cargo run --release -- --profiles profiles.json --runs runs-ts.jsonl --runs runs-mps.jsonl
//! ```
//!
//! With `--limited runs-mps-limit50.jsonl --reference runs-mps-reference.jsonl
//! --limit 50` it scores instead the model of MPS SM limits (`limits.rs`).
//!
//! `--run1-constants` scores the constants fitted on run 1 instead of the built-in ones.
//! `profiles.json` is `poolprof-analyzer profiles` output taken while each program ran
//! alone; each runs file is `bench/workloads/corun.py` output, its mode in the `label`
//! of its lines (`ts` or `mps`). A program's progress in a pair is its rate there over
//! the median of its alone rates in the same file. Prints, per mode: the model as
//! shipped (constants fitted before these runs), refitted on these runs, and with each
//! program's pairs predicted by constants fitted without it; the earlier profiler's
//! fixed table; the measurement's own repeatability; and the mode choice.

mod limits;
mod measured;
mod table;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use poolprof_analyzer::analysis::colocate::calibrate::{self, Observation};
use poolprof_analyzer::analysis::colocate::evaluate::{self, agreement, Agreement};
use poolprof_analyzer::analysis::colocate::{recommend, Constants, Demand, Mode, Recommendation};
use poolprof_analyzer::workloads_cmd::read_profiles;

use measured::Measured;

fn main() -> Result<()> {
    let Args {
        profiles: profiles_path,
        runs,
        constants,
        limited,
    } = parse_args()?;
    let profiles = read_profiles(&profiles_path).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some((limited, reference, percent)) = limited {
        let c = constants.unwrap_or_default();
        return limits::report(&profiles, &limited, &reference, percent, &c);
    }
    let by_name: BTreeMap<&str, _> = profiles.iter().map(|p| (p.workload.as_str(), p)).collect();
    let mut measured = Vec::new();
    for path in &runs {
        measured
            .extend(measured::read(path).with_context(|| format!("reading {}", path.display()))?);
    }
    let mut observations = Vec::new();
    for m in &measured {
        let (Some(pa), Some(pb)) = (by_name.get(m.a.as_str()), by_name.get(m.b.as_str())) else {
            bail!(
                "no profile for {} or {} in {}",
                m.a,
                m.b,
                profiles_path.display()
            );
        };
        let (progress_a, progress_b) = m.mean();
        observations.push(Observation {
            mode: m.mode,
            a: m.a.clone(),
            b: m.b.clone(),
            demand_a: Demand::of(pa),
            demand_b: Demand::of(pb),
            progress_a,
            progress_b,
        });
    }
    let shipped = constants.unwrap_or_default();
    let refit = calibrate::fit(&observations, &shipped);
    let loo = evaluate::leave_one_program_out(&observations, &shipped);
    println!(
        "# Co-location model against {} measured pairs\n",
        measured.len()
    );
    println!(
        "Constants given (\"shipped\" below): {shipped:?}\nRefitted on these runs: {refit:?}\n"
    );
    println!("| mode | pairs | shipped ρ | shipped MAE | refit ρ | refit MAE | leave-one-out ρ | leave-one-out MAE | fixed table ρ | fixed table MAE | repeat ρ | repeat MAE |");
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for mode in [Mode::TimeSlicing, Mode::Mps] {
        let idx: Vec<usize> = (0..observations.len())
            .filter(|&i| observations[i].mode == mode)
            .collect();
        if idx.is_empty() {
            continue;
        }
        let meas: Vec<(f64, f64)> = idx
            .iter()
            .map(|&i| (observations[i].progress_a, observations[i].progress_b))
            .collect();
        let with = |c: &Constants| -> Vec<(f64, f64)> {
            idx.iter()
                .map(|&i| calibrate::predicted(&observations[i], c))
                .collect()
        };
        let loo_m: Vec<(f64, f64)> = idx.iter().map(|&i| loo[i]).collect();
        let fixed: Vec<(f64, f64)> = idx
            .iter()
            .map(|&i| {
                let o = &observations[i];
                let s = table::score(
                    table::class(by_name[o.a.as_str()]),
                    table::class(by_name[o.b.as_str()]),
                );
                (s, s)
            })
            .collect();
        let repeat = repeatability(&measured, mode);
        let cells = [
            agreement(&with(&shipped), &meas),
            agreement(&with(&refit), &meas),
            agreement(&loo_m, &meas),
            agreement(&fixed, &meas),
            repeat,
        ];
        let row: Vec<String> = cells
            .iter()
            .map(|a: &Agreement| format!("{:.3} | {:.3}", a.rho, a.mae))
            .collect();
        println!("| {} | {} | {} |", mode.label(), idx.len(), row.join(" | "));
    }
    println!();
    mode_choice(&observations, &shipped, "shipped");
    mode_choice(&observations, &refit, "refit");
    let loo_obs: Vec<Observation> = observations
        .iter()
        .zip(&loo)
        .map(|(o, p)| Observation {
            progress_a: p.0,
            progress_b: p.1,
            ..o.clone()
        })
        .collect();
    mode_choice_from(&observations, &loo_obs, "leave-one-out");
    println!("\n## Pairs (measured mean of the repetitions; predicted as shipped)\n");
    println!("| mode | pair | measured | predicted | leave-one-out | verdict (predicted) |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (o, l) in observations.iter().zip(&loo) {
        let p = calibrate::predicted(o, &shipped);
        let v = recommend::verdict(&prediction(o.mode, p));
        println!(
            "| {} | {} + {} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {} |",
            o.mode.label(),
            o.a,
            o.b,
            o.progress_a,
            o.progress_b,
            p.0,
            p.1,
            l.0,
            l.1,
            v.label()
        );
    }
    Ok(())
}

/// Per mode: both sides' summed progress and how many runs were summed.
type Sums = BTreeMap<Mode, (f64, f64, f64)>;

/// Agreement between the first and the second repetition of each pair.
fn repeatability(measured: &[Measured], mode: Mode) -> Agreement {
    let (first, second): (Vec<_>, Vec<_>) = measured
        .iter()
        .filter(|m| m.mode == mode && m.reps.len() >= 2)
        .map(|m| (m.reps[0], m.reps[1]))
        .unzip();
    agreement(&first, &second)
}

fn mode_choice(observations: &[Observation], c: &Constants, name: &str) {
    let predicted: Vec<Observation> = observations
        .iter()
        .map(|o| {
            let p = calibrate::predicted(o, c);
            Observation {
                progress_a: p.0,
                progress_b: p.1,
                ..o.clone()
            }
        })
        .collect();
    mode_choice_from(observations, &predicted, name);
}

/// A feasible prediction of `mode` with both sides' progress `p`.
fn prediction(mode: Mode, p: (f64, f64)) -> poolprof_analyzer::analysis::colocate::ModePrediction {
    poolprof_analyzer::analysis::colocate::ModePrediction {
        mode,
        feasible: true,
        progress_a: p.0,
        progress_b: p.1,
        score: (p.0 + p.1) / 2.0,
        sm_share: None,
        mig: None,
        reason: String::new(),
    }
}

/// How often the recommended one of time-slicing and MPS was the measured better, and
/// how many pairs the predictions call "good" although a side measured under 0.5.
fn mode_choice_from(measured: &[Observation], predicted: &[Observation], name: &str) {
    let key = |o: &Observation| (o.a.clone(), o.b.clone());
    // A pair measured in several runs counts once, at the mean of its runs.
    let by_pair = |v: &[Observation]| {
        let mut sums: BTreeMap<(String, String), Sums> = BTreeMap::new();
        for o in v {
            let e = sums
                .entry(key(o))
                .or_default()
                .entry(o.mode)
                .or_insert((0.0, 0.0, 0.0));
            *e = (e.0 + o.progress_a, e.1 + o.progress_b, e.2 + 1.0);
        }
        sums.into_iter()
            .map(|(k, modes)| {
                (
                    k,
                    modes
                        .into_iter()
                        .map(|(m, (a, b, n))| (m, (a / n, b / n)))
                        .collect::<BTreeMap<_, _>>(),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let (meas, pred) = (by_pair(measured), by_pair(predicted));
    let (mut hits, mut total, mut wrong_good, mut good) = (0, 0, 0, 0);
    for (pair, modes) in &meas {
        let (Some(&mt), Some(&mm)) = (modes.get(&Mode::TimeSlicing), modes.get(&Mode::Mps)) else {
            continue;
        };
        let p = &pred[pair];
        let (pt, pm) = (p[&Mode::TimeSlicing], p[&Mode::Mps]);
        // The mode the analyzer would recommend between these two (its tie rule
        // included), not merely the higher predicted score.
        let choice = recommend::choose(
            pair.0.clone(),
            pair.1.clone(),
            vec![prediction(Mode::TimeSlicing, pt), prediction(Mode::Mps, pm)],
        );
        let chosen = choice.recommended_mode.unwrap_or(Mode::TimeSlicing);
        total += 1;
        if chosen == evaluate::best_mode(mt, mm) || ((mt.0 + mt.1) - (mm.0 + mm.1)).abs() < 0.04 {
            hits += 1;
        }
        let chosen_meas = if chosen == Mode::Mps { mm } else { mt };
        let v = choice.recommendation;
        if v == Recommendation::Good {
            good += 1;
            if chosen_meas.0.min(chosen_meas.1) < 0.5 {
                wrong_good += 1;
            }
        }
    }
    println!("Mode choice ({name}): the recommended one of time-slicing and MPS was the measured better in {hits} of {total} pairs (a measured tie, scores within 0.02, counts as picked); {good} pairs called good, {wrong_good} of them with a side measured under 0.5.");
}

/// The command line.
struct Args {
    profiles: PathBuf,
    runs: Vec<PathBuf>,
    constants: Option<Constants>,
    /// `--limited FILE --reference FILE --limit PERCENT`.
    limited: Option<(PathBuf, PathBuf, u8)>,
}

const USAGE: &str = "usage: --profiles FILE (--runs FILE [--runs FILE] | --limited FILE --reference FILE --limit PERCENT) [--run1-constants]";

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let (mut profiles, mut runs, mut constants) = (None, Vec::new(), None);
    let (mut limited, mut reference, mut limit) = (None, None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--profiles" => profiles = args.next().map(PathBuf::from),
            "--runs" => runs.extend(args.next().map(PathBuf::from)),
            "--limited" => limited = args.next().map(PathBuf::from),
            "--reference" => reference = args.next().map(PathBuf::from),
            "--limit" => {
                limit = args
                    .next()
                    .and_then(|v| v.parse::<u8>().ok())
                    .filter(|p| (1..=100).contains(p))
            }
            "--run1-constants" => constants = Some(Constants::RUN1),
            other => bail!("unknown argument {other:?}; {USAGE}"),
        }
    }
    let limited = match (limited, reference, limit) {
        (Some(l), Some(r), Some(p)) => Some((l, r, p)),
        (None, None, None) => None,
        _ => bail!("--limited, --reference and --limit (1-100) go together; {USAGE}"),
    };
    match profiles {
        Some(profiles) if !runs.is_empty() || limited.is_some() => Ok(Args {
            profiles,
            runs,
            constants,
            limited,
        }),
        _ => bail!("{USAGE}"),
    }
}
