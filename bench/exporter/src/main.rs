//! `scrape-load`: bounded /metrics load on loopback, reporting latency quantiles
//! and errors; `--get` fetches once (the benchmark scripts use it instead of curl).
//!
//! Exit codes: 0 ok, 1 failed requests or non-200 answers, 2 bad arguments,
//! 3 target unreachable.

mod args;
mod histogram;
mod scraper;

use args::{Args, Format, Mode};
use scraper::{Outcome, Plan};
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match args::parse(&argv) {
        Ok(a) => a,
        Err(msg) if msg.is_empty() => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("scrape-load: {msg}\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("scrape-load: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match args.mode {
        Mode::Get => runtime.block_on(get_once(&args)),
        Mode::Load => runtime.block_on(load(&args)),
    }
}

async fn get_once(args: &Args) -> ExitCode {
    let fetch = async {
        let mut sender = scraper::connect(&args.target).await.map_err(|e| (3, e))?;
        scraper::get(&mut sender, &args.target, args.gzip, args.accept.as_deref())
            .await
            .map_err(|e| (1, e))
    };
    match tokio::time::timeout(args.timeout, fetch).await {
        Ok(Ok(resp)) => {
            let _ = std::io::stdout().write_all(&resp.body);
            if resp.status == 200 {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "scrape-load: http://{}{} answered HTTP {}",
                    args.target.authority, args.target.path, resp.status
                );
                ExitCode::from(1)
            }
        }
        Ok(Err((code, e))) => {
            eprintln!("scrape-load: {e}");
            ExitCode::from(code)
        }
        Err(_) => {
            eprintln!(
                "scrape-load: no answer from http://{}{} within {:?}",
                args.target.authority, args.target.path, args.timeout
            );
            ExitCode::from(3)
        }
    }
}

async fn load(args: &Args) -> ExitCode {
    let started = Instant::now();
    let plan = Arc::new(Plan {
        target: args.target.clone(),
        deadline: started + args.duration,
        budget: args.max_requests.map(|n| Arc::new(AtomicU64::new(n))),
        interval: args.interval,
        timeout: args.timeout,
        gzip: args.gzip,
        accept: args.accept.clone(),
    });
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|_| tokio::spawn(scraper::run(Arc::clone(&plan))))
        .collect();
    let mut total = Outcome::default();
    for task in tasks {
        match task.await {
            Ok(outcome) => total.merge(outcome),
            Err(e) => {
                total.errors += 1;
                total.last_error = Some(format!("scraper task failed: {e}"));
            }
        }
    }
    report(args, &total, started.elapsed().as_secs_f64());
    if !total.connected {
        ExitCode::from(3)
    } else if total.errors > 0 || total.non_ok > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

fn report(args: &Args, o: &Outcome, elapsed: f64) {
    let h = &o.latencies;
    let ok = h.count();
    let requests = ok + o.errors + o.non_ok;
    let rps = if elapsed > 0.0 {
        ok as f64 / elapsed
    } else {
        0.0
    };
    let mean_bytes = o.bytes.checked_div(ok).unwrap_or(0);
    let last = o.last_error.as_deref().unwrap_or("");
    match args.format {
        Format::Kv => println!(
            "requests={requests} ok={ok} errors={} non_ok={} p50_ms={:.3} p90_ms={:.3} \
             p99_ms={:.3} max_ms={:.3} mean_ms={:.3} rps={rps:.1} bytes={mean_bytes} \
             elapsed_s={elapsed:.2} concurrency={} last_error={}",
            o.errors,
            o.non_ok,
            ms(h.quantile(0.50)),
            ms(h.quantile(0.90)),
            ms(h.quantile(0.99)),
            ms(h.max()),
            h.mean() / 1000.0,
            args.concurrency,
            last.replace(char::is_whitespace, "_"),
        ),
        Format::Text => {
            println!(
                "http://{}{}: {requests} requests by {} scrapers in {elapsed:.1} s ({rps:.0}/s), {} errors, {} non-200",
                args.target.authority, args.target.path, args.concurrency, o.errors, o.non_ok
            );
            println!(
                "latency ms: p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}  mean {:.3}; body {mean_bytes} bytes",
                ms(h.quantile(0.50)),
                ms(h.quantile(0.90)),
                ms(h.quantile(0.99)),
                ms(h.max()),
                h.mean() / 1000.0
            );
            if !last.is_empty() {
                println!("last error: {last}");
            }
        }
    }
}
