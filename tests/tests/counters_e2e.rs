//! Per-kernel counters end to end: the injection library's sender (fed by a fake
//! CUPTI source that profiled two kernels) → the real exporter binary → a real
//! Prometheus. The profiled launches arrive once, join the kernel's launch counters
//! by label, answer the documented arithmetic-intensity query, and the exposition
//! lints clean.

use poolprof_e2e::exporter::{Exporter, SIM_GPU0_UUID, SIM_GPU0_UUID_BYTES};
use poolprof_e2e::prometheus::{Prometheus, PrometheusConfig};
use poolprof_e2e::promtool::check_metrics;
use poolprof_e2e::wait::until;
use poolprof_inject::aggregate::{Aggregator, KernelRun};
use poolprof_inject::sample::Sample;
use poolprof_inject::sender::{Sender, Source};
use poolprof_inject::wire::{DeviceId, DutyCycle, Flops, Geometry, Hello, KernelCounters};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);
const GEMM: &str = "_Z9gemm_bf16PKvS0_Pv";
const ADD: &str = "_Z9add_floatPKfS0_Pf";
/// 4096³ bf16 GEMM and an fp32 add over 2^28 elements, as a GPU would report them.
const GEMM_FLOPS: u64 = 2 * 4096 * 4096 * 4096;
const ADD_ELEMENTS: u64 = 1 << 28;

#[derive(Clone, Default)]
struct FakeCupti {
    agg: Arc<Mutex<Option<Aggregator>>>,
    profiled: Arc<Mutex<Vec<KernelCounters>>>,
}

impl FakeCupti {
    fn kernel(&self, name: &str, ns: u64) {
        let mut agg = self.agg.lock().unwrap();
        agg.get_or_insert_with(|| Aggregator::new(64))
            .record_kernel(&KernelRun {
                device: 0,
                name,
                start_ns: 1_000,
                end_ns: 1_000 + ns,
                geometry: Geometry::default(),
            });
    }
    fn profile(&self, name: &str, flops: Flops, read: u64, write: u64, ns: u64) {
        self.profiled.lock().unwrap().push(KernelCounters {
            device: DeviceId {
                ordinal: 0,
                uuid: None,
            },
            name: name.into(),
            flops,
            dram_bytes: Some((read, write)),
            duration_ns: Some(ns),
        });
    }
}

impl Source for FakeCupti {
    fn flush(&self, _forced: bool) {}
    fn take(&self) -> Sample {
        let agg = self.agg.lock().unwrap().take();
        Sample::new(agg.unwrap_or_else(|| Aggregator::new(64)), 1_000_000)
    }
    fn uuid(&self, _ordinal: u32) -> Option<[u8; 16]> {
        Some(SIM_GPU0_UUID_BYTES)
    }
    fn counters(&self) -> Vec<KernelCounters> {
        std::mem::take(&mut self.profiled.lock().unwrap())
    }
}

/// Waits until `promql` returns the one value `want`.
fn expect(prom: &Prometheus, promql: &str, want: f64) {
    prom.api().expect_scalar(promql, want, WAIT);
}

