//! The background thread that ships aggregates to the exporter.
//!
//! Only this thread touches the socket; the application's threads never wait on it.
//! Each interval it asks the [`Source`] for what is ready (with the share of the
//! activity it samples) and adds it to what is still unsent, then, when the previous
//! frames are out, encodes all of it as the next delta. Writes are non-blocking: a
//! slow exporter makes deltas cover longer spans, never stalls the process. When the exporter is away the data keeps
//! accumulating (bounded by the aggregator's limits) and the thread reconnects with
//! exponential backoff, sending a fresh [`Hello`] first. Frames that were on a
//! connection that broke are re-sent, so a counter is never lost nor counted twice
//! unless the exporter itself dies after reading them.

use crate::aggregate::Aggregator;
use crate::sample::Sample;
use crate::wire::{encode_counters, encode_delta, encode_hello, Hello, KernelCounters};
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest wait between two connection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection whose frames do not drain for this long is dropped and re-opened.
pub const STALL_LIMIT: Duration = Duration::from_secs(30);

/// Where activity comes from: CUPTI in the library, a fake in tests.
pub trait Source: Send + 'static {
    /// Asks for buffered records to be delivered now (`forced` also delivers buffers
    /// with records still in flight; used at exit).
    fn flush(&self, forced: bool);
    /// Everything ready to send since the previous call, with the share of the
    /// activity it samples (a sampled window is ready once its period is measured).
    fn take(&self) -> Sample;
    /// The UUID of a CUDA device ordinal, if known.
    fn uuid(&self, ordinal: u32) -> Option<[u8; 16]>;
    /// Kernel counters profiled since the previous call (`POOLPROF_KERNEL_COUNTERS`);
    /// none by default.
    fn counters(&self) -> Vec<KernelCounters> {
        Vec::new()
    }
}

/// Counters of the sender, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Successful connections.
    pub connects: u64,
    /// Failed connection attempts.
    pub connect_failures: u64,
    /// Connections dropped after an error or a stall.
    pub disconnects: u64,
    /// Delta frames fully written.
    pub frames_sent: u64,
    /// Kernel counters handed to a connection (sent once: not again after a break).
    pub counters_sent: u64,
}

struct Connection {
    stream: UnixStream,
    outbox: Vec<u8>,
    written: usize,
    in_flight: Option<Sample>,
    last_progress: Instant,
}

/// The sending state machine; [`spawn`] runs it on a thread.
pub struct Sender<S: Source> {
    socket: PathBuf,
    hello: Hello,
    source: S,
    unsent: Sample,
    /// Kernel counters waiting for a connection (bounded by the library's cap).
    counters: Vec<KernelCounters>,
    conn: Option<Connection>,
    seq: u64,
    backoff: Duration,
    min_backoff: Duration,
    next_attempt: Instant,
    stats: SenderStats,
}

