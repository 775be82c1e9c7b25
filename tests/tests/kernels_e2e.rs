//! Kernel metrics end to end: clients speaking the injection library's protocol (its
//! own sender, fed by fake CUPTI sources) → the real exporter binary → a real
//! Prometheus. Several processes, thousands of distinct kernel names, a sampled
//! process (kernels, memcpy and memset scaled up alike), a peer that sends garbage and
//! one of the previous protocol version; the counters, the top-K folding and the
//! bounds are checked through PromQL.

use poolprof_e2e::exporter::Exporter;
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::check_metrics;
use poolprof_e2e::wait::until;
use poolprof_inject::aggregate::{Aggregator, KernelRun, MemcpyDirection};
use poolprof_inject::sample::Sample;
use poolprof_inject::sender::{Sender, Source};
use poolprof_inject::wire::{encode_hello, DutyCycle, Geometry, Hello};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The exporter's default top-K per (uuid, workload).
const TOP_K: usize = 50;
const MANY_NAMES: usize = 5_000;
const WAIT: Duration = Duration::from_secs(60);

/// A CUPTI stand-in: what the test records is what the sender ships.
#[derive(Clone)]
struct FakeCupti {
    agg: Arc<Mutex<Aggregator>>,
    duty_ppm: u32,
}

impl FakeCupti {
    fn new(duty: DutyCycle) -> Self {
        Self {
            agg: Arc::new(Mutex::new(Aggregator::new(8192))),
            duty_ppm: duty.ppm(),
        }
    }
    fn kernel(&self, name: &str, ns: u64) {
        self.agg.lock().unwrap().record_kernel(&KernelRun {
            device: 0,
            name,
            start_ns: 1_000,
            end_ns: 1_000 + ns,
            geometry: Geometry {
                grid: [132, 1, 1],
                block: [256, 1, 1],
                ..Geometry::default()
            },
        });
    }
    fn memcpy(&self, direction: MemcpyDirection, bytes: u64) {
        self.agg.lock().unwrap().record_memcpy(0, direction, bytes);
    }
    fn memset(&self, bytes: u64) {
        self.agg.lock().unwrap().record_memset(0, bytes);
    }
}

impl Source for FakeCupti {
    fn flush(&self, _forced: bool) {}
    fn take(&self) -> Sample {
        Sample::new(self.agg.lock().unwrap().take(), self.duty_ppm)
    }
    fn uuid(&self, _ordinal: u32) -> Option<[u8; 16]> {
        Some(GPU0_BYTES)
    }
}

use poolprof_e2e::exporter::{SIM_GPU0_UUID as UUID, SIM_GPU0_UUID_BYTES as GPU0_BYTES};

fn process(
    socket: &Path,
    workload: Option<&str>,
    duty: DutyCycle,
) -> (Sender<FakeCupti>, FakeCupti) {
    let cupti = FakeCupti::new(duty);
    let hello = Hello {
        pid: std::process::id(),
        process_name: "e2e".into(),
        workload: workload.map(str::to_string),
        library_version: "e2e".into(),
        interval_ms: 100,
        duty,
    };
    (
        Sender::new(socket.to_path_buf(), hello, cupti.clone(), 8192),
        cupti,
    )
}

/// Waits until `promql` returns the one value `want`.
fn expect(prom: &Prometheus, promql: &str, want: f64) {
    prom.api().expect_scalar(promql, want, WAIT);
}

