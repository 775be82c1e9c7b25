//! The sender against real Unix sockets: reconnects, re-sends, never blocks.

use poolprof_inject::aggregate::{Aggregator, KernelRun};
use poolprof_inject::sample::Sample;
use poolprof_inject::sender::{spawn, Sender, Source};
use poolprof_inject::wire::{read_message, Delta, DutyCycle, Geometry, Hello, Message};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone)]
struct Fake {
    agg: Arc<Mutex<Aggregator>>,
    forced_flushes: Arc<AtomicUsize>,
}

impl Fake {
    fn new() -> Self {
        Self {
            agg: Arc::new(Mutex::new(Aggregator::new(4096))),
            forced_flushes: Arc::new(AtomicUsize::new(0)),
        }
    }
    fn launch(&self, name: &str, ns: u64) {
        self.agg.lock().unwrap().record_kernel(&KernelRun {
            device: 0,
            name,
            start_ns: 0,
            end_ns: ns,
            geometry: Geometry::default(),
        });
    }
}

impl Source for Fake {
    fn flush(&self, forced: bool) {
        if forced {
            self.forced_flushes.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn take(&self) -> Sample {
        Sample::new(self.agg.lock().unwrap().take(), 1_000_000)
    }
    fn uuid(&self, _: u32) -> Option<[u8; 16]> {
        Some([1; 16])
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

fn socket(dir: &Path) -> PathBuf {
    dir.join("inject.sock")
}

fn accept(listener: &UnixListener) -> UnixStream {
    listener.set_nonblocking(false).unwrap();
    let (stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

fn launches(delta: &Delta) -> u64 {
    delta
        .devices
        .iter()
        .flat_map(|d| d.kernels.iter().map(|k| k.stats.launches))
        .sum()
}

/// Reads deltas until `want` launches arrived.
fn read_launches(stream: &mut UnixStream, want: u64) -> u64 {
    let mut got = 0;
    while got < want {
        match read_message(stream).expect("a frame") {
            Message::Delta(d) => got += launches(&d),
            Message::Hello(_) => panic!("hello after the first frame"),
            Message::Counters(_) => panic!("counters from a source that has none"),
        }
    }
    got
}

#[test]
fn data_recorded_while_the_exporter_is_away_arrives_after_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new();
    let mut sender = Sender::new(socket(dir.path()), hello(), fake.clone(), 4096);
    let t0 = Instant::now();
    fake.launch("k", 10);
    sender.tick(t0);
    assert_eq!(sender.stats().connect_failures, 1);
    assert!(sender.has_unsent());

    let listener = UnixListener::bind(socket(dir.path())).unwrap();
    fake.launch("k", 10);
    sender.tick(t0 + Duration::from_millis(50)); // before the backoff: no attempt
    assert_eq!(sender.stats().connect_failures, 1);
    sender.tick(t0 + Duration::from_millis(150));
    assert_eq!(sender.stats().connects, 1);

    let mut stream = accept(&listener);
    let Message::Hello(h) = read_message(&mut stream).unwrap() else {
        panic!("hello first")
    };
    assert_eq!(h.pid, std::process::id());
    assert_eq!(read_launches(&mut stream, 2), 2);
}

#[test]
fn backoff_doubles_up_to_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut sender = Sender::new(socket(dir.path()), hello(), Fake::new(), 16);
    let t0 = Instant::now();
    // Attempts at 0, 100, 300, 700, 1500 ms (backoff 100, 200, 400, 800).
    for ms in (0..1600).step_by(50) {
        sender.tick(t0 + Duration::from_millis(ms));
    }
    assert_eq!(sender.stats().connect_failures, 5);
}

#[test]
fn a_broken_connection_loses_nothing_and_counts_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let listener = UnixListener::bind(socket(dir.path())).unwrap();
    let fake = Fake::new();
    let mut sender = Sender::new(socket(dir.path()), hello(), fake.clone(), 4096);
    let mut now = Instant::now();
    let mut recorded = 0u64;
    let mut received = 0u64;
    for round in 0..4 {
        for i in 0..50 {
            fake.launch(&format!("k{}", i % 7), 5);
            recorded += 1;
        }
        sender.tick(now);
        let mut stream = accept(&listener);
        assert!(matches!(read_message(&mut stream), Ok(Message::Hello(_))));
        received += read_launches(&mut stream, 50);
        if round % 2 == 0 {
            drop(stream); // exporter restarts
        } else {
            stream.shutdown(std::net::Shutdown::Both).unwrap();
        }
        // Let the sender notice the broken pipe, then reconnect after its backoff.
        now += Duration::from_secs(1);
        sender.tick(now);
        now += Duration::from_secs(1);
    }
    assert_eq!(received, recorded);
    assert!(sender.stats().disconnects >= 3, "{:?}", sender.stats());
}

#[test]
fn a_stuck_exporter_never_blocks_the_sender() {
    let dir = tempfile::tempdir().unwrap();
    let listener = UnixListener::bind(socket(dir.path())).unwrap();
    let fake = Fake::new();
    let mut sender = Sender::new(socket(dir.path()), hello(), fake.clone(), 4096);
    let _peer = {
        sender.tick(Instant::now());
        accept(&listener) // accepted, never read
    };
    let start = Instant::now();
    for round in 0..20 {
        for i in 0..4000 {
            fake.launch(
                &format!("kernel_with_a_long_name_{round}_{i}_{}", "x".repeat(100)),
                1,
            );
        }
        sender.tick(Instant::now());
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "ticks took {:?}",
        start.elapsed()
    );
    assert!(sender.has_unsent());
}

#[test]
fn the_thread_flushes_everything_at_finish() {
    let dir = tempfile::tempdir().unwrap();
    let listener = UnixListener::bind(socket(dir.path())).unwrap();
    let fake = Fake::new();
    let sender = Sender::new(socket(dir.path()), hello(), fake.clone(), 4096);
    let handle = spawn(sender, Duration::from_secs(3600)).unwrap();
    for _ in 0..123 {
        fake.launch("last_words", 1);
    }
    let reader = std::thread::spawn(move || {
        let mut stream = accept(&listener);
        assert!(matches!(read_message(&mut stream), Ok(Message::Hello(_))));
        read_launches(&mut stream, 123)
    });
    let stats = handle
        .finish(Duration::from_secs(2))
        .expect("finished in time");
    assert_eq!(reader.join().unwrap(), 123);
    assert_eq!(fake.forced_flushes.load(Ordering::SeqCst), 1);
    assert_eq!(stats.connects, 1);
}

#[test]
fn finish_without_an_exporter_returns_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let fake = Fake::new();
    fake.launch("k", 1);
    let handle = spawn(
        Sender::new(socket(dir.path()), hello(), fake, 16),
        Duration::from_secs(3600),
    )
    .unwrap();
    let start = Instant::now();
    let stats = handle.finish(Duration::from_millis(500)).expect("finished");
    assert!(start.elapsed() < Duration::from_millis(700));
    assert_eq!(stats.connects, 0);
}

#[test]
fn a_closed_exporter_does_not_raise_sigpipe() {
    // With SIGPIPE at its default action (as in a C host program), a plain write to a
    // closed socket would kill this test process.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let dir = tempfile::tempdir().unwrap();
    let listener = UnixListener::bind(socket(dir.path())).unwrap();
    let fake = Fake::new();
    let mut sender = Sender::new(socket(dir.path()), hello(), fake.clone(), 64);
    let t0 = Instant::now();
    sender.tick(t0);
    drop(accept(&listener));
    for i in 1..5 {
        fake.launch("k", 1);
        sender.tick(t0 + Duration::from_secs(i));
    }
    unsafe { libc::signal(libc::SIGPIPE, previous) };
    assert!(sender.stats().disconnects >= 1);
}
