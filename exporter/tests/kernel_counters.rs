//! Kernel counters over the real socket listener: a fake library peer sends a hello,
//! a delta and a counters message, and the store publishes the profiled launch next
//! to the kernel's launch counters; a peer without counters is served as before.

use poolprof_exporter::kernels::{KernelLimits, KernelListener};
use poolprof_exporter::registry::MetricSet;
use poolprof_inject::wire::{
    encode_counters, encode_delta, encode_hello, Delta, DeviceDelta, DeviceId, DutyCycle, Flops,
    Geometry, Hello, KernelCounters, KernelDelta, KernelStats, MemcpyBytes,
};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

const DEVICE: DeviceId = DeviceId {
    ordinal: 0,
    uuid: Some([0xab; 16]),
};
const UUID: &str = "GPU-abababab-abab-abab-abab-abababababab";

fn hello(workload: &str) -> Vec<u8> {
    encode_hello(&Hello {
        pid: 1,
        process_name: "python3".into(),
        workload: Some(workload.into()),
        library_version: "test".into(),
        interval_ms: 1000,
        duty: DutyCycle::Sampled {
            trace_ms: 200,
            period_ms: 4000,
        },
    })
}

fn delta(name: &str) -> Vec<u8> {
    encode_delta(&Delta {
        seq: 0,
        dropped_records: 0,
        kernel_duty_ppm: 50_000,
        devices: vec![DeviceDelta {
            device: DEVICE,
            kernels: vec![KernelDelta {
                name: name.into(),
                stats: KernelStats::one(2_000_000),
                geometry: Geometry::default(),
            }],
            folded: KernelStats::default(),
            memcpy: MemcpyBytes::default(),
            memset_bytes: 0,
        }],
    })
    .concat()
}

/// One value of `name` whose labels include every pair of `labels`.
fn value(set: &MetricSet, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    set.value(name, labels)
}

fn scrape(listener: &KernelListener) -> MetricSet {
    let mut set = MetricSet::new();
    listener.store().write_metrics(&mut set);
    set
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_peer_with_counters_and_one_without_are_both_published() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inject.sock");
    let listener = KernelListener::spawn(&path, KernelLimits::default()).unwrap();

    let gemm = "_Z9gemm_bf16PKvS0_Pv";
    let mut with = UnixStream::connect(&path).unwrap();
    with.write_all(&hello("train")).unwrap();
    with.write_all(&delta(gemm)).unwrap();
    let counters = [KernelCounters {
        device: DEVICE,
        name: gemm.into(),
        flops: Flops {
            fp32: Some(4096),
            tensor: Some(2 * 4096 * 4096 * 4096),
            ..Flops::default()
        },
        dram_bytes: Some((100 << 20, 32 << 20)),
        duration_ns: Some(180_000),
    }];
    with.write_all(&encode_counters(&counters).concat())
        .unwrap();
    with.write_all(&delta(gemm)).unwrap();

    let mut without = UnixStream::connect(&path).unwrap();
    without.write_all(&hello("infer")).unwrap();
    without.write_all(&delta("_Z3addPfS_S_")).unwrap();

    let labels = [
        ("uuid", UUID),
        ("workload", "train"),
        ("kernel", "gemm_bf16"),
    ];
    eventually("two deltas of train", || {
        value(
            &scrape(&listener),
            "poolprof_kernel_launches_total",
            &labels,
        ) == Some(40.0)
    });
    eventually("infer's delta", || {
        let infer = [("workload", "infer"), ("kernel", "add")];
        value(&scrape(&listener), "poolprof_kernel_launches_total", &infer).is_some()
    });
    let set = scrape(&listener);
    let with_label = |extra: (&'static str, &'static str)| {
        let mut l = labels.to_vec();
        l.push(extra);
        l
    };
    let tensor = value(
        &set,
        "poolprof_kernel_flops",
        &with_label(("precision", "tensor")),
    );
    assert_eq!(tensor, Some(2.0 * 4096f64.powi(3)));
    let fp64 = value(
        &set,
        "poolprof_kernel_flops",
        &with_label(("precision", "fp64")),
    );
    assert_eq!(fp64, None, "a precision not measured is not published");
    let written = value(
        &set,
        "poolprof_kernel_dram_bytes",
        &with_label(("direction", "write")),
    );
    assert_eq!(written, Some(32.0 * 1048576.0));
    let seconds = value(&set, "poolprof_kernel_profiled_duration_seconds", &labels);
    assert_eq!(seconds, Some(180e-6));
    let infer = [("workload", "infer")];
    assert_eq!(value(&set, "poolprof_kernel_flops", &infer), None);
    assert_eq!(listener.store().connected(), 2, "both peers stay connected");
}
