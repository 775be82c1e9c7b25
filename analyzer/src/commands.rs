//! `run --once` and `serve`: the pipeline wired to its sinks.

use std::sync::Arc;

use tokio::sync::{watch, Notify};

use crate::cli::{RunArgs, ServeArgs};
use crate::error::Error;
use crate::pipeline::store::ReportStore;
use crate::pipeline::{Analyze, Pipeline, RunReport};
use crate::sink::api::{self, registry::Registry, Api};
use crate::sink::pushgateway::Pushgateway;
use crate::sink::results;
use crate::sink::{http, metrics};
use crate::source::prometheus::PrometheusClient;

/// Analyzes once; pushes the results as one group, or prints them without `--push`.
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
    let report = pipeline.run().await?;
    log_summary(&report);
    let text = results::render(&report, true).encode();
    match push {
        Some(gateway) => {
            gateway.replace_group(text).await?;
            tracing::info!(group = %gateway.group_url(), "results pushed");
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// Analyzes every `--interval` and serves the latest results on `--listen` until
/// SIGINT or SIGTERM. A failed run keeps serving the previous results, marked stale.
pub async fn serve<A: Analyze>(args: &ServeArgs, analyses: A) -> Result<(), Error> {
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
        shutdown_signal().await;
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
        match pipeline.run().await {
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

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
