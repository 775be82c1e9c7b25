//! Workload identity: the `workload` label of a process (DESIGN.md, "Workload
//! identity"), in this order:
//!
//! 1. `POOLPROF_WORKLOAD` in the process's environment;
//! 2. on Kubernetes, `namespace/pod`;
//! 3. otherwise `<comm>-<pid>` (`pid-<pid>` when even the name cannot be read).
//!
//! Kubernetes without the kubelet API: a process counts as a pod's when its cgroup
//! path names `kubepods` or its environment has `KUBERNETES_SERVICE_HOST`. The pod is
//! `POD_NAME` (downward API) or else `HOSTNAME`, which Kubernetes sets to the pod name;
//! the namespace is `POD_NAMESPACE` or else the pod's service-account namespace file,
//! read through `/proc/<pid>/root`. Limits: this needs the exporter to see the host's
//! pids (`hostPID`) and be allowed to read other processes' `environ`; a pod with
//! `hostNetwork` and no `POD_NAME` reports the node's hostname; a pod without a
//! mounted service account and no `POD_NAMESPACE` falls back to `<comm>-<pid>`.
//!
//! Every file read is capped, so a huge environment cannot stall collection.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable that names a process's workload.
pub const WORKLOAD_ENV: &str = "POOLPROF_WORKLOAD";
/// Longest workload name we publish; longer names are cut at a character boundary.
pub const MAX_WORKLOAD_LEN: usize = 128;

const ENVIRON_CAP: u64 = 256 * 1024;
const CGROUP_CAP: u64 = 16 * 1024;
const SMALL_FILE_CAP: u64 = 256;
const SERVICE_ACCOUNT_NAMESPACE: &str = "var/run/secrets/kubernetes.io/serviceaccount/namespace";
const CACHE_LIMIT: usize = 4096;

/// Resolves the workload of `pid` from the host's `/proc`, without caching.
pub fn resolve(pid: u32) -> String {
    resolve_in(Path::new("/proc"), pid)
}

/// Resolves the workload of `pid` from the procfs mounted at `proc_root`.
pub fn resolve_in(proc_root: &Path, pid: u32) -> String {
    let dir = proc_root.join(pid.to_string());
    let environ = read_capped(&dir.join("environ"), ENVIRON_CAP).unwrap_or_default();
    let env = |key: &str| env_value(&environ, key);
    if let Some(name) = env(WORKLOAD_ENV) {
        return name;
    }
    if let Some(pod) = kubernetes_pod(&dir, &env) {
        return pod;
    }
    match read_capped(&dir.join("comm"), SMALL_FILE_CAP).and_then(clean) {
        Some(comm) => bounded(format!("{comm}-{pid}")),
        None => format!("pid-{pid}"),
    }
}

fn kubernetes_pod(dir: &Path, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let in_pod_cgroup = read_capped(&dir.join("cgroup"), CGROUP_CAP)
        .is_some_and(|c| String::from_utf8_lossy(&c).contains("kubepods"));
    if !in_pod_cgroup && env("KUBERNETES_SERVICE_HOST").is_none() {
        return None;
    }
    let namespace = env("POD_NAMESPACE").or_else(|| {
        read_capped(
            &dir.join("root").join(SERVICE_ACCOUNT_NAMESPACE),
            SMALL_FILE_CAP,
        )
        .and_then(clean)
    })?;
    let pod = env("POD_NAME").or_else(|| env("HOSTNAME"))?;
    Some(bounded(format!("{namespace}/{pod}")))
}

/// Reads at most `cap` bytes of `path`; `None` when it cannot be read.
fn read_capped(path: &Path, cap: u64) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(cap)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// The value of `key` in a NUL-separated environment block, trimmed, if non-empty.
fn env_value(environ: &[u8], key: &str) -> Option<String> {
    environ.split(|b| *b == 0).find_map(|entry| {
        let rest = entry.strip_prefix(key.as_bytes())?.strip_prefix(b"=")?;
        clean(rest.to_vec())
    })
}

/// UTF-8 (lossy), trimmed, bounded; `None` when nothing is left.
fn clean(bytes: Vec<u8>) -> Option<String> {
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    (!text.is_empty()).then(|| bounded(text.to_string()))
}