impl<S: Source> Sender<S> {
    /// A sender for `socket` that introduces itself with `hello`.
    pub fn new(socket: PathBuf, hello: Hello, source: S, max_kernels: usize) -> Self {
        let min_backoff = Duration::from_millis(u64::from(hello.interval_ms));
        Self {
            socket,
            hello,
            source,
            unsent: Sample::new(Aggregator::new(max_kernels), crate::wire::FULL_DUTY_PPM),
            counters: Vec::new(),
            conn: None,
            seq: 0,
            backoff: min_backoff,
            min_backoff,
            next_attempt: Instant::now(),
            stats: SenderStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// One interval: collect, connect if due, and write without blocking.
    pub fn tick(&mut self, now: Instant) {
        self.source.flush(false);
        self.collect();
        if self.conn.is_none() && now >= self.next_attempt {
            self.connect(now);
        }
        self.pump(now);
    }

    /// At exit: collect everything, connect if needed and write, blocking at most
    /// until `deadline`.
    pub fn finish(&mut self, deadline: Instant) {
        self.source.flush(true);
        self.collect();
        if self.conn.is_none() {
            self.connect(Instant::now());
        }
        while let Some(conn) = &self.conn {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let left = deadline - now;
            if conn.stream.set_nonblocking(false).is_err()
                || conn.stream.set_write_timeout(Some(left)).is_err()
            {
                break;
            }
            self.pump(now);
            let idle = self
                .conn
                .as_ref()
                .is_some_and(|c| c.written == c.outbox.len());
            if idle && self.unsent.is_empty() && self.counters.is_empty() {
                break;
            }
        }
    }

    fn collect(&mut self) {
        let fresh = self.source.take();
        if !fresh.is_empty() {
            self.unsent.absorb(fresh);
        }
        self.counters.extend(self.source.counters());
    }

    fn connect(&mut self, now: Instant) {
        let stream = UnixStream::connect(&self.socket).and_then(|s| {
            s.set_nonblocking(true)?;
            Ok(s)
        });
        match stream {
            Ok(stream) => {
                self.stats.connects += 1;
                self.backoff = self.min_backoff;
                self.conn = Some(Connection {
                    stream,
                    outbox: encode_hello(&self.hello),
                    written: 0,
                    in_flight: None,
                    last_progress: now,
                });
            }
            Err(_) => {
                self.stats.connect_failures += 1;
                self.next_attempt = now + self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
            }
        }
    }

    /// Writes what is pending; when the outbox is empty, encodes the next delta (at
    /// most one per call, so an idle process sends one small heartbeat per interval).
    fn pump(&mut self, now: Instant) {
        let mut encoded = false;
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            if conn.written == conn.outbox.len() {
                if encoded {
                    return;
                }
                let batch = self.unsent.take();
                let delta = batch
                    .records
                    .to_delta(self.seq, batch.share_ppm(), |o| self.source.uuid(o));
                self.seq += 1;
                conn.outbox = encode_delta(&delta).concat();
                // Counters ride after the delta, once: an exporter of an older build
                // closes the connection at the unknown message, and the deltas go on
                // over the next one without them.
                for k in &mut self.counters {
                    k.device.uuid = self.source.uuid(k.device.ordinal);
                }
                self.stats.counters_sent += self.counters.len() as u64;
                conn.outbox
                    .extend(encode_counters(&std::mem::take(&mut self.counters)).concat());
                conn.written = 0;
                conn.in_flight = Some(batch);
                encoded = true;
            }
            match send(&conn.stream, &conn.outbox[conn.written..]) {
                Ok(0) => return self.disconnect(now),
                Ok(n) => {
                    conn.written += n;
                    conn.last_progress = now;
                    if conn.written == conn.outbox.len() && conn.in_flight.take().is_some() {
                        self.stats.frames_sent += 1;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if now.duration_since(conn.last_progress) > STALL_LIMIT {
                        self.disconnect(now);
                    }
                    return;
                }
                Err(_) => return self.disconnect(now),
            }
        }
    }

    fn disconnect(&mut self, now: Instant) {
        if let Some(conn) = self.conn.take() {
            self.stats.disconnects += 1;
            if let Some(batch) = conn.in_flight {
                // Not (wholly) written: send it again on the next connection.
                let newer = self.unsent.take();
                self.unsent = batch;
                self.unsent.absorb(newer);
            }
        }
        self.next_attempt = now + self.backoff;
    }

    /// Whether data is waiting to be sent.
    pub fn has_unsent(&self) -> bool {
        !self.unsent.is_empty() || self.conn.as_ref().is_some_and(|c| c.in_flight.is_some())
    }
}

/// A running sender thread.
pub struct SenderHandle {
    stop: mpsc::Sender<Duration>,
    done: mpsc::Receiver<SenderStats>,
    thread: Option<JoinHandle<()>>,
}

impl SenderHandle {
    /// Stops the thread after a final flush that may take up to `timeout`; returns its
    /// counters, or `None` if it did not finish in time.
    pub fn finish(mut self, timeout: Duration) -> Option<SenderStats> {
        self.stop.send(timeout).ok()?;
        let stats = self
            .done
            .recv_timeout(timeout + Duration::from_millis(100))
            .ok();
        if stats.is_some() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
        stats
    }
}

/// Runs `sender` on a thread named `poolprof-inject`, one tick per `interval`.
pub fn spawn<S: Source>(
    mut sender: Sender<S>,
    interval: Duration,
) -> std::io::Result<SenderHandle> {
    let (stop_tx, stop_rx) = mpsc::channel::<Duration>();
    let (done_tx, done_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("poolprof-inject".into())
        .spawn(move || {
            let mut next = Instant::now() + interval;
            loop {
                let wait = next.saturating_duration_since(Instant::now());
                match stop_rx.recv_timeout(wait) {
                    Ok(timeout) => {
                        sender.finish(Instant::now() + timeout);
                        let _ = done_tx.send(sender.stats());
                        return;
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        let now = Instant::now();
                        sender.tick(now);
                        next = (next + interval).max(now);
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        })?;
    Ok(SenderHandle {
        stop: stop_tx,
        done: done_rx,
        thread: Some(thread),
    })
}

/// `send(2)` with `MSG_NOSIGNAL`: a closed exporter must not raise SIGPIPE, whose
/// default action would kill a host program that does not ignore it.
fn send(stream: &UnixStream, buf: &[u8]) -> std::io::Result<usize> {
    // SAFETY: the pointer and length describe a live slice; the fd is owned by `stream`.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
