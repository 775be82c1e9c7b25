//! A real Prometheus server with a generated configuration and its own data dir.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::api::{ApiClient, Labels};
use crate::server::{Server, ServerSpec};

/// The Debian package's binary, found on `PATH`.
pub const PROMETHEUS_BIN: &str = "prometheus";

/// How long [`Prometheus::wait_for_scrapes`] waits by default.
pub const SCRAPE_WAIT: Duration = Duration::from_secs(60);

/// One `scrape_configs` entry with static targets.
#[derive(Debug, Clone)]
pub struct ScrapeJob {
    /// `job_name`, which becomes the `job` label.
    pub name: String,
    /// `host:port` targets.
    pub targets: Vec<String>,
    /// Path to scrape; Prometheus's default `/metrics` when `None`.
    pub metrics_path: Option<String>,
    /// Keep the target's own `job`/`instance` labels (a Pushgateway's groups).
    pub honor_labels: bool,
}

/// What to start Prometheus with.
#[derive(Debug, Clone)]
pub struct PrometheusConfig {
    /// `global.scrape_interval` (and the scrape timeout is the same).
    pub scrape_interval: Duration,
    /// `global.evaluation_interval` for rule files.
    pub evaluation_interval: Duration,
    /// Scrape jobs.
    pub jobs: Vec<ScrapeJob>,
    /// Rule files to load (absolute paths).
    pub rule_files: Vec<PathBuf>,
    /// Extra command-line flags, e.g. `--query.lookback-delta=1m`.
    pub extra_args: Vec<String>,
}

impl Default for PrometheusConfig {
    fn default() -> Self {
        PrometheusConfig {
            scrape_interval: Duration::from_secs(1),
            evaluation_interval: Duration::from_secs(1),
            jobs: Vec::new(),
            rule_files: Vec::new(),
            extra_args: Vec::new(),
        }
    }
}

impl PrometheusConfig {
    /// Scrapes one `host:port` target as job `job` every second.
    pub fn scraping(job: &str, target: &str) -> PrometheusConfig {
        PrometheusConfig::default().with_job(job, &[target])
    }

    /// Adds a job scraping `targets` at `/metrics`.
    pub fn with_job(mut self, job: &str, targets: &[&str]) -> PrometheusConfig {
        self.jobs.push(ScrapeJob {
            name: job.to_string(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            metrics_path: None,
            honor_labels: false,
        });
        self
    }

    /// Adds a job scraping a Pushgateway at `target` with `honor_labels: true`, so pushed
    /// groups keep their own `job` and `instance`.
    pub fn with_pushgateway_job(mut self, job: &str, target: &str) -> PrometheusConfig {
        self.jobs.push(ScrapeJob {
            name: job.to_string(),
            targets: vec![target.to_string()],
            metrics_path: None,
            honor_labels: true,
        });
        self
    }

    /// The configuration file's contents. JSON is valid YAML, and quoting stays exact.
    pub fn to_yaml(&self) -> String {
        let jobs: Vec<_> = self
            .jobs
            .iter()
            .map(|job| {
                let mut entry = json!({
                    "job_name": job.name,
                    "static_configs": [{"targets": job.targets}],
                });
                if let Some(path) = &job.metrics_path {
                    entry["metrics_path"] = json!(path);
                }
                if job.honor_labels {
                    entry["honor_labels"] = json!(true);
                }
                entry
            })
            .collect();
        let config = json!({
            "global": {
                "scrape_interval": prom_duration(self.scrape_interval),
                "scrape_timeout": prom_duration(self.scrape_interval),
                "evaluation_interval": prom_duration(self.evaluation_interval),
            },
            "rule_files": self.rule_files,
            "scrape_configs": jobs,
        });
        serde_json::to_string_pretty(&config).expect("a JSON value serializes")
    }
}

/// A Prometheus duration string in milliseconds, e.g. `1000ms`.
fn prom_duration(duration: Duration) -> String {
    format!("{}ms", duration.as_millis().max(1))
}

/// Health of one scrape target, from `/api/v1/targets`.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetHealth {
    /// The target's labels (`job`, `instance`, ...).
    pub labels: Labels,
    /// `up`, `down` or `unknown`.
    pub health: String,
    /// The last scrape error, empty when none.
    pub last_error: String,
}

/// A running Prometheus; stopped and its temporary directory removed on drop.
pub struct Prometheus {
    server: Server,
    api: ApiClient,
}

impl Prometheus {
    /// Starts Prometheus with `config` and an empty data dir in its temporary directory.
    pub fn start(config: &PrometheusConfig) -> Prometheus {
        Prometheus::launch(config, None)
    }

    /// Starts Prometheus on an existing data dir, e.g. one filled by
    /// [`crate::promtool::backfill_openmetrics`]. The caller keeps the dir alive.
    ///
    /// Retention is set to ten years so that backfilled history is never dropped.
    pub fn start_on_data_dir(data_dir: &Path, config: &PrometheusConfig) -> Prometheus {
        let mut config = config.clone();
        config
            .extra_args
            .push("--storage.tsdb.retention.time=3650d".to_string());
        Prometheus::launch(&config, Some(data_dir))
    }

