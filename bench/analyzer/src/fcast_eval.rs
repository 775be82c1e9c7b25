//! Forecast accuracy on the evaluation set ([`crate::evalset`]): poolprof (validated
//! model choice) against its previous method (ETS by AICc), naive, seasonal-naive for
//! each true season, augurs MSTL + AutoETS given the true seasons (`augurs-mstl`), and
//! the statsmodels peer (`peer_forecast.py`, read from a file).
//!
//! sMAPE in percent (0 where forecast and truth are both 0); MASE scaled by the
//! history's mean absolute seasonal difference at the class's dominant season (lag 1
//! without one); "MAE / naive" is the class's total MAE over naive's. Coverage: the
//! share of future values inside poolprof's 80% and 95% intervals.

use std::collections::BTreeMap;
use std::io::Write;

use augurs_core::{Fit, Predict};
use augurs_ets::AutoETS;
use augurs_mstl::MSTLModel;
use poolprof_analyzer::analysis::forecast::{forecast, ForecastConfig, Method};
use poolprof_analyzer::series::Series;

use crate::evalset::{case, Case, CLASSES};

/// Seed of series `i` of a set.
fn seed(base: u64, i: usize) -> u64 {
    base.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(i as u64)
}

/// Writes the set for the Python peer: one line per series,
/// `class_index id step h seasons(comma list or -) values…`.
pub fn dump(path: &str, base: u64, per_class: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create dump"));
    for c in 0..CLASSES.len() {
        for i in 0..per_class {
            let k = case(c, seed(base, i));
            let seasons = if k.seasons.is_empty() {
                "-".to_string()
            } else {
                k.seasons
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            write!(f, "{c} {i} {} {} {seasons}", k.step, k.future.len()).unwrap();
            for v in &k.filled {
                write!(f, " {v}").unwrap();
            }
            writeln!(f).unwrap();
        }
    }
}

/// Reads peer forecasts: lines `class_index id method v…`.
fn read_peer(path: &str) -> PeerForecasts {
    let text = std::fs::read_to_string(path).expect("peer forecasts");
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let c = w.next()?.parse().ok()?;
            let i = w.next()?.parse().ok()?;
            let m = w.next()?.to_string();
            let v: Vec<f64> = w.map(|x| x.parse().unwrap_or(f64::NAN)).collect();
            Some(((c, i, m), v))
        })
        .collect()
}

fn smape(truth: &[f64], f: &[f64]) -> f64 {
    let s: f64 = truth
        .iter()
        .zip(f)
        .map(|(y, p)| {
            let d = y.abs() + p.abs();
            if d == 0.0 {
                0.0
            } else {
                200.0 * (y - p).abs() / d
            }
        })
        .sum();
    s / truth.len() as f64
}

fn mae(truth: &[f64], f: &[f64]) -> f64 {
    truth.iter().zip(f).map(|(y, p)| (y - p).abs()).sum::<f64>() / truth.len() as f64
}

fn scale(history: &[f64], m: usize) -> f64 {
    let lag = if history.len() > 2 * m && m > 0 { m } else { 1 };
    let d: f64 = history
        .windows(lag + 1)
        .map(|w| (w[lag] - w[0]).abs())
        .sum();
    d / (history.len() - lag) as f64
}

/// Seasonal-naive of `m` steps.
fn snaive(history: &[f64], m: usize, h: usize) -> Vec<f64> {
    let n = history.len();
    (0..h).map(|j| history[n - m + j % m]).collect()
}

#[derive(Default, Clone)]
struct Acc {
    smape: f64,
    mase: f64,
    mae: f64,
    n: usize,
    cover80: usize,
    cover95: usize,
    points: usize,
}

/// Scores every method on `per_class` series of each class (seed base `base`).
pub fn run(base: u64, per_class: usize, peer: Option<&str>, threads: usize) {
    let peer = peer.map(read_peer);
    let cases = cases(CLASSES.len(), base, per_class, case);
    let title = format!("seed base {base}, {per_class} series per class");
    evaluate(&title, &CLASSES, &cases, peer.as_ref(), threads);
}