fn bounded(mut name: String) -> String {
    if name.len() > MAX_WORKLOAD_LEN {
        let mut end = MAX_WORKLOAD_LEN;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

/// Caches resolutions per process for `ttl`. A cached entry is keyed by pid and the
/// process's start time, so a reused pid is resolved afresh.
#[derive(Debug)]
pub struct WorkloadResolver {
    proc_root: PathBuf,
    ttl: Duration,
    cache: HashMap<u32, Cached>,
}

#[derive(Debug)]
struct Cached {
    start_time: Option<u64>,
    at: Instant,
    workload: String,
}

impl Default for WorkloadResolver {
    fn default() -> Self {
        Self::new(Path::new("/proc"), Duration::from_secs(60))
    }
}

impl WorkloadResolver {
    /// A resolver over the procfs at `proc_root` whose answers live for `ttl`.
    pub fn new(proc_root: &Path, ttl: Duration) -> Self {
        Self {
            proc_root: proc_root.to_path_buf(),
            ttl,
            cache: HashMap::new(),
        }
    }

    /// The workload of `pid`, from the cache when still fresh.
    pub fn resolve(&mut self, pid: u32) -> String {
        let start_time = self.start_time(pid);
        if let Some(hit) = self.cache.get(&pid) {
            if hit.start_time == start_time && hit.at.elapsed() < self.ttl {
                return hit.workload.clone();
            }
        }
        if self.cache.len() >= CACHE_LIMIT {
            let ttl = self.ttl;
            self.cache.retain(|_, c| c.at.elapsed() < ttl);
        }
        let workload = resolve_in(&self.proc_root, pid);
        let at = Instant::now();
        let entry = Cached {
            start_time,
            at,
            workload: workload.clone(),
        };
        if self.cache.len() < CACHE_LIMIT {
            self.cache.insert(pid, entry);
        }
        workload
    }

    /// Field 22 of `/proc/<pid>/stat`, after the parenthesised command name.
    fn start_time(&self, pid: u32) -> Option<u64> {
        let stat = read_capped(&self.proc_root.join(pid.to_string()).join("stat"), 4096)?;
        let stat = String::from_utf8_lossy(&stat);
        let after_comm = &stat[stat.rfind(')')? + 1..];
        after_comm.split_whitespace().nth(19)?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    struct FakeProc(tempfile::TempDir);

    impl FakeProc {
        fn new() -> Self {
            Self(tempfile::tempdir().unwrap())
        }
        fn process(&self, pid: u32, comm: &str, env: &[&str], cgroup: &str) -> PathBuf {
            let dir = self.0.path().join(pid.to_string());
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
            let environ: Vec<u8> = env.iter().flat_map(|e| e.bytes().chain([0])).collect();
            fs::write(dir.join("environ"), environ).unwrap();
            fs::write(dir.join("cgroup"), cgroup).unwrap();
            fs::write(
                dir.join("stat"),
                format!("{pid} ({comm}) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19"),
            )
            .unwrap();
            dir
        }
        fn root(&self) -> &Path {
            self.0.path()
        }
    }

    const POD_CGROUP: &str =
        "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-abc.scope\n";

    #[test]
    fn explicit_workload_variable_wins_over_kubernetes() {
        let proc = FakeProc::new();
        proc.process(
            10,
            "python3",
            &[
                "POD_NAMESPACE=ml",
                "HOSTNAME=trainer-0",
                "POOLPROF_WORKLOAD= llama-ft ",
            ],
            POD_CGROUP,
        );
        assert_eq!(resolve_in(proc.root(), 10), "llama-ft");
    }

    #[test]
    fn kubernetes_pod_from_environment() {
        let proc = FakeProc::new();
        proc.process(
            11,
            "python3",
            &["POD_NAMESPACE=ml", "HOSTNAME=trainer-0"],
            POD_CGROUP,
        );
        proc.process(
            12,
            "python3",
            &["POD_NAMESPACE=ml", "POD_NAME=infer-7", "HOSTNAME=node"],
            POD_CGROUP,
        );
        assert_eq!(resolve_in(proc.root(), 11), "ml/trainer-0");
        assert_eq!(resolve_in(proc.root(), 12), "ml/infer-7");
    }

    #[test]
    fn kubernetes_namespace_from_the_service_account_file() {
        let proc = FakeProc::new();
        let dir = proc.process(13, "python3", &["HOSTNAME=web-1"], POD_CGROUP);
        let sa = dir.join("root").join(SERVICE_ACCOUNT_NAMESPACE);
        fs::create_dir_all(sa.parent().unwrap()).unwrap();
        fs::write(sa, "serving").unwrap();
        assert_eq!(resolve_in(proc.root(), 13), "serving/web-1");
    }

    #[test]
    fn falls_back_to_comm_and_pid() {
        let proc = FakeProc::new();
        proc.process(
            14,
            "python3",
            &["HOSTNAME=laptop", "POOLPROF_WORKLOAD="],
            "0::/user.slice\n",
        );
        assert_eq!(resolve_in(proc.root(), 14), "python3-14");
        proc.process(15, "python3", &["HOSTNAME=x"], POD_CGROUP);
        assert_eq!(
            resolve_in(proc.root(), 15),
            "python3-15",
            "pod without namespace"
        );
        assert_eq!(resolve_in(proc.root(), 99), "pid-99", "process gone");
    }

    #[test]
    fn long_and_non_utf8_names_are_bounded() {
        let proc = FakeProc::new();
        let long = format!("POOLPROF_WORKLOAD={}", "é".repeat(200));
        proc.process(16, "x", &[&long], "");
        let name = resolve_in(proc.root(), 16);
        assert!(name.len() <= MAX_WORKLOAD_LEN && name.starts_with("éé"));
        let dir = proc.process(17, "x", &[], "");
        fs::write(dir.join("environ"), b"POOLPROF_WORKLOAD=a\xffb\0").unwrap();
        assert_eq!(resolve_in(proc.root(), 17), "a\u{fffd}b");
    }

    #[test]
    fn cache_answers_until_the_pid_is_reused() {
        let proc = FakeProc::new();
        let dir = proc.process(20, "train", &["POOLPROF_WORKLOAD=first"], "");
        let mut resolver = WorkloadResolver::new(proc.root(), Duration::from_secs(60));
        assert_eq!(resolver.resolve(20), "first");
        fs::write(dir.join("environ"), b"POOLPROF_WORKLOAD=second\0").unwrap();
        assert_eq!(resolver.resolve(20), "first", "cached");
        fs::write(
            dir.join("stat"),
            "20 (train) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 999 19",
        )
        .unwrap();
        assert_eq!(
            resolver.resolve(20),
            "second",
            "new process with the same pid"
        );
        let mut expired = WorkloadResolver::new(proc.root(), Duration::ZERO);
        assert_eq!(expired.resolve(20), "second");
    }
}