#[test]
fn profiled_kernels_reach_prometheus_next_to_their_launch_counters() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("inject.sock");
    let exporter = Exporter::start(&[
        "--simulate",
        "1",
        "--collect-interval",
        "1s",
        "--kernels.socket-path",
        socket.to_str().unwrap(),
    ]);
    until("the kernel socket", WAIT, || {
        UnixStream::connect(&socket)
            .map(drop)
            .map_err(|e| format!("{e}; exporter log:\n{}", exporter.log_tail()))
    });
    let prom = Prometheus::start(&PrometheusConfig::scraping("poolprof", &exporter.address()));

    let cupti = FakeCupti::default();
    let hello = Hello {
        pid: std::process::id(),
        process_name: "e2e".into(),
        workload: Some("e2e/counters".into()),
        library_version: "e2e".into(),
        interval_ms: 100,
        duty: DutyCycle::Always,
    };
    let mut sender = Sender::new(socket.clone(), hello, cupti.clone(), 64);
    let tensor = Flops {
        tensor: Some(GEMM_FLOPS),
        fp32: Some(4096 * 4096),
        ..Flops::default()
    };
    cupti.profile(GEMM, tensor, 96 << 20, 32 << 20, 180_000);
    let fp32 = Flops {
        fp32: Some(ADD_ELEMENTS),
        ..Flops::default()
    };
    cupti.profile(ADD, fp32, 8 * ADD_ELEMENTS, 4 * ADD_ELEMENTS, 1_070_000);
    let start = Instant::now();
    let mut launches = 0.0;
    let labels = r#"workload="e2e/counters""#;
    until("launches and counters in Prometheus", WAIT, || {
        cupti.kernel(GEMM, 180_000);
        cupti.kernel(ADD, 1_070_000);
        launches += 1.0;
        sender.tick(Instant::now());
        let q = format!(r#"poolprof_kernel_flops{{{labels},kernel="add_float",precision="fp32"}}"#);
        prom.api().try_scalar(&q).map(drop).map_err(|e| {
            let text = exporter.metrics_text();
            let ours: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("e2e/counters"))
                .collect();
            format!("{e}; exporter: {ours:?}")
        })?;
        let q = format!(r#"sum(poolprof_kernel_launches_total{{{labels},kernel="gemm_bf16"}})"#);
        prom.api().try_scalar(&q).map(drop)
    });
    assert!(start.elapsed() < WAIT);

    let uuid = SIM_GPU0_UUID;
    expect(
        &prom,
        &format!(
            r#"poolprof_kernel_flops{{uuid="{uuid}",{labels},kernel="gemm_bf16",precision="tensor"}}"#
        ),
        GEMM_FLOPS as f64,
    );
    expect(
        &prom,
        &format!(r#"sum(poolprof_kernel_dram_bytes{{{labels},kernel="add_float"}})"#),
        (12 * ADD_ELEMENTS) as f64,
    );
    expect(
        &prom,
        &format!(r#"poolprof_kernel_profiled_duration_seconds{{{labels},kernel="gemm_bf16"}}"#),
        180e-6,
    );
    // docs/kernels.md's arithmetic intensity: 1/12 FLOP per byte for the add.
    let ai = format!(
        r#"sum by (workload, kernel) (poolprof_kernel_flops{{{labels},kernel="add_float"}})
           / sum by (workload, kernel) (poolprof_kernel_dram_bytes{{{labels},kernel="add_float"}})"#
    );
    prom.api().expect_scalar(&ai, 1.0 / 12.0, WAIT);
    // They join the kernel's launch counters by (uuid, workload, kernel).
    let joined = format!(
        r#"count(poolprof_kernel_profiled_duration_seconds{{{labels}}}
           and on (uuid, workload, kernel) poolprof_kernel_launches_total)"#
    );
    prom.api().expect_scalar(&joined, 2.0, WAIT);
    // The analyzer's queries (analyzer/src/pipeline/profiles.rs, kernel_counters).
    expect(
        &prom,
        &format!(
            r#"max by (workload, kernel, precision) (last_over_time(poolprof_kernel_flops{{{labels},kernel="gemm_bf16",precision="tensor"}}[60s]))"#
        ),
        GEMM_FLOPS as f64,
    );
    expect(
        &prom,
        &format!(
            r#"sum by (workload, kernel) (max by (workload, kernel, direction) (last_over_time(poolprof_kernel_dram_bytes{{{labels},kernel="gemm_bf16"}}[60s])))"#
        ),
        (128u64 << 20) as f64,
    );
    assert_eq!(sender.stats().counters_sent, 2, "sent once");
    assert!(launches >= 1.0);
    let lint = check_metrics(&exporter.metrics_text());
    assert!(lint.is_clean(), "promtool: {}", lint.output);
}