/// `per_class` cases of each of `classes` classes drawn by `case` (class, seed) from
/// seed base `base`, as (class index, series index, case); `EVAL_CLASS=k` keeps class
/// k only (a development aid).
pub(crate) fn cases(
    classes: usize,
    base: u64,
    per_class: usize,
    case: impl Fn(usize, u64) -> Case + Copy,
) -> Vec<(usize, usize, Case)> {
    let only: Option<usize> = std::env::var("EVAL_CLASS")
        .ok()
        .and_then(|v| v.parse().ok());
    (0..classes)
        .filter(|c| only.is_none_or(|o| o == *c))
        .flat_map(|c| (0..per_class).map(move |i| (c, i, case(c, seed(base, i)))))
        .collect()
}

/// Scores every method on `cases` (class index, series index, case) and prints the
/// tables, classes named by `classes`.
pub fn evaluate(
    title: &str,
    classes: &[&str],
    cases: &[(usize, usize, Case)],
    peer: Option<&PeerForecasts>,
    threads: usize,
) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((c, i, k)) = cases.get(j) else { break };
                let r = score(k, *c, *i, peer);
                results.lock().unwrap().push((*c, r));
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut table: BTreeMap<(usize, String), Acc> = BTreeMap::new();
    let mut models: BTreeMap<(usize, String), usize> = BTreeMap::new();
    for (c, (rows, model)) in results {
        *models.entry((c, model)).or_default() += 1;
        for (name, a) in rows {
            let t = table.entry((c, name)).or_default();
            t.smape += a.smape;
            t.mase += a.mase;
            t.mae += a.mae;
            t.n += a.n;
            t.cover80 += a.cover80;
            t.cover95 += a.cover95;
            t.points += a.points;
        }
    }
    println!("{title}\n");
    println!("| class | method | sMAPE % | MASE | MAE / naive | 80% cover | 95% cover |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    let mut overall: BTreeMap<String, Acc> = BTreeMap::new();
    for (c, class) in classes.iter().enumerate() {
        let naive_mae = table.get(&(c, "naive".to_string())).map_or(1.0, |a| a.mae);
        for ((cc, name), a) in table.iter().filter(|((cc, _), _)| *cc == c) {
            let _ = cc;
            let cover = coverage(a);
            println!(
                "| {class} | {name} | {:.2} | {:.3} | {:.3} | {cover} |",
                a.smape / a.n as f64,
                a.mase / a.n as f64,
                a.mae / naive_mae
            );
            let o = overall.entry(name.clone()).or_default();
            o.smape += a.smape;
            o.mase += a.mase;
            o.n += a.n;
            o.cover80 += a.cover80;
            o.cover95 += a.cover95;
            o.points += a.points;
        }
    }
    println!("\n| all classes | sMAPE % | MASE | 80% cover | 95% cover |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (name, a) in &overall {
        let cover = coverage(a);
        println!(
            "| {name} | {:.2} | {:.3} | {cover} |",
            a.smape / a.n as f64,
            a.mase / a.n as f64
        );
    }
    println!("\nmodels chosen by poolprof:");
    for ((c, m), count) in &models {
        println!("  {}: {m}: {count}", classes[*c]);
    }
}

/// The table cells of the 80% and 95% coverage, or dashes for a method without intervals.
fn coverage(a: &Acc) -> String {
    if a.points == 0 {
        return "– | –".into();
    }
    let share = |hits: usize| 100.0 * hits as f64 / a.points as f64;
    format!("{:.1}% | {:.1}%", share(a.cover80), share(a.cover95))
}

type Rows = Vec<(String, Acc)>;

/// Peer forecasts by (class, series, method).
pub type PeerForecasts = BTreeMap<(usize, usize, String), Vec<f64>>;

