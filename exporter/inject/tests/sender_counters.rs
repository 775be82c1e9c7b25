//! Kernel counters through the sender, against real Unix sockets: they follow a
//! delta once, with the device's UUID, and a peer that does not know them (an older
//! exporter closes the connection at the unknown message) costs no delta.

use poolprof_inject::aggregate::{Aggregator, KernelRun};
use poolprof_inject::sample::Sample;
use poolprof_inject::sender::{Sender, Source};
use poolprof_inject::wire::{
    read_message, DeviceId, DutyCycle, Flops, Geometry, Hello, KernelCounters, Message,
};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Default)]
struct Fake {
    agg: Arc<Mutex<Option<Aggregator>>>,
    counters: Arc<Mutex<Vec<KernelCounters>>>,
}

impl Fake {
    fn launch(&self, name: &str) {
        let mut agg = self.agg.lock().unwrap();
        agg.get_or_insert_with(|| Aggregator::new(64))
            .record_kernel(&KernelRun {
                device: 0,
                name,
                start_ns: 0,
                end_ns: 10,
                geometry: Geometry::default(),
            });
    }
    fn profiled(&self, name: &str) {
        self.counters.lock().unwrap().push(KernelCounters {
            device: DeviceId {
                ordinal: 0,
                uuid: None,
            },
            name: name.into(),
            flops: Flops {
                tensor: Some(2 * 4096 * 4096 * 4096),
                ..Flops::default()
            },
            dram_bytes: Some((3 << 20, 1 << 20)),
            duration_ns: Some(1_000_000),
        });
    }
}

impl Source for Fake {
    fn flush(&self, _: bool) {}
    fn take(&self) -> Sample {
        let taken = self.agg.lock().unwrap().take();
        Sample::new(taken.unwrap_or_else(|| Aggregator::new(64)), 1_000_000)
    }
    fn uuid(&self, _: u32) -> Option<[u8; 16]> {
        Some([7; 16])
    }
    fn counters(&self) -> Vec<KernelCounters> {
        std::mem::take(&mut self.counters.lock().unwrap())
    }
}

fn hello() -> Hello {
    Hello {
        pid: std::process::id(),
        process_name: "test".into(),
        workload: None,
        library_version: "test".into(),
        interval_ms: 100,
        duty: DutyCycle::Always,
    }
}

fn accept(listener: &UnixListener) -> UnixStream {
    let (stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

fn launches(m: &Message) -> u64 {
    match m {
        Message::Delta(d) => d
            .devices
            .iter()
            .flat_map(|d| d.kernels.iter().map(|k| k.stats.launches))
            .sum(),
        _ => 0,
    }
}

#[test]
fn counters_follow_the_delta_once_with_the_device_uuid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inject.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let fake = Fake::default();
    let mut sender = Sender::new(path, hello(), fake.clone(), 64);
    fake.launch("gemm");
    fake.profiled("gemm");
    let now = Instant::now();
    sender.tick(now);
    let mut stream = accept(&listener);
    assert!(matches!(read_message(&mut stream), Ok(Message::Hello(_))));
    assert_eq!(launches(&read_message(&mut stream).unwrap()), 1);
    let Message::Counters(c) = read_message(&mut stream).unwrap() else {
        panic!("counters after the delta");
    };
    assert_eq!(c.kernels.len(), 1);
    assert_eq!(c.kernels[0].device.uuid, Some([7; 16]));
    assert_eq!(c.kernels[0].flops.tensor, Some(2 * 4096 * 4096 * 4096));
    sender.tick(now + Duration::from_millis(100));
    let next = read_message(&mut stream).unwrap();
    assert!(
        matches!(next, Message::Delta(_)),
        "a heartbeat, no counters again"
    );
    assert_eq!(sender.stats().counters_sent, 1);
}

#[test]
fn a_peer_that_closes_at_counters_loses_no_delta_and_gets_them_only_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inject.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let fake = Fake::default();
    let mut sender = Sender::new(path, hello(), fake.clone(), 64);
    let mut now = Instant::now();
    let mut received = 0;
    let mut counters_seen = 0;
    for round in 0..3 {
        for _ in 0..10 {
            fake.launch("add");
        }
        if round == 0 {
            fake.profiled("add");
        }
        sender.tick(now);
        let mut stream = accept(&listener);
        assert!(matches!(read_message(&mut stream), Ok(Message::Hello(_))));
        // Like an exporter of the previous build: deltas are read, an unknown
        // message closes the connection.
        loop {
            let m = read_message(&mut stream).unwrap();
            received += launches(&m);
            if matches!(m, Message::Counters(_)) {
                counters_seen += 1;
                break;
            }
            if round > 0 && received == 10 * (round + 1) {
                break;
            }
        }
        drop(stream);
        now += Duration::from_secs(1);
        sender.tick(now);
        now += Duration::from_secs(1);
    }
    assert_eq!(
        received,
        30,
        "every launch arrived once ({:?})",
        sender.stats()
    );
    assert_eq!(
        counters_seen, 1,
        "counters are not sent again after the break"
    );
}
