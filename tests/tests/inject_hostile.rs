//! A hostile local process against the exporter's injection socket (mode 0666, so any
//! user can connect). The real exporter binary with simulated GPUs; peers speaking the
//! wire protocol: one reporting 128 000 made-up GPU UUIDs, hundreds of short
//! connections each naming a new workload, more peers than process slots trickling a
//! hello one byte at a time, and peers announcing 1 MiB reports that never finish.
//! Meanwhile a real sender (the library's own `Sender`) reports, and another connects
//! after the attack. Checked: the exposition stays small and names only the exporter's
//! GPUs, the exporter's peak memory stays bounded, tricklers are closed at their
//! deadline, each kind of refusal is counted and logged once, and both real processes
//! are served.

use poolprof_e2e::exporter::Exporter;
use poolprof_e2e::exposition::{parse, ExpositionSample};
use poolprof_e2e::wait::until;
use poolprof_inject::aggregate::{Aggregator, KernelRun};
use poolprof_inject::sample::Sample;
use poolprof_inject::sender::{Sender, Source};
use poolprof_inject::wire::{
    encode_delta, encode_hello, Delta, DeviceDelta, DeviceId, DutyCycle, Geometry, Hello,
    KernelStats, MemcpyBytes, FULL_DUTY_PPM, MAGIC, VERSION,
};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);
/// The simulated GPUs (`--simulate 2`).
const GPUS: [&str; 2] = [
    "GPU-00000000-0000-4000-8000-000000000000",
    "GPU-00000000-0000-4000-8000-000000000001",
];
const GPU0_BYTES: [u8; 16] = [0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0];

const MADE_UP_UUIDS: u32 = 128_000;
const SHORT_CONNECTIONS: usize = 500;
const MAX_PROCESSES: usize = 200;
const TRICKLERS: usize = MAX_PROCESSES + 36;
const WORKLOADS_PER_USER: usize = 16;
const LARGE_FRAME_PEERS: usize = 150;
const BUDGET: usize = 8 << 20;
/// The hello deadline the exporter is started with.
const HELLO_TIMEOUT: Duration = Duration::from_millis(500);