    fn launch(config: &PrometheusConfig, data_dir: Option<&Path>) -> Prometheus {
        let yaml = config.to_yaml();
        let command = |port: u16, dir: &Path| {
            let config_path = dir.join("prometheus.yml");
            std::fs::write(&config_path, &yaml)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", config_path.display()));
            let data = data_dir.map_or_else(|| dir.join("data"), Path::to_path_buf);
            let mut command = Command::new(PROMETHEUS_BIN);
            command
                .arg(format!("--config.file={}", config_path.display()))
                .arg(format!("--storage.tsdb.path={}", data.display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=info")
                .args(&config.extra_args)
                .current_dir(dir);
            command
        };
        let server = Server::start(&ServerSpec {
            name: "prometheus",
            ready_path: "/-/ready",
            command: &command,
        });
        let api = ApiClient::new(&server.url());
        Prometheus { server, api }
    }

    /// Base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// `host:port`, as a scrape target for another Prometheus.
    pub fn address(&self) -> String {
        self.server.address()
    }

    /// The query API.
    pub fn api(&self) -> &ApiClient {
        &self.api
    }

    /// The underlying server (log, temporary dir, process).
    pub fn server(&mut self) -> &mut Server {
        &mut self.server
    }

    /// The last lines of Prometheus's log, for assertion messages.
    pub fn log_tail(&self) -> String {
        self.server.log_tail()
    }

    /// Active scrape targets and their health; panics on errors.
    pub fn targets(&self) -> Vec<TargetHealth> {
        let body = self.server.get_text("/api/v1/targets?state=active");
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{}/api/v1/targets: not JSON ({e}): {body}", self.url()));
        json["data"]["activeTargets"]
            .as_array()
            .unwrap_or_else(|| panic!("{}/api/v1/targets: no activeTargets: {body}", self.url()))
            .iter()
            .map(|target| TargetHealth {
                labels: serde_json::from_value(target["labels"].clone()).unwrap_or_default(),
                health: target["health"].as_str().unwrap_or_default().to_string(),
                last_error: target["lastError"].as_str().unwrap_or_default().to_string(),
            })
            .collect()
    }

    /// Waits until every target of `job` has been scraped at least `scrapes` times
    /// (counting `up` samples of the last ten minutes), up to [`SCRAPE_WAIT`].
    ///
    /// Panics with the targets' health and Prometheus's log tail on timeout.
    pub fn wait_for_scrapes(&self, job: &str, scrapes: usize) {
        let promql = format!("count_over_time(up{{job=\"{job}\"}}[10m])");
        let seen = crate::wait::try_until(SCRAPE_WAIT, || {
            let rows = self.api.try_query(&promql).map_err(|e| e.to_string())?;
            let counts: Vec<f64> = rows.iter().map(|row| row.value).collect();
            if !counts.is_empty() && counts.iter().all(|&n| n >= scrapes as f64) {
                Ok(())
            } else {
                Err(format!("scrape counts per target: {counts:?}"))
            }
        });
        if let Err(last) = seen {
            panic!(
                "job {job:?} was not scraped {scrapes} times within {}s ({last}); targets: {:?}\n\
                 --- prometheus log ---\n{}",
                SCRAPE_WAIT.as_secs(),
                self.targets(),
                self.log_tail()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_exact() {
        let config = PrometheusConfig::scraping("a \"quoted\" job", "127.0.0.1:1");
        let parsed: serde_json::Value = serde_json::from_str(&config.to_yaml()).unwrap();
        assert_eq!(parsed["global"]["scrape_interval"], "1000ms");
        assert_eq!(parsed["scrape_configs"][0]["job_name"], "a \"quoted\" job");
        assert_eq!(
            parsed["scrape_configs"][0]["static_configs"][0]["targets"][0],
            "127.0.0.1:1"
        );
        assert!(parsed["scrape_configs"][0].get("honor_labels").is_none());
        let pushgw = PrometheusConfig::default().with_pushgateway_job("pushgateway", "127.0.0.1:2");
        let parsed: serde_json::Value = serde_json::from_str(&pushgw.to_yaml()).unwrap();
        assert_eq!(parsed["scrape_configs"][0]["honor_labels"], true);
    }

    #[test]
    fn scrapes_itself_and_answers_queries() {
        // A Prometheus scraping a second Prometheus: no other component involved.
        let target = Prometheus::start(&PrometheusConfig::default());
        let prom = Prometheus::start(&PrometheusConfig::scraping("self", &target.address()));
        prom.wait_for_scrapes("self", 2);
        let up = prom.api().query("up{job=\"self\"}");
        assert_eq!(up.len(), 1, "{up:?}");
        assert_eq!(up[0].value, 1.0);
        assert_eq!(
            up[0].label("instance"),
            target.url().trim_start_matches("http://")
        );
        let targets = prom.targets();
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].health, "up");
        assert!(!prom.api().series("up").is_empty());
        assert!(prom
            .api()
            .metric_names()
            .iter()
            .any(|n| n == "prometheus_build_info"));
        let err = prom.api().try_query("sum(").unwrap_err().to_string();
        assert!(
            err.contains("/api/v1/query") && err.contains("400"),
            "{err}"
        );
    }
}
