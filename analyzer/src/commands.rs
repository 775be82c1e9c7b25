//! `run --once`, `serve` and `report`: the pipeline wired to its sinks.

use std::sync::Arc;

use tokio::sync::{watch, Notify};

use crate::cli::{ReportArgs, RunArgs, ServeArgs};
use crate::error::Error;
use crate::pipeline::store::ReportStore;
use crate::pipeline::{Analyze, Pipeline, RunReport};
use crate::sink::api::{self, registry::Registry, Api};
use crate::sink::pushgateway::Pushgateway;
use crate::sink::{http, metrics};
use crate::sink::{report, results};
use crate::source::prometheus::PrometheusClient;

/// Analyzes once; pushes the results as one group, or prints them without `--push`.
/// SIGINT or SIGTERM cancels the run wherever it is and exits 0 with nothing pushed:
/// the one push is a single PUT that the Pushgateway applies whole or not at all.
pub async fn run_once<A: Analyze>(args: &RunArgs, analyses: A) -> Result<(), Error> {
    if !args.once {
        return Err(Error::Usage(
            "run needs --once (it analyzes once and exits); use `serve` to run on a schedule"
                .into(),
        ));
    }
    let settings = args.common.settings()?;
    // Check the sink before the (possibly long) analysis, so a typo fails fast.
    let push = args
        .push
        .as_ref()
        .map(|url| {
            Pushgateway::new(
                url,
                &settings.shard.instance_label(),
                settings.client.timeout,
                settings.client.retry,
            )
        })
        .transpose()?;
    let client = PrometheusClient::new(settings.client)?;
    let pipeline = Pipeline::new(client, settings.config, settings.shard, analyses)
        .with_end(settings.end)
        .with_workloads(settings.workloads);
    let mut shutdown = Shutdown::install();
    let work = async {
        let report = pipeline.run().await?;
        log_summary(&report);
        let text = results::render(&report, true).encode();
        match &push {
            Some(gateway) => {
                gateway.replace_group(text).await?;
                tracing::info!(group = %gateway.group_url(), "results pushed");
            }
            None => print!("{text}"),
        }
        Ok(())
    };
    tokio::select! {
        done = work => done,
        () = shutdown.recv() => {
            // Dropping `work` aborts the query or the PUT in flight; an aborted PUT
            // leaves the group as it was.
            tracing::warn!("stopped by a signal before the run finished; nothing half-done was pushed");
            Ok(())
        }
    }
}

/// Analyzes once and writes the report to `--output` in `--format`. The file is written
/// beside its final name and renamed over it, so a reader never sees half a report.
pub async fn report<A: Analyze>(args: &ReportArgs, analyses: A) -> Result<(), Error> {
    let settings = args.common.settings()?;
    let to_stdout = args.output.as_os_str() == "-";
    if !to_stdout {
        check_output_dir(&args.output)?;
    }
    let client = PrometheusClient::new(settings.client)?;
    let pipeline = Pipeline::new(client, settings.config, settings.shard, analyses)
        .with_end(settings.end)
        .with_workloads(settings.workloads);
    let run = pipeline.run().await?;
    log_summary(&run);
    let text = report::render(&run, args.format).map_err(|e| Error::Runtime(e.to_string()))?;
    if to_stdout {
        print!("{text}");
        return Ok(());
    }
    write_whole(&args.output, text.as_bytes())?;
    tracing::info!(output = %args.output.display(), "report written");
    Ok(())
}

/// Fails fast, before the analysis, when the output's folder does not exist.
fn check_output_dir(output: &std::path::Path) -> Result<(), Error> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if dir.is_dir() {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "--output {}: the folder {} does not exist; create it or pick another path",
            output.display(),
            dir.display()
        )))
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn write_whole(path: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::Usage(format!(
                "cannot write the report to {}: {e}; pick a writable path",
                path.display()
            ))
        })
}

/// Analyzes every `--interval` and serves the latest results on `--listen` until
/// SIGINT or SIGTERM. A failed run keeps serving the previous results, marked stale.
/// A signal during a run cancels it: its partial results are dropped, never published.
pub async fn serve<A: Analyze>(args: &ServeArgs, analyses: A) -> Result<(), Error> {
    let mut shutdown = Shutdown::install();
    let settings = args.common.settings()?;
    let client = PrometheusClient::new(settings.client)?;
    let pipeline = Pipeline::new(client, settings.config, settings.shard, analyses)
        .with_end(settings.end)
        .with_workloads(settings.workloads);
    let registry = Registry::open(&args.registry).map_err(|e| Error::Usage(e.to_string()))?;
    let listener = http::bind(args.listen).await.map_err(Error::Runtime)?;
    let api_listener = http::bind(args.api).await.map_err(Error::Runtime)?;
    tracing::info!(listen = %args.listen, api = %args.api, interval = ?args.interval, "serving results on /metrics and the REST API");
    let latest = ReportStore::default();
    let run_now = Arc::new(Notify::new());
    let api = Arc::new(Api {
        store: latest.clone(),
        registry,
        constants: settings.workloads.constants,
        thresholds: settings.workloads.thresholds,
        run_now: Arc::clone(&run_now),
    });
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let stopped = |mut stop: watch::Receiver<bool>| async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let server = tokio::spawn(metrics::serve(
        listener,
        latest.clone(),
        stopped(stop_rx.clone()),
    ));
    let api_server = tokio::spawn(api::serve(api_listener, api, stopped(stop_rx.clone())));
    tokio::spawn(async move {
        shutdown.recv().await;
        let _ = stop_tx.send(true);
    });
    let mut ticker = tokio::time::interval(args.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = run_now.notified() => tracing::info!("analysis asked for by POST /profile"),
            _ = stop_rx.wait_for(|s| *s) => break,
        }
        let run = tokio::select! {
            run = pipeline.run() => run,
            _ = stop_rx.wait_for(|s| *s) => {
                tracing::info!("stopping: the run in progress is cancelled and its partial results dropped");
                break;
            }
        };
        match run {
            Ok(report) => {
                log_summary(&report);
                latest.publish(report);
            }
            Err(e) => {
                tracing::error!(error = %e, "analysis run failed; serving the previous results");
                latest.mark_failed();
            }
        }
    }
    let _ = server.await;
    let _ = api_server.await;
    Ok(())
}

fn log_summary(report: &RunReport) {
    let h = &report.health;
    tracing::info!(
        analyzed = h.series_analyzed,
        skipped_no_samples = h.series_skipped_no_samples,
        failed = h.series_failed,
        signals_empty = h.signals_empty,
        dropped_nan = h.dropped.nan,
        dropped_inf = h.dropped.inf,
        seconds = format!("{:.2}", h.duration.as_secs_f64()),
        "analysis run finished"
    );
}

/// SIGINT (Ctrl-C) and SIGTERM, caught from the moment of [`Shutdown::install`]: a
/// signal that arrives before anyone waits for it is not lost, and never kills the
/// process with the default action mid-push.
struct Shutdown {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Shutdown {
    /// Registers the handlers now.
    fn install() -> Shutdown {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let signals = signal(SignalKind::terminate())
                .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
                .map_err(|e| tracing::warn!(error = %e, "cannot catch SIGTERM/SIGINT; they will stop the process abruptly"))
                .ok();
            Shutdown { signals }
        }
        #[cfg(not(unix))]
        Shutdown {}
    }

    /// Resolves at the first SIGINT or SIGTERM (never, when they could not be caught).
    async fn recv(&mut self) {
        #[cfg(unix)]
        match &mut self.signals {
            Some((term, int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            None => std::future::pending().await,
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
