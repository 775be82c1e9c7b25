//! Progress of a run: a bar on a terminal, log lines otherwise (cron, containers).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Reports progress through one signal's series.
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    started: std::time::Instant,
}

impl Progress {
    /// Starts reporting `total` series of `label`; a bar only when stderr is a terminal.
    pub fn start(label: String, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            let style = ProgressStyle::with_template("{msg:30} [{bar:40}] {pos}/{len} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message(label.clone());
            bar
        });
        Progress {
            bar,
            label,
            total,
            started: std::time::Instant::now(),
        }
    }

    /// One more series done.
    pub fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// The signal is done.
    pub fn finish(self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        tracing::info!(
            signal = %self.label,
            series = self.total,
            seconds = format!("{:.2}", self.started.elapsed().as_secs_f64()),
            "signal analyzed"
        );
    }
}