#[test]
fn injected_processes_reach_prometheus_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("inject.sock");
    let socket_arg = socket.to_str().unwrap();
    let exporter = Exporter::start(&[
        "--simulate",
        "1",
        "--collect-interval",
        "1s",
        "--kernels.socket-path",
        socket_arg,
    ]);
    until("the kernel socket", WAIT, || {
        UnixStream::connect(&socket)
            .map(drop)
            .map_err(|e| format!("{e}; exporter log:\n{}", exporter.log_tail()))
    });
    let prom = Prometheus::start(&PrometheusConfig::scraping("poolprof", &exporter.address()));

    // Process 1: a training loop, one heavy kernel plus memcpys.
    let (mut train, train_cupti) = process(&socket, Some("e2e/train"), DutyCycle::Always);
    // Process 2: thousands of distinct kernel names.
    let (mut many, many_cupti) = process(&socket, Some("e2e/many"), DutyCycle::Always);
    // Process 3: no POOLPROF_WORKLOAD, sampled 1 ms in 4.
    let sampled_duty = DutyCycle::Sampled {
        trace_ms: 1,
        period_ms: 4,
    };
    let (mut sampled, sampled_cupti) = process(&socket, None, sampled_duty);
    // A peer that is not the library.
    let mut garbage = UnixStream::connect(&socket).unwrap();
    garbage
        .write_all(b"POST / HTTP/1.1\r\ncontent-length: 99999999\r\n\r\n")
        .unwrap();
    // A library of protocol version 1, whose memory bytes were never sampled: refused,
    // never scaled.
    let mut old_hello = encode_hello(&Hello {
        pid: std::process::id(),
        process_name: "old".into(),
        workload: Some("e2e/old".into()),
        library_version: "0.1.0".into(),
        interval_ms: 100,
        duty: sampled_duty,
    });
    old_hello[4..6].copy_from_slice(&1u16.to_le_bytes());
    let mut old = UnixStream::connect(&socket).unwrap();
    old.write_all(&old_hello).unwrap();

    let gemm = "_ZN2at6native4gemmIN3c108BFloat16EEEvPT_S5_S5_";
    for round in 0..5u64 {
        for _ in 0..200 {
            train_cupti.kernel(gemm, 50_000);
        }
        train_cupti.memcpy(MemcpyDirection::HtoD, 1 << 20);
        train_cupti.memcpy(MemcpyDirection::DtoH, 4096);
        for i in 0..MANY_NAMES / 5 {
            // The first round's names are the heaviest: they take the top-K slots.
            let ns = if round == 0 { 10_000 + i as u64 } else { 100 };
            many_cupti.kernel(&format!("generated_kernel_{round}_{i}"), ns);
        }
        for _ in 0..10 {
            sampled_cupti.kernel("sampled_kernel", 1_000);
        }
        sampled_cupti.memcpy(MemcpyDirection::DtoD, 1_000);
        sampled_cupti.memset(256);
        let now = Instant::now();
        for sender in [&mut train, &mut many, &mut sampled] {
            sender.tick(now);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for sender in [&mut train, &mut many, &mut sampled] {
        sender.finish(Instant::now() + Duration::from_secs(5));
    }

    // The training process: every launch, its GPU time, its copies.
    let train_sel = r#"workload="e2e/train",kernel="native::gemm""#;
    expect(
        &prom,
        &format!("poolprof_kernel_launches_total{{{train_sel}}}"),
        1000.0,
    );
    expect(
        &prom,
        &format!("poolprof_kernel_duration_seconds_total{{{train_sel}}}"),
        1000.0 * 50e-6,
    );
    // The latest launch's shape, for kernel-level schedulers.
    expect(
        &prom,
        &format!("poolprof_kernel_grid_blocks{{{train_sel}}}"),
        132.0,
    );
    expect(
        &prom,
        &format!("poolprof_kernel_block_threads{{{train_sel}}}"),
        256.0,
    );
    expect(
        &prom,
        &format!(
            r#"poolprof_memcpy_bytes_total{{workload="e2e/train",direction="htod",uuid="{UUID}"}}"#
        ),
        5.0 * (1 << 20) as f64,
    );

    // Thousands of names: every launch counted, at most TOP_K names + "other".
    expect(
        &prom,
        r#"sum(poolprof_kernel_launches_total{workload="e2e/many"})"#,
        MANY_NAMES as f64,
    );
    expect(
        &prom,
        r#"count(poolprof_kernel_launches_total{workload="e2e/many"})"#,
        TOP_K as f64 + 1.0,
    );
    expect(
        &prom,
        r#"poolprof_kernel_launches_total{workload="e2e/many",kernel="other"}"#,
        (MANY_NAMES - TOP_K) as f64,
    );
    expect(
        &prom,
        r#"count(poolprof_kernel_launches_total{workload="e2e/many",kernel=~"generated_kernel_0_.*"})"#,
        TOP_K as f64,
    );

    // The sampled process: counts scaled by 1/duty, marked with its sampling ratio,
    // named from /proc since it sent no workload.
    let sampled_workload = until("the sampled workload", WAIT, || {
        let rows = prom
            .api()
            .try_query("poolprof_inject_kernel_sampling_ratio == 0.25")
            .map_err(|e| e.to_string())?;
        match rows.as_slice() {
            [row] => Ok(row.label("workload").to_string()),
            _ => Err(format!("{rows:?}")),
        }
    });
    assert!(!sampled_workload.is_empty() && !sampled_workload.starts_with("e2e/"));
    expect(
        &prom,
        &format!(
            r#"poolprof_kernel_launches_total{{workload="{sampled_workload}",kernel="sampled_kernel"}}"#
        ),
        50.0 * 4.0,
    );
    // Its memory records were sampled by the same duty cycle: scaled by the same 4.
    expect(
        &prom,
        &format!(
            r#"poolprof_memcpy_bytes_total{{workload="{sampled_workload}",direction="dtod"}}"#
        ),
        5.0 * 1_000.0 * 4.0,
    );
    expect(
        &prom,
        &format!(r#"poolprof_memset_bytes_total{{workload="{sampled_workload}"}}"#),
        5.0 * 256.0 * 4.0,
    );
    // The unsampled process's copies are exact.
    expect(
        &prom,
        r#"poolprof_memcpy_bytes_total{workload="e2e/train",direction="dtoh"}"#,
        5.0 * 4096.0,
    );

    // The garbage peer was disconnected and counted; the exporter is fine.
    expect(
        &prom,
        r#"sum(poolprof_inject_rejected_connections_total{reason="bad_magic"})"#,
        1.0,
    );
    expect(
        &prom,
        r#"sum(poolprof_inject_rejected_connections_total{reason="wrong_version"})"#,
        1.0,
    );
    assert!(
        prom.api().query(r#"{workload="e2e/old"}"#).is_empty(),
        "the old library's hello created series"
    );
    let mut buf = [0u8; 8];
    garbage
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(
        matches!(std::io::Read::read(&mut garbage, &mut buf), Ok(0) | Err(_)),
        "garbage peer still connected"
    );

    // Bounds: label lengths, and the whole exposition lints clean.
    let kernels = prom.api().query("poolprof_kernel_launches_total");
    assert!(kernels.iter().all(|s| s.label("kernel").len() <= 80));
    prom.api()
        .expect_scalar("poolprof_inject_connected_processes", 3.0, WAIT);
    drop((train, many, sampled));
    prom.api()
        .expect_scalar("poolprof_inject_connected_processes", 0.0, WAIT);
    let lint = check_metrics(&exporter.metrics_text());
    assert!(lint.is_clean(), "promtool: {}", lint.output);
}