#[test]
fn a_hostile_local_peer_cannot_grow_the_exporter_or_lock_out_real_processes() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("inject.sock");
    let mut exporter = Exporter::start(&[
        "--simulate",
        "2",
        "--collect-interval",
        "200ms",
        "--kernels.socket-path",
        socket.to_str().unwrap(),
        "--kernels.hello-timeout",
        "500ms",
        "--kernels.frame-timeout",
        "1s",
        "--kernels.max-processes",
        &MAX_PROCESSES.to_string(),
        // Every peer here is this test's user; the per-user share is a unit test's.
        "--kernels.max-processes-per-user",
        &MAX_PROCESSES.to_string(),
        "--kernels.max-workloads-per-user",
        &WORKLOADS_PER_USER.to_string(),
        "--kernels.max-buffered-bytes",
        &BUDGET.to_string(),
    ]);
    let pid = exporter.server().child().pid();
    until("the kernel socket", WAIT, || {
        UnixStream::connect(&socket)
            .map(drop)
            .map_err(|e| e.to_string())
    });
    // A real process reporting all along.
    let early = RealProcess::start(&socket, "good/early", "early_gemm");
    until("the early process's kernels", WAIT, || {
        launches(&exporter, "good/early").ok_or_else(|| "not yet".to_string())
    });
    let rss_before = proc_status_kib(pid, "VmRSS");

    made_up_uuids(&socket);
    short_connections(&socket);
    let closed_after = trickle_hellos(&socket);
    // The slots the tricklers held are free again (each closes a moment after its
    // peer saw the close), so every large-frame peer gets one.
    only_the_early_process_left(&exporter);
    large_frames(&socket);
    only_the_early_process_left(&exporter);
    let late = RealProcess::start(&socket, "good/late", "late_gemm");
    until("the late process's kernels", WAIT, || {
        launches(&exporter, "good/late").ok_or_else(|| "not yet".to_string())
    });
    let before = launches(&exporter, "good/early").unwrap();
    until(
        "the early process still reporting",
        WAIT,
        || match launches(&exporter, "good/early") {
            Some(now) if now > before => Ok(()),
            got => Err(format!("{got:?}")),
        },
    );

    // Tricklers were cut off at the hello deadline (or refused at once when every slot
    // was taken), not when they ran out of bytes 100 ms apart.
    let slowest = closed_after.iter().max().unwrap();
    assert!(
        *slowest < HELLO_TIMEOUT + Duration::from_secs(4),
        "a trickler was served for {slowest:?}"
    );

    let body = exporter.metrics_text();
    let samples = parse(&body).unwrap();
    let fed_by_socket: Vec<&ExpositionSample> = samples
        .iter()
        .filter(|s| {
            ["poolprof_kernel_", "poolprof_memcpy_", "poolprof_memset_"]
                .iter()
                .any(|p| s.name.starts_with(p))
        })
        .collect();
    let uuids: BTreeSet<&str> = fed_by_socket.iter().map(|s| s.label("uuid")).collect();
    assert!(
        uuids.iter().all(|u| GPUS.contains(u)),
        "series for GPUs the exporter does not have: {:?}",
        uuids.iter().take(5).collect::<Vec<_>>()
    );
    let workloads: BTreeSet<&str> = fed_by_socket.iter().map(|s| s.label("workload")).collect();
    assert!(
        workloads.len() <= WORKLOADS_PER_USER,
        "{} workloads",
        workloads.len()
    );
    assert!(workloads.contains("good/early") && workloads.contains("good/late"));
    // 16 workloads × 2 GPUs × (4 memcpy + 1 memset + a few kernels): a few hundred.
    assert!(
        fed_by_socket.len() < 1_000,
        "{} series fed by the socket",
        fed_by_socket.len()
    );
    assert!(
        body.len() < 512 * 1024,
        "exposition of {} bytes",
        body.len()
    );

    let counted = |name: &str, reason: &str| value(&samples, name, &[("reason", reason)]);
    assert_eq!(
        counted("poolprof_inject_discarded_reports_total", "unknown_gpu"),
        Some(f64::from(MADE_UP_UUIDS))
    );
    let rejected = |reason| counted("poolprof_inject_rejected_connections_total", reason);
    assert!(
        rejected("timeout").unwrap_or(0.0) >= 1.0,
        "tricklers timed out"
    );
    assert!(
        rejected("too_many_processes").unwrap_or(0.0) >= 1.0,
        "tricklers beyond the slots refused"
    );
    let large_closed = rejected("frame_timeout").unwrap_or(0.0) + rejected("busy").unwrap_or(0.0);
    assert_eq!(
        large_closed,
        LARGE_FRAME_PEERS as f64,
        "large frames closed for slowness or lack of budget; refusals: {:?}",
        samples
            .iter()
            .filter(|s| s.name == "poolprof_inject_rejected_connections_total")
            .map(|s| (s.label("reason"), s.value))
            .collect::<Vec<_>>()
    );
    let evicted = value(&samples, "poolprof_inject_evicted_workloads_total", &[]).unwrap();
    assert!(
        evicted >= (SHORT_CONNECTIONS - WORKLOADS_PER_USER) as f64,
        "{evicted} evicted"
    );

    // Peak memory: the large frames could hold 150 MiB; the budget allows 8 MiB, small
    // frames 64 KiB per slot. The rest is thread stacks and allocator slack.
    let peak = proc_status_kib(pid, "VmHWM");
    let grown_mib = peak.saturating_sub(rss_before) / 1024;
    assert!(
        grown_mib < 64,
        "peak RSS {} MiB, {grown_mib} MiB over the {} MiB before the attack",
        peak / 1024,
        rss_before / 1024
    );

    // One info line per kind of refusal, though each happened many times within a
    // second (the interval is a minute; lines reporting what a past minute suppressed
    // say "more refusals" and are left out).
    let log = std::fs::read_to_string(exporter.server().log_path()).unwrap();
    for reason in ["timeout", "too_many_processes", "unknown_gpu"] {
        let lines = log
            .lines()
            .filter(|l| {
                l.contains("level=info")
                    && l.contains(&format!("reason={reason}"))
                    && !l.contains("more refusals")
            })
            .count();
        assert_eq!(lines, 1, "log lines for {reason}:\n{log}");
    }

    drop(early);
    drop(late);
    eprintln!(
        "inject_hostile: {} socket-fed series, exposition {} KiB, RSS {} MiB before, peak {} MiB, slowest trickler closed after {slowest:?}",
        fed_by_socket.len(),
        body.len() / 1024,
        rss_before / 1024,
        peak / 1024
    );
}