fn score(k: &Case, c: usize, i: usize, peer: Option<&PeerForecasts>) -> (Rows, String) {
    let h = k.future.len();
    let m = k.seasons.first().copied().unwrap_or(0);
    let sc = scale(&k.filled, m);
    let one = |f: &[f64]| Acc {
        smape: smape(&k.future, f),
        mase: if sc > 0.0 {
            mae(&k.future, f) / sc
        } else {
            0.0
        },
        mae: mae(&k.future, f),
        n: 1,
        ..Acc::default()
    };
    let mut rows = Vec::new();
    let peer_mstl = augurs_mstl_ets(&k.filled, &k.seasons, h);
    let series = Series::from_points(k.history.clone());
    let mut chosen = String::new();
    for (name, method) in [
        ("poolprof", Method::Validated),
        ("poolprof before (ETS, AICc)", Method::Aicc),
    ] {
        let config = ForecastConfig {
            horizon_steps: h,
            step_seconds: Some(k.step),
            method,
            candidate_periods: k.siblings.clone(),
            ..ForecastConfig::default()
        };
        let f = forecast(&series, &config).expect("forecast");
        assert_eq!(f.point.len(), h);
        let mut a = one(&f.point);
        for (j, y) in k.future.iter().enumerate() {
            a.cover80 += usize::from(f.lower_80[j] <= *y && *y <= f.upper_80[j]);
            a.cover95 += usize::from(f.lower_95[j] <= *y && *y <= f.upper_95[j]);
        }
        a.points = h;
        if method == Method::Validated {
            chosen = generic(&f.model);
            if let Some(dir) = std::env::var_os("EVAL_SERIES_DIR") {
                // development aid: history, future, forecast and its 80% and 95% bands,
                // then the step in seconds
                let path = std::path::Path::new(&dir).join(format!("{c}-{i}.txt"));
                let line = |v: &[f64]| {
                    v.iter()
                        .map(|x| format!("{x}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let text = format!(
                    "{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n",
                    f.model,
                    line(&k.filled),
                    line(&k.future),
                    line(&f.point),
                    line(&f.lower_80),
                    line(&f.upper_80),
                    line(&f.lower_95),
                    line(&f.upper_95),
                    k.step
                );
                std::fs::write(path, text).expect("write series");
            }
            if std::env::var_os("EVAL_VERBOSE").is_some() {
                let last = *k.filled.last().unwrap();
                let naive = vec![last; h];
                let sn = k
                    .seasons
                    .first()
                    .map_or(naive.clone(), |s| snaive(&k.filled, *s, h));
                eprintln!(
                    "{} #{i}: {} period {:?} true {:?} mae {:.3} naive {:.3} snaive {:.3} augurs {:.3} smape {:.1} naive {:.1} snaive {:.1}",
                    k.class,
                    f.model,
                    f.period_seconds.map(|p| p / k.step),
                    k.seasons,
                    mae(&k.future, &f.point),
                    mae(&k.future, &naive),
                    mae(&k.future, &sn),
                    peer_mstl.as_ref().map_or(f64::NAN, |p| mae(&k.future, p)),
                    smape(&k.future, &f.point),
                    smape(&k.future, &naive),
                    smape(&k.future, &sn),
                );
            }
        }
        rows.push((name.to_string(), a));
    }
    let last = *k.filled.last().expect("history");
    rows.push(("naive".into(), one(&vec![last; h])));
    for s in &k.seasons {
        if k.filled.len() >= *s {
            let what = match (*s as f64 * k.step) as u64 {
                86_400 => "day",
                604_800 => "week",
                _ => "iteration",
            };
            rows.push((format!("snaive({what})"), one(&snaive(&k.filled, *s, h))));
        }
    }
    if let Some(f) = peer_mstl {
        rows.push(("augurs mstl+ets".into(), one(&f)));
    }
    if let Some(peer) = peer {
        for (key, f) in peer.range((c, i, String::new())..(c, i + 1, String::new())) {
            if f.len() == h && f.iter().all(|v| v.is_finite()) {
                rows.push((key.2.clone(), one(f)));
            }
        }
    }
    (rows, chosen)
}

/// augurs' MSTL decomposition by the true seasons (whole steps) with AutoETS on the
/// adjusted series; plain AutoETS for a class without seasons. `None` if it fails.
fn augurs_mstl_ets(history: &[f64], seasons: &[usize], h: usize) -> Option<Vec<f64>> {
    let fitted: Vec<usize> = seasons
        .iter()
        .copied()
        .filter(|s| history.len() >= 2 * s)
        .collect();
    let point = if fitted.is_empty() {
        AutoETS::non_seasonal()
            .fit(history)
            .ok()?
            .predict(h, None)
            .ok()?
            .point
    } else {
        let trend = AutoETS::non_seasonal().into_trend_model();
        MSTLModel::new(fitted, trend)
            .fit(history)
            .ok()?
            .predict(h, None)
            .ok()?
            .point
    };
    (point.len() == h && point.iter().all(|v| v.is_finite())).then_some(point)
}

/// A model name without its periods, so that counts group by kind.
fn generic(model: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for ch in model.chars() {
        match ch {
            '(' => {
                depth += 1;
                out.push(ch);
            }
            ')' => {
                depth -= 1;
                out.push(ch);
            }
            c if depth > 0 && (c.is_ascii_digit() || c == '.' || c == ',') => {}
            c => out.push(c),
        }
    }
    out.replace("()", "")
}
