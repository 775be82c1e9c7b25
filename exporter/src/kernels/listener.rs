//! The Unix socket the injection library reports to.
//!
//! One thread accepts, one thread serves each connection (at most
//! `max_processes`, counting those that have not said hello yet, and at most
//! `max_processes_per_user` of one uid). A connection is tied
//! to its process by the socket's peer credentials (`SO_PEERCRED`, in the exporter's
//! pid namespace), never by what the peer claims. Its first frame must be a small
//! hello, whole within `hello_timeout` of the accept; then deltas follow, each whole
//! within `frame_timeout` of its first byte (see [`super::frame`]: trickling bytes
//! does not extend a deadline). Any malformed frame, a second hello, silence for
//! `idle_timeout`, a slow frame, or a connection over a limit closes the connection
//! and counts it in `poolprof_inject_rejected_connections_total{reason}`.
//!
//! The socket's directory is created (mode 0755) when missing; the socket itself gets
//! `socket_mode` (default 0666, so processes of any user can report). A stale socket
//! file is replaced; a live one (another exporter answering) is an error.

use super::frame::{read_frame, ByteBudget, Deadlines, FrameError};
use super::store::{ConnId, KernelLimits, KernelStore};
use crate::workload::{WorkloadResolver, MAX_WORKLOAD_LEN};
use poolprof_inject::wire::{Hello, Message, MAX_LABEL_BYTES, MAX_PAYLOAD_BYTES};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Largest hello payload the library can send: pid, three strings at their limit, the
/// workload's presence flag, interval and duty cycle. Until a peer has said hello it
/// may not make the exporter buffer more.
const MAX_HELLO_PAYLOAD: usize = 4 + 3 * (2 + MAX_LABEL_BYTES) + 1 + 3 * 4;

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenerError {
    /// The path is unusable as a socket path.
    #[error("--kernels.socket-path {path}: {reason}")]
    BadPath {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// Another process answers on the socket.
    #[error("--kernels.socket-path {0}: another exporter is listening there; stop it or choose another path")]
    InUse(PathBuf),
    /// A filesystem or socket call failed.
    #[error("--kernels.socket-path {path}: {action}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// A running listener; dropping it stops accepting and removes the socket file.
pub struct KernelListener {
    path: PathBuf,
    store: Arc<KernelStore>,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<HashMap<u64, UnixStream>>>,
    /// The listening socket, shut down on drop so a blocked accept returns.
    waker: UnixListener,
    thread: Option<JoinHandle<()>>,
}

impl KernelListener {
    /// Listens on `socket_path`, resolving workloads from `/proc`.
    pub fn spawn(
        socket_path: &Path,
        limits: KernelLimits,
    ) -> Result<KernelListener, ListenerError> {
        Self::spawn_with(socket_path, limits, WorkloadResolver::default())
    }

    /// Listens on `socket_path` with a given workload resolver (tests use a fake procfs).
    pub fn spawn_with(
        socket_path: &Path,
        limits: KernelLimits,
        resolver: WorkloadResolver,
    ) -> Result<KernelListener, ListenerError> {
        let listener = bind(socket_path, limits.socket_mode)?;
        let io = |action| {
            move |source| ListenerError::Io {
                path: socket_path.to_path_buf(),
                action,
                source,
            }
        };
        // The accept thread blocks in accept(2); `Drop` shuts this clone down to wake
        // it. Polling instead cost 0.15% of a core on an idle H100 node.
        let waker = listener.try_clone().map_err(io("duplicating the socket"))?;
        let store = Arc::new(KernelStore::new(limits.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let streams = Arc::new(Mutex::new(HashMap::new()));
        let acceptor = Acceptor {
            listener,
            store: Arc::clone(&store),
            stop: Arc::clone(&stop),
            streams: Arc::clone(&streams),
            resolver: Arc::new(Mutex::new(resolver)),
            live: Arc::new(AtomicUsize::new(0)),
            budget: Arc::new(ByteBudget::new(limits.max_buffered_bytes)),
            users: Arc::new(UserSlots::default()),
            next: 0,
        };
        let thread = std::thread::Builder::new()
            .name("kernels-accept".into())
            .spawn(move || acceptor.run())
            .map_err(io("starting the accept thread"))?;
        Ok(KernelListener {
            path: socket_path.to_path_buf(),
            store,
            stop,
            streams,
            waker,
            thread: Some(thread),
        })
    }

    /// The store the connections report into (give it to `KernelCollector::new`).
    pub fn store(&self) -> Arc<KernelStore> {
        Arc::clone(&self.store)
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for KernelListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Linux makes a blocked accept on a shut-down Unix listener return EINVAL.
        let _ =
            nix::sys::socket::shutdown(self.waker.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        for stream in lock(&self.streams).values() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn bind(path: &Path, mode: u32) -> Result<UnixListener, ListenerError> {
    let bad = |reason| ListenerError::BadPath {
        path: path.to_path_buf(),
        reason,
    };
    let io = |action| {
        move |source| ListenerError::Io {
            path: path.to_path_buf(),
            action,
            source,
        }
    };
    if path.as_os_str().len() > 107 {
        return Err(bad("longer than the 107 bytes a Unix socket path may have"));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(io("creating the socket directory"))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(ListenerError::InUse(path.to_path_buf()));
            }
            std::fs::remove_file(path).map_err(io("removing the stale socket"))?;
        }
        Ok(_) => {
            return Err(bad(
                "exists and is not a socket; remove it or choose another path",
            ))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("inspecting the path")(e)),
    }
    let listener = UnixListener::bind(path).map_err(io("binding"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io("setting the socket's permissions"))?;
    Ok(listener)
}

struct Acceptor {
    listener: UnixListener,
    store: Arc<KernelStore>,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<HashMap<u64, UnixStream>>>,
    resolver: Arc<Mutex<WorkloadResolver>>,
    live: Arc<AtomicUsize>,
    budget: Arc<ByteBudget>,
    users: Arc<UserSlots>,
    next: u64,
}

/// Connections held per user (uid).
#[derive(Debug, Default)]
struct UserSlots(Mutex<HashMap<u32, usize>>);

impl UserSlots {
    /// Takes a slot for `uid` unless it holds `max` already.
    fn take(&self, uid: u32, max: usize) -> bool {
        let mut held = lock(&self.0);
        let n = held.entry(uid).or_insert(0);
        if *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    /// Gives a slot of `uid` back.
    fn give(&self, uid: u32) {
        let mut held = lock(&self.0);
        if let Some(n) = held.get_mut(&uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&uid);
            }
        }
    }
}

impl Acceptor {
    fn run(mut self) {
        while !self.stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, _)) => self.admit(stream, Instant::now()),
                Err(_) if self.stop.load(Ordering::Relaxed) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!(error = %e, "kernel listener: accept failed");
                    std::thread::sleep(ACCEPT_RETRY);
                }
            }
        }
    }

    fn admit(&mut self, stream: UnixStream, accepted: Instant) {
        let limits = self.store.limits().clone();
        if self.live.load(Ordering::Acquire) >= limits.max_processes {
            self.store.reject("too_many_processes");
            return;
        }
        let Some((pid, uid)) = peer_credentials(&stream) else {
            self.store.reject("no_credentials");
            return;
        };
        // One user cannot take every slot: the others' processes still get in.
        if !self.users.take(uid, limits.max_processes_per_user) {
            self.store.reject("too_many_user_processes");
            return;
        }
        let id = self.next;
        self.next += 1;
        if stream.set_nonblocking(false).is_err() {
            self.users.give(uid);
            self.store.reject("io_error");
            return;
        }
        if let Ok(clone) = stream.try_clone() {
            lock(&self.streams).insert(id, clone);
        }
        self.live.fetch_add(1, Ordering::AcqRel);
        let conn = Connection {
            stream,
            store: Arc::clone(&self.store),
            resolver: Arc::clone(&self.resolver),
            budget: Arc::clone(&self.budget),
            limits,
            accepted,
            pid,
            uid,
        };
        let live = Arc::clone(&self.live);
        let streams = Arc::clone(&self.streams);
        let users = Arc::clone(&self.users);
        let spawned = std::thread::Builder::new()
            .name("kernels-conn".into())
            .spawn(move || {
                conn.serve();
                lock(&streams).remove(&id);
                users.give(uid);
                live.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            lock(&self.streams).remove(&id);
            self.users.give(uid);
            self.live.fetch_sub(1, Ordering::AcqRel);
            self.store.reject("io_error");
        }
    }
}

struct Connection {
    stream: UnixStream,
    store: Arc<KernelStore>,
    resolver: Arc<Mutex<WorkloadResolver>>,
    budget: Arc<ByteBudget>,
    limits: KernelLimits,
    accepted: Instant,
    pid: u32,
    uid: u32,
}

impl Connection {
    fn serve(mut self) {
        self.store.pending(1);
        let hello = self.hello();
        self.store.pending(-1);
        let Some(hello) = hello else {
            return;
        };
        let (pid, uid) = (self.pid, self.uid);
        let workload = self.workload(pid, &hello);
        let conn = match self.store.connect(&workload, uid) {
            Ok(conn) => conn,
            Err(reason) => return self.store.reject(reason),
        };
        tracing::debug!(pid, uid, %workload, process = %hello.process_name, version = %hello.library_version, "kernel reporter connected");
        self.serve_deltas(conn);
        self.store.disconnect(conn);
    }

    /// The peer's hello, or `None` after counting why not.
    fn hello(&mut self) -> Option<Hello> {
        let deadlines = Deadlines {
            first_byte_by: self.accepted + self.limits.hello_timeout,
            frame_timeout: None,
            max_payload: MAX_HELLO_PAYLOAD,
        };
        match read_frame(&mut self.stream, deadlines, &self.budget) {
            Ok(Message::Hello(hello)) => Some(hello),
            Ok(Message::Delta(_) | Message::Counters(_)) => {
                self.store.reject("no_hello");
                None
            }
            Err(FrameError::Closed) => {
                self.store.reject("closed_before_hello");
                None
            }
            // The whole hello is due `hello_timeout` after the accept.
            Err(FrameError::Slow) => {
                self.store.reject("timeout");
                None
            }
            Err(e) => {
                self.reject(&e);
                None
            }
        }
    }

    fn serve_deltas(&mut self, conn: ConnId) {
        loop {
            let deadlines = Deadlines {
                first_byte_by: Instant::now() + self.limits.idle_timeout,
                frame_timeout: Some(self.limits.frame_timeout),
                max_payload: MAX_PAYLOAD_BYTES,
            };
            match read_frame(&mut self.stream, deadlines, &self.budget) {
                Ok(Message::Delta(delta)) => self.store.apply(conn, &delta),
                Ok(Message::Counters(counters)) => self.store.apply_counters(conn, &counters),
                Ok(Message::Hello(_)) => return self.store.reject("second_hello"),
                Err(FrameError::Closed) => return,
                Err(e) => return self.reject(&e),
            }
        }
    }

    fn reject(&self, error: &FrameError) {
        let reason = error.reason();
        tracing::debug!(%error, reason, "kernel reporter disconnected");
        self.store.reject(reason);
    }

    /// The hello's `POOLPROF_WORKLOAD` wins (DESIGN.md); otherwise the process's
    /// environment, pod or name, read from /proc.
    fn workload(&self, pid: u32, hello: &Hello) -> String {
        let claimed = hello
            .workload
            .as_deref()
            .map(clean_label)
            .filter(|w| !w.is_empty());
        claimed.unwrap_or_else(|| lock(&self.resolver).resolve(pid))
    }
}

/// Printable, trimmed, at most the workload length limit.
fn clean_label(raw: &str) -> String {
    let printable: String = raw.chars().filter(|c| !c.is_control()).collect();
    poolprof_inject::wire::truncate_utf8(printable.trim(), MAX_WORKLOAD_LEN).to_string()
}

/// The peer's pid and uid from `SO_PEERCRED`.
fn peer_credentials(stream: &UnixStream) -> Option<(u32, u32)> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let creds = getsockopt(stream, PeerCredentials).ok()?;
    let pid = u32::try_from(creds.pid()).ok().filter(|pid| *pid > 0)?;
    Some((pid, creds.uid()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::test_device::value;
    use crate::registry::MetricSet;
    use poolprof_inject::wire::{
        encode_delta, encode_hello, Delta, DeviceDelta, DeviceId, DutyCycle, Geometry, KernelDelta,
        KernelStats, MemcpyBytes, FULL_DUTY_PPM, MAGIC, VERSION,
    };
    use std::io::{Read, Write};
    use std::time::Instant;

    struct Fixture {
        _dir: tempfile::TempDir,
        _proc: tempfile::TempDir,
        listener: KernelListener,
    }

    fn start(limits: KernelLimits) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        // A fake procfs where this test process is called "fakeproc".
        let proc = tempfile::tempdir().unwrap();
        let me = proc.path().join(std::process::id().to_string());
        std::fs::create_dir_all(&me).unwrap();
        std::fs::write(me.join("comm"), "fakeproc\n").unwrap();
        let resolver = WorkloadResolver::new(proc.path(), Duration::from_secs(60));
        let path = dir.path().join("sub/inject.sock");
        let listener = KernelListener::spawn_with(&path, limits, resolver).unwrap();
        Fixture {
            _dir: dir,
            _proc: proc,
            listener,
        }
    }

    fn hello(workload: Option<&str>) -> Vec<u8> {
        encode_hello(&Hello {
            pid: 1,
            process_name: "test".into(),
            workload: workload.map(str::to_string),
            library_version: "test".into(),
            interval_ms: 1000,
            duty: DutyCycle::Always,
        })
    }

    fn delta(names: impl IntoIterator<Item = String>, ns: u64) -> Vec<u8> {
        let kernels = names
            .into_iter()
            .map(|name| KernelDelta {
                name,
                stats: KernelStats::one(ns),
                geometry: Geometry::default(),
            })
            .collect();
        encode_delta(&Delta {
            seq: 0,
            dropped_records: 0,
            kernel_duty_ppm: FULL_DUTY_PPM,
            devices: vec![DeviceDelta {
                device: DeviceId {
                    ordinal: 0,
                    uuid: Some([0xaa; 16]),
                },
                kernels,
                folded: KernelStats::default(),
                memcpy: MemcpyBytes::default(),
                memset_bytes: 0,
            }],
        })
        .concat()
    }

    fn metrics(f: &Fixture) -> MetricSet {
        let mut set = MetricSet::new();
        f.listener.store().write_metrics(&mut set);
        set
    }

    fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn connect(f: &Fixture) -> UnixStream {
        let s = UnixStream::connect(f.listener.path()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    /// True once the exporter has closed `stream` (EOF or reset).
    fn closed_by_peer(stream: &mut UnixStream) -> bool {
        let mut buf = [0u8; 16];
        matches!(stream.read(&mut buf), Ok(0) | Err(_))
    }

    fn rejected(f: &Fixture, reason: &str) -> f64 {
        value(
            &metrics(f),
            "poolprof_inject_rejected_connections_total",
            &[("reason", reason)],
        )
        .unwrap_or(0.0)
    }

    fn launches(f: &Fixture, labels: &[(&str, &str)]) -> Option<f64> {
        value(&metrics(f), "poolprof_kernel_launches_total", labels)
    }

    #[test]
    fn dropping_an_idle_listener_wakes_its_blocked_accept_and_removes_the_socket() {
        let f = start(KernelLimits::default());
        let path = f.listener.path().to_path_buf();
        // Let the accept thread block in accept(2) first.
        std::thread::sleep(Duration::from_millis(100));
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(f);
            let _ = done.send(());
        });
        finished
            .recv_timeout(Duration::from_secs(5))
            .expect("drop did not return: the accept thread was not woken");
        assert!(!path.exists(), "socket file left behind");
    }

    #[test]
    fn several_processes_report_under_their_workloads() {
        let f = start(KernelLimits::default());
        let mut named = connect(&f);
        named.write_all(&hello(Some("team/train"))).unwrap();
        let mut anon = connect(&f);
        anon.write_all(&hello(None)).unwrap();
        for _ in 0..3 {
            named.write_all(&delta(["gemm".to_string()], 1000)).unwrap();
            anon.write_all(&delta(["relu".to_string()], 10)).unwrap();
        }
        let anon_workload = format!("fakeproc-{}", std::process::id());
        eventually("both processes' launches", || {
            launches(&f, &[("workload", "team/train"), ("kernel", "gemm")]) == Some(3.0)
                && launches(&f, &[("workload", anon_workload.as_str())]) == Some(3.0)
        });
        let set = metrics(&f);
        assert_eq!(
            value(&set, "poolprof_inject_connected_processes", &[]),
            Some(2.0)
        );
        assert!(value(
            &set,
            "poolprof_kernel_launches_total",
            &[("uuid", "GPU-aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa")]
        )
        .is_some());
        drop(named);
        eventually("one disconnect", || f.listener.store().connected() == 1);
    }

    #[test]
    fn garbage_peers_are_disconnected_and_counted() {
        let f = start(KernelLimits::default());
        let mut http = connect(&f);
        http.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        assert!(closed_by_peer(&mut http));
        eventually("bad_magic counted", || rejected(&f, "bad_magic") == 1.0);

        let mut oversized = connect(&f);
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&[1, 0]);
        header.extend_from_slice(&u32::MAX.to_le_bytes());
        oversized.write_all(&header).unwrap();
        assert!(closed_by_peer(&mut oversized));
        eventually("oversized counted", || rejected(&f, "oversized") == 1.0);

        let mut rude = connect(&f);
        rude.write_all(&delta(["k".to_string()], 1)).unwrap();
        assert!(closed_by_peer(&mut rude));
        eventually("no_hello counted", || rejected(&f, "no_hello") == 1.0);

        // Garbage after a valid hello also closes the connection.
        let mut late = connect(&f);
        late.write_all(&hello(Some("late"))).unwrap();
        late.write_all(&[0xde; 64]).unwrap();
        assert!(closed_by_peer(&mut late));
        eventually("second bad_magic", || rejected(&f, "bad_magic") == 2.0);
        eventually("nobody connected", || f.listener.store().connected() == 0);
    }

    #[test]
    fn silent_peers_time_out() {
        let f = start(KernelLimits {
            hello_timeout: Duration::from_millis(100),
            ..Default::default()
        });
        let mut silent = connect(&f);
        assert!(closed_by_peer(&mut silent));
        eventually("timeout counted", || rejected(&f, "timeout") == 1.0);
    }

    #[test]
    fn thousands_of_kernel_names_fold_into_top_k_and_other() {
        let f = start(KernelLimits {
            top_k: 20,
            ..Default::default()
        });
        let mut s = connect(&f);
        s.write_all(&hello(Some("many"))).unwrap();
        // 3000 distinct names in frames of 500: the first frame's names take the 20
        // slots, every later launch folds into "other".
        for chunk in 0..6u64 {
            let names = (0..500).map(move |i| format!("kernel_{chunk}_{i}"));
            s.write_all(&delta(names, 100 + chunk)).unwrap();
        }
        eventually("all launches", || {
            let set = metrics(&f);
            let total: f64 = set
                .get("poolprof_kernel_launches_total")
                .map(|fam| {
                    fam.get_metric()
                        .iter()
                        .map(|m| m.get_counter().get_value())
                        .sum()
                })
                .unwrap_or(0.0);
            total == 3000.0
        });
        let set = metrics(&f);
        let series = set
            .get("poolprof_kernel_launches_total")
            .unwrap()
            .get_metric()
            .len();
        assert_eq!(series, 21, "20 named + other");
        assert_eq!(launches(&f, &[("kernel", "other")]), Some(2980.0));
    }

    /// Two connections that said hello as `w`, held (and returned) while a third is
    /// closed at once and its refusal counted as `reason`.
    fn two_held_and_a_third_refused(f: &Fixture, reason: &str) -> Vec<UnixStream> {
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut s = connect(f);
            s.write_all(&hello(Some("w"))).unwrap();
            held.push(s);
        }
        eventually("two connected", || f.listener.store().connected() == 2);
        let mut third = connect(f);
        assert!(closed_by_peer(&mut third));
        eventually("refusal counted", || rejected(f, reason) == 1.0);
        held
    }

    #[test]
    fn connections_over_the_limit_are_refused() {
        let f = start(KernelLimits {
            max_processes: 2,
            ..Default::default()
        });
        let _held = two_held_and_a_third_refused(&f, "too_many_processes");
    }

    #[test]
    fn one_user_holds_at_most_its_share_of_the_slots() {
        let f = start(KernelLimits {
            max_processes_per_user: 2,
            ..Default::default()
        });
        let mut held = two_held_and_a_third_refused(&f, "too_many_user_processes");
        // a slot given back can be taken again
        drop(held.pop());
        eventually("one left", || f.listener.store().connected() == 1);
        let mut again = connect(&f);
        again.write_all(&hello(Some("w"))).unwrap();
        eventually("two again", || f.listener.store().connected() == 2);
    }

    #[test]
    fn series_expire_after_the_process_exits() {
        let f = start(KernelLimits {
            expiry: Duration::from_millis(200),
            ..Default::default()
        });
        let mut s = connect(&f);
        s.write_all(&hello(Some("short-lived"))).unwrap();
        s.write_all(&delta(["k".to_string()], 5)).unwrap();
        eventually("launch seen", || {
            launches(&f, &[("workload", "short-lived")]) == Some(1.0)
        });
        drop(s);
        eventually("disconnect", || f.listener.store().connected() == 0);
        assert_eq!(launches(&f, &[("workload", "short-lived")]), Some(1.0));
        eventually("expiry", || {
            launches(&f, &[("workload", "short-lived")]).is_none()
        });
    }

    #[test]
    fn socket_file_handling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inject.sock");
        // A stale socket (nobody listening) is replaced.
        drop(UnixListener::bind(&path).unwrap());
        let live = KernelListener::spawn(&path, KernelLimits::default()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        // A live one is not.
        let err = KernelListener::spawn(&path, KernelLimits::default())
            .err()
            .unwrap();
        assert!(matches!(err, ListenerError::InUse(_)), "{err}");
        drop(live);
        assert!(!path.exists(), "socket removed on drop");
        // A regular file is never deleted.
        std::fs::write(&path, "precious").unwrap();
        let err = KernelListener::spawn(&path, KernelLimits::default())
            .err()
            .unwrap();
        assert!(err.to_string().contains("not a socket"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
        let long = dir.path().join("x".repeat(120));
        assert!(matches!(
            KernelListener::spawn(&long, KernelLimits::default()),
            Err(ListenerError::BadPath { .. })
        ));
    }

    /// Writes `bytes` one at a time, `gap` apart, until the peer closes.
    fn trickle(mut s: UnixStream, bytes: Vec<u8>, gap: Duration) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            for b in bytes {
                if s.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(gap);
            }
        })
    }

    #[test]
    fn a_hello_trickled_byte_by_byte_is_cut_off_at_the_hello_deadline() {
        let f = start(KernelLimits {
            hello_timeout: Duration::from_millis(300),
            ..Default::default()
        });
        let s = connect(&f);
        let mut reader = s.try_clone().unwrap();
        // Each byte comes well within the timeout, the whole hello does not.
        let writer = trickle(s, hello(Some("slow")), Duration::from_millis(50));
        eventually("the pending connection is visible", || {
            value(&metrics(&f), "poolprof_inject_pending_connections", &[]) == Some(1.0)
        });
        let started = Instant::now();
        assert!(closed_by_peer(&mut reader));
        assert!(started.elapsed() < Duration::from_secs(2));
        eventually("timeout counted", || rejected(&f, "timeout") == 1.0);
        let set = metrics(&f);
        assert_eq!(
            value(&set, "poolprof_inject_pending_connections", &[]),
            Some(0.0)
        );
        assert_eq!(
            value(&set, "poolprof_inject_connected_processes", &[]),
            Some(0.0)
        );
        writer.join().unwrap();
    }

    #[test]
    fn a_report_trickled_byte_by_byte_is_cut_off_at_the_frame_deadline() {
        let f = start(KernelLimits {
            frame_timeout: Duration::from_millis(300),
            ..Default::default()
        });
        let mut s = connect(&f);
        s.write_all(&hello(Some("slow"))).unwrap();
        eventually("connected", || f.listener.store().connected() == 1);
        let mut reader = s.try_clone().unwrap();
        let writer = trickle(s, delta(["k".to_string()], 1), Duration::from_millis(50));
        assert!(closed_by_peer(&mut reader));
        eventually("frame_timeout counted", || {
            rejected(&f, "frame_timeout") == 1.0
        });
        eventually("disconnected", || f.listener.store().connected() == 0);
        writer.join().unwrap();
    }

    #[test]
    fn a_large_frame_before_the_hello_is_refused_unread() {
        let f = start(KernelLimits::default());
        let mut s = connect(&f);
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&[1, 0]);
        header.extend_from_slice(&((MAX_HELLO_PAYLOAD + 1) as u32).to_le_bytes());
        s.write_all(&header).unwrap();
        assert!(closed_by_peer(&mut s));
        eventually("oversized counted", || rejected(&f, "oversized") == 1.0);
    }

    #[test]
    fn the_largest_hello_the_library_can_send_is_accepted() {
        let f = start(KernelLimits::default());
        let mut s = connect(&f);
        let long = "w".repeat(MAX_LABEL_BYTES + 10);
        let frame = encode_hello(&Hello {
            pid: u32::MAX,
            process_name: long.clone(),
            workload: Some(long.clone()),
            library_version: long,
            interval_ms: u32::MAX,
            duty: DutyCycle::Sampled {
                trace_ms: 1,
                period_ms: u32::MAX,
            },
        });
        assert_eq!(
            frame.len(),
            poolprof_inject::wire::HEADER_BYTES + MAX_HELLO_PAYLOAD
        );
        s.write_all(&frame).unwrap();
        eventually("connected", || f.listener.store().connected() == 1);
    }

    #[test]
    fn a_new_workload_over_the_limit_is_refused_and_counted() {
        let f = start(KernelLimits {
            max_workloads: 1,
            ..Default::default()
        });
        let mut first = connect(&f);
        first.write_all(&hello(Some("first"))).unwrap();
        eventually("connected", || f.listener.store().connected() == 1);
        let mut second = connect(&f);
        second.write_all(&hello(Some("second"))).unwrap();
        assert!(closed_by_peer(&mut second));
        eventually("refusal counted", || {
            rejected(&f, "too_many_workloads") == 1.0
        });
        // the first is still served
        first.write_all(&delta(["k".to_string()], 1)).unwrap();
        eventually("first's launch", || {
            launches(&f, &[("workload", "first")]) == Some(1.0)
        });
    }
}