/// One connection reporting memory copies on 128 000 made-up GPUs.
fn made_up_uuids(socket: &Path) {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(&hello("hostile/uuids")).unwrap();
    let devices: Vec<DeviceDelta> = (0..MADE_UP_UUIDS)
        .map(|i| {
            let mut uuid = [0xee; 16];
            uuid[..4].copy_from_slice(&i.to_le_bytes());
            device(uuid)
        })
        .collect();
    let frames = encode_delta(&Delta {
        seq: 0,
        dropped_records: 0,
        kernel_duty_ppm: FULL_DUTY_PPM,
        devices,
    });
    for frame in frames {
        s.write_all(&frame).unwrap();
    }
    // The exporter has read everything once it answers the close with its own.
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let _ = s.read(&mut [0u8; 1]);
}

/// Hundreds of connections, each a new workload reporting on a real GPU, then gone.
fn short_connections(socket: &Path) {
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let socket = socket.to_path_buf();
            std::thread::spawn(move || {
                for i in (t..SHORT_CONNECTIONS).step_by(4) {
                    let mut s = UnixStream::connect(&socket).unwrap();
                    s.write_all(&hello(&format!("hostile/w{i}"))).unwrap();
                    for frame in encode_delta(&one_device_delta()) {
                        s.write_all(&frame).unwrap();
                    }
                    s.shutdown(std::net::Shutdown::Write).unwrap();
                    s.set_read_timeout(Some(WAIT)).unwrap();
                    let _ = s.read(&mut [0u8; 1]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// More peers than process slots, each sending its hello one byte every 100 ms (each
/// byte well within the hello timeout); returns how long each stayed connected.
fn trickle_hellos(socket: &Path) -> Vec<Duration> {
    let frame = hello("hostile/slow");
    let threads: Vec<JoinHandle<Duration>> = (0..TRICKLERS)
        .map(|_| {
            let socket = socket.to_path_buf();
            let frame = frame.clone();
            std::thread::spawn(move || {
                let started = Instant::now();
                let mut s = UnixStream::connect(&socket).unwrap();
                for byte in frame {
                    if s.write_all(&[byte]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                s.set_read_timeout(Some(WAIT)).unwrap();
                let _ = s.read(&mut [0u8; 1]);
                started.elapsed()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// Peers that say hello, announce a 1 MiB report and send all of it but one byte.
fn large_frames(socket: &Path) {
    let threads: Vec<_> = (0..LARGE_FRAME_PEERS)
        .map(|i| {
            let socket = socket.to_path_buf();
            std::thread::spawn(move || {
                let mut s = UnixStream::connect(&socket).unwrap();
                s.set_write_timeout(Some(WAIT)).unwrap();
                s.write_all(&hello(&format!("hostile/big{}", i % 4)))
                    .unwrap();
                let len = 1usize << 20;
                let mut header = MAGIC.to_vec();
                header.extend_from_slice(&VERSION.to_le_bytes());
                header.extend_from_slice(&[2, 0]);
                header.extend_from_slice(&(len as u32).to_le_bytes());
                // Errors once the exporter closes the connection are the point.
                let _ = s.write_all(&header);
                let _ = s.write_all(&vec![0u8; len - 1]);
                s.set_read_timeout(Some(WAIT)).unwrap();
                let _ = s.read(&mut [0u8; 1]);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn hello(workload: &str) -> Vec<u8> {
    encode_hello(&Hello {
        pid: std::process::id(),
        process_name: "hostile".into(),
        workload: Some(workload.into()),
        library_version: "hostile".into(),
        interval_ms: 1000,
        duty: DutyCycle::Always,
    })
}

fn device(uuid: [u8; 16]) -> DeviceDelta {
    DeviceDelta {
        device: DeviceId {
            ordinal: 0,
            uuid: Some(uuid),
        },
        kernels: Vec::new(),
        folded: KernelStats::default(),
        memcpy: MemcpyBytes {
            htod: 4096,
            ..MemcpyBytes::default()
        },
        memset_bytes: 64,
    }
}

fn one_device_delta() -> Delta {
    Delta {
        seq: 0,
        dropped_records: 0,
        kernel_duty_ppm: FULL_DUTY_PPM,
        devices: vec![device(GPU0_BYTES)],
    }
}

/// A process injected with the library: its own sender, fed one kernel per interval.
struct RealProcess {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RealProcess {
    fn start(socket: &Path, workload: &str, kernel: &'static str) -> RealProcess {
        let cupti = FakeCupti(Arc::new(Mutex::new(Aggregator::new(8192))));
        let hello = Hello {
            pid: std::process::id(),
            process_name: "real".into(),
            workload: Some(workload.into()),
            library_version: "e2e".into(),
            interval_ms: 100,
            duty: DutyCycle::Always,
        };
        let mut sender = Sender::new(PathBuf::from(socket), hello, cupti.clone(), 8192);
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                cupti.kernel(kernel);
                sender.tick(Instant::now());
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        RealProcess {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for RealProcess {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A CUPTI stand-in on simulated GPU 0.
#[derive(Clone)]
struct FakeCupti(Arc<Mutex<Aggregator>>);

impl FakeCupti {
    fn kernel(&self, name: &str) {
        self.0.lock().unwrap().record_kernel(&KernelRun {
            device: 0,
            name,
            start_ns: 1_000,
            end_ns: 2_000,
            geometry: Geometry::default(),
        });
    }
}

impl Source for FakeCupti {
    fn flush(&self, _forced: bool) {}
    fn take(&self) -> Sample {
        Sample::new(self.0.lock().unwrap().take(), FULL_DUTY_PPM)
    }
    fn uuid(&self, _ordinal: u32) -> Option<[u8; 16]> {
        Some(GPU0_BYTES)
    }
}

/// Waits until every hostile connection is gone and the early process still connected.
fn only_the_early_process_left(exporter: &Exporter) {
    until("hostile peers gone", WAIT, || {
        let samples = samples(exporter);
        match (
            value(&samples, "poolprof_inject_connected_processes", &[]),
            value(&samples, "poolprof_inject_pending_connections", &[]),
        ) {
            (Some(1.0), Some(0.0)) => Ok(()),
            got => Err(format!("connected, pending: {got:?}")),
        }
    });
}

fn samples(exporter: &Exporter) -> Vec<ExpositionSample> {
    parse(&exporter.metrics_text()).unwrap()
}

fn value(samples: &[ExpositionSample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| s.name == name && labels.iter().all(|(k, v)| s.label(k) == *v))
        .map(|s| s.value)
}

/// Launches of `workload` on simulated GPU 0, once published.
fn launches(exporter: &Exporter, workload: &str) -> Option<f64> {
    value(
        &samples(exporter),
        "poolprof_kernel_launches_total",
        &[("workload", workload), ("uuid", GPUS[0])],
    )
}

/// A `kB` field of /proc/PID/status.
fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}
