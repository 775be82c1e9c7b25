//! `poolprof_gpu_pod_info` against a fake kubelet speaking the real pod-resources
//! gRPC protocol: the client on its own, then the exporter binary as an operator
//! runs it on a Kubernetes node.

mod fake_kubelet;
mod support;

use fake_kubelet::{pod, pods, FakeKubelet, Mode};
use poolprof_e2e::promtool::check_metrics;
use poolprof_exporter::kubelet::proto::ListPodResourcesResponse;
use poolprof_exporter::kubelet::{PodResourcesClient, PodResourcesError};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{exporter, Running};

const GPU: &str = "nvidia.com/gpu";
const SHARED: &str = "nvidia.com/gpu.shared";

fn client(fake: &FakeKubelet) -> PodResourcesClient {
    PodResourcesClient::new(fake.socket(), Duration::from_secs(1))
}

#[test]
fn client_reads_pods_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let answer = ListPodResourcesResponse {
        pod_resources: vec![
            pod("ml", "train-0", "trainer", GPU, &["GPU-a", "GPU-b"]),
            pod("web", "infer-0", "server", SHARED, &["GPU-a::1"]),
        ],
    };
    let fake = FakeKubelet::start(&dir.path().join("kubelet.sock"), Mode::Pods(answer.clone()));
    assert_eq!(client(&fake).list().unwrap(), answer);
    assert_eq!(fake.calls(), 1);
}

#[test]
fn client_reports_a_grpc_error_with_code_and_message() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKubelet::start(
        &dir.path().join("kubelet.sock"),
        Mode::Fail(tonic::Code::Unavailable, "device manager not ready".into()),
    );
    let err = client(&fake).list().unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            PodResourcesError::Call {
                code: tonic::Code::Unavailable,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(message.contains("device manager not ready"), "{message}");
    assert!(message.contains("kubelet.sock"), "{message}");
}

#[test]
fn client_gives_up_on_a_hung_kubelet_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKubelet::start(&dir.path().join("kubelet.sock"), Mode::Hang);
    let started = Instant::now();
    let err = client(&fake).list().unwrap_err();
    assert!(matches!(err, PodResourcesError::TimedOut { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        fake.calls(),
        1,
        "the call reached the kubelet and hung there"
    );
}

#[test]
fn client_refuses_a_server_that_does_not_speak_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeKubelet::start(&dir.path().join("kubelet.sock"), Mode::Garbage);
    let err = client(&fake).list().unwrap_err();
    assert!(
        matches!(
            err,
            PodResourcesError::Connect { .. } | PodResourcesError::Call { .. }
        ),
        "{err:?}"
    );
    assert_eq!(fake.calls(), 0);
}

#[test]
fn client_refuses_an_answer_over_the_size_bound() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "a".repeat(poolprof_exporter::kubelet::client::MAX_RESPONSE_BYTES + 1);
    let fake = FakeKubelet::start(
        &dir.path().join("kubelet.sock"),
        pods(vec![pod("ml", &huge, "c", GPU, &["GPU-a"])]),
    );
    let err = client(&fake).list().unwrap_err();
    let PodResourcesError::Call { code, message, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*code, tonic::Code::OutOfRange, "{message}");
}

/// The series lines of `name` in a text exposition.
fn series<'a>(metrics: &'a str, name: &str) -> Vec<&'a str> {
    metrics
        .lines()
        .filter(|l| l.starts_with(name) && l[name.len()..].starts_with('{'))
        .collect()
}

fn label<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!("{name}=\""))? + name.len() + 2;
    Some(&line[start..start + line[start..].find('"')?])
}

/// `(uuid, namespace, pod, container)` of every `poolprof_gpu_pod_info` series.
fn owners(metrics: &str) -> Vec<[String; 4]> {
    let mut rows: Vec<[String; 4]> = series(metrics, "poolprof_gpu_pod_info")
        .into_iter()
        .map(|l| {
            assert!(l.ends_with(" 1"), "{l}");
            ["uuid", "namespace", "pod", "container"].map(|n| label(l, n).unwrap().to_string())
        })
        .collect();
    rows.sort();
    rows
}

fn row(uuid: &str, namespace: &str, pod: &str, container: &str) -> [String; 4] {
    [uuid, namespace, pod, container].map(str::to_string)
}

/// The value of `poolprof_exporter_collector_success{collector}`.
fn success(metrics: &str, collector: &str) -> Option<String> {
    series(metrics, "poolprof_exporter_collector_success")
        .into_iter()
        .find(|l| label(l, "collector") == Some(collector))
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
}

#[test]
fn exporter_publishes_gpu_owners_and_survives_a_failing_kubelet() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kubelet.sock");
    let fake = FakeKubelet::start(&socket, pods(vec![]));
    let exporter = Running::start(&[
        "--no-kernels",
        "--kubelet.pod-resources-interval",
        "1s",
        "--kubelet.pod-resources-socket",
        socket.to_str().unwrap(),
    ]);
    let metrics = exporter.wait_for("first collection", |m| success(m, "pods").is_some());
    let mut uuids: Vec<String> = series(&metrics, "poolprof_gpu_up")
        .iter()
        .map(|l| label(l, "uuid").unwrap().to_string())
        .collect();
    uuids.sort();
    assert_eq!(uuids.len(), 2, "{metrics}");
    let (a, b) = (uuids[0].as_str(), uuids[1].as_str());

    // A training pod on both GPUs; two inference pods time-sliced onto GPU a.
    let fleet = |with_second_inference: bool| {
        let mut list = vec![
            pod("ml", "train-0", "trainer", GPU, &[a, b]),
            pod("web", "infer-0", "server", SHARED, &[&format!("{a}::0")]),
        ];
        if with_second_inference {
            list.push(pod(
                "web",
                "infer-1",
                "server",
                SHARED,
                &[&format!("{a}::3")],
            ));
        }
        pods(list)
    };
    fake.set(fleet(true));
    let all = vec![
        row(a, "ml", "train-0", "trainer"),
        row(a, "web", "infer-0", "server"),
        row(a, "web", "infer-1", "server"),
        row(b, "ml", "train-0", "trainer"),
    ];
    let metrics = exporter.wait_for("owners published", |m| owners(m) == all);
    assert_eq!(success(&metrics, "pods").as_deref(), Some("1"));
    assert_eq!(
        check_metrics(&metrics).output,
        "",
        "promtool check metrics is silent"
    );

    fake.set(fleet(false));
    exporter.wait_for("removed pod gone", |m| {
        owners(m).len() == 3 && !m.contains("pod=\"infer-1\"")
    });

    let withheld = "poolprof_gpu_pod_info is withheld";
    for (mode, state) in [
        (
            Mode::Fail(tonic::Code::Internal, "boom".into()),
            "Internal: boom",
        ),
        (Mode::Hang, "did not answer within"),
        (Mode::Garbage, "cannot connect"),
    ] {
        let before = exporter.log_lines_with(withheld);
        fake.set(mode);
        let metrics = exporter.wait_for(state, |m| {
            success(m, "pods").as_deref() == Some("0") && owners(m).is_empty()
        });
        assert_eq!(success(&metrics, "utilization").as_deref(), Some("1"));
        assert_eq!(series(&metrics, "poolprof_gpu_up").len(), 2);
        let deadline = Instant::now() + Duration::from_secs(10);
        while exporter.log_lines_with(withheld) == before {
            assert!(Instant::now() < deadline, "{}", exporter.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            exporter.log_text().contains(state),
            "{}",
            exporter.log_text()
        );
    }
    // Several failed polls per state, one warning per state change, and the runner's
    // own warning once for the whole outage.
    assert_eq!(
        exporter.log_lines_with(withheld),
        3,
        "{}",
        exporter.log_text()
    );
    let runner_warnings = exporter
        .log_lines_where(|l| l.contains("msg=\"collector failed") && l.contains("collector=pods"));
    assert_eq!(runner_warnings, 1, "{}", exporter.log_text());

    fake.set(fleet(false));
    let metrics = exporter.wait_for("recovery", |m| owners(m).len() == 3);
    assert_eq!(success(&metrics, "pods").as_deref(), Some("1"));
    assert!(exporter.log_text().contains("the kubelet answers again"));
}

#[test]
fn explicit_missing_socket_exits_2_naming_flag_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("kubelet.sock");
    let output = exporter()
        .args([
            "--simulate",
            "1",
            "--web.listen-address",
            "127.0.0.1:0",
            "--no-kernels",
        ])
        .env("POOLPROF_KUBELET_POD_RESOURCES_SOCKET", &missing)
        .output()
        .unwrap();
    let message = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(
        message.contains("--kubelet.pod-resources-socket"),
        "{message}"
    );
    assert!(
        message.contains(&missing.display().to_string()),
        "{message}"
    );
}

#[test]
fn without_a_kubelet_there_is_no_pods_collector() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kubelet.sock");
    let fake = FakeKubelet::start(&socket, pods(vec![]));
    let exporter = Running::start(&[
        "--no-kernels",
        "--no-kubelet",
        "--kubelet.pod-resources-socket",
        socket.to_str().unwrap(),
    ]);
    let metrics = exporter.wait_for("a collection", |m| success(m, "utilization").is_some());
    assert_eq!(success(&metrics, "pods"), None, "--no-kubelet wins");
    assert_eq!(fake.calls(), 0);
    drop(exporter);

    if std::path::Path::new(poolprof_exporter::kubelet::DEFAULT_SOCKET_PATH).exists() {
        eprintln!("skipped the default-path half: this machine runs a kubelet");
        return;
    }
    let exporter = Running::start(&["--no-kernels"]);
    let metrics = exporter.wait_for("a collection", |m| success(m, "utilization").is_some());
    assert_eq!(success(&metrics, "pods"), None);
    let off = exporter.log_text();
    assert!(
        off.contains("level=info") && off.contains("pod info is off"),
        "{off}"
    );
    assert!(!off.contains("level=warn"), "nothing alarming: {off}");
}

/// The joins docs/kubernetes.md recommends, evaluated by Prometheus's own engine on a
/// shared GPU (two containers on GPU-a) and an exclusive one.
#[test]
fn documented_joins_hold_on_shared_gpus() {
    const JOIN: &str =
        "poolprof_gpu_pod_info * on(uuid) group_left(gpu) poolprof_gpu_utilization_ratio";
    const NAIVE: &str = "poolprof_gpu_utilization_ratio * on(uuid) group_left(namespace,pod,container) poolprof_gpu_pod_info";
    let series =
        |s: &str, values: &str| format!("      - series: '{s}'\n        values: '{values}'");
    let sample = |labels: &str, value: &str| {
        format!("          - labels: '{labels}'\n            value: {value}")
    };
    let owner = |uuid: &str, pod: &str| {
        format!("uuid=\"{uuid}\",namespace=\"ns\",pod=\"{pod}\",container=\"c\"")
    };
    let rules = |join: &str| {
        [
            "tests:".to_string(),
            "  - interval: 1m".into(),
            "    input_series:".into(),
            series(
                "poolprof_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-a\"}",
                "0.5 0.5",
            ),
            series(
                "poolprof_gpu_utilization_ratio{gpu=\"1\",uuid=\"GPU-b\"}",
                "0.25 0.25",
            ),
            series(
                &format!("poolprof_gpu_pod_info{{{}}}", owner("GPU-a", "p0")),
                "1 1",
            ),
            series(
                &format!("poolprof_gpu_pod_info{{{}}}", owner("GPU-a", "p1")),
                "1 1",
            ),
            series(
                &format!("poolprof_gpu_pod_info{{{}}}", owner("GPU-b", "p2")),
                "1 1",
            ),
            "    promql_expr_test:".into(),
            format!("      - expr: {join}"),
            "        eval_time: 1m".into(),
            "        exp_samples:".into(),
            sample(&format!("{{gpu=\"0\",{}}}", owner("GPU-a", "p0")), "0.5"),
            sample(&format!("{{gpu=\"0\",{}}}", owner("GPU-a", "p1")), "0.5"),
            sample(&format!("{{gpu=\"1\",{}}}", owner("GPU-b", "p2")), "0.25"),
            "      - expr: count by (uuid) (poolprof_gpu_pod_info)".into(),
            "        eval_time: 1m".into(),
            "        exp_samples:".into(),
            sample("{uuid=\"GPU-a\"}", "2"),
            sample("{uuid=\"GPU-b\"}", "1"),
            String::new(),
        ]
        .join("\n")
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("joins.yml");
    let promtool = |yaml: &str| {
        std::fs::write(&file, yaml).unwrap();
        let output = Command::new("promtool")
            .args(["test", "rules"])
            .arg(&file)
            .output()
            .expect("promtool is installed (Debian package prometheus)");
        let said = format!(
            "{}{}\n{yaml}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), said)
    };
    let (passed, said) = promtool(&rules(JOIN));
    assert!(passed, "{said}");
    // The one-owner-per-GPU form is refused once a GPU is shared, as documented.
    let (passed, said) = promtool(&rules(NAIVE));
    assert!(!passed);
    assert!(said.contains("many-to-many matching not allowed"), "{said}");
}

/// The MIG join docs/kubernetes.md gives: a container holding a MIG device is named
/// by the device's `MIG-…` UUID, which `poolprof_mig_*` series carry as `mig_uuid`.
#[test]
fn documented_mig_join_names_the_container_of_each_instance() {
    const JOIN: &str = "label_replace(poolprof_gpu_pod_info, \"mig_uuid\", \"$1\", \"uuid\", \"(MIG-.*)\") * on(mig_uuid) group_left(gpu_instance, mig_profile) poolprof_mig_sm_active_ratio";
    let mig = |gi: &str, mig_uuid: &str| {
        format!("gpu=\"0\",uuid=\"GPU-a\",gpu_instance=\"{gi}\",mig_profile=\"1g.10gb\",mig_uuid=\"{mig_uuid}\"")
    };
    let owner = |uuid: &str, pod: &str| {
        format!("uuid=\"{uuid}\",namespace=\"ns\",pod=\"{pod}\",container=\"c\"")
    };
    let yaml = [
        "tests:".to_string(),
        "  - interval: 1m".into(),
        "    input_series:".into(),
        format!("      - series: 'poolprof_mig_sm_active_ratio{{{}}}'\n        values: '0.5 0.5'", mig("1", "MIG-x")),
        format!("      - series: 'poolprof_mig_sm_active_ratio{{{}}}'\n        values: '0.25 0.25'", mig("2", "MIG-y")),
        format!("      - series: 'poolprof_gpu_pod_info{{{}}}'\n        values: '1 1'", owner("MIG-x", "p0")),
        format!("      - series: 'poolprof_gpu_pod_info{{{}}}'\n        values: '1 1'", owner("GPU-b", "p1")),
        "    promql_expr_test:".into(),
        format!("      - expr: '{JOIN}'"),
        "        eval_time: 1m".into(),
        "        exp_samples:".into(),
        format!(
            "          - labels: '{{{},mig_uuid=\"MIG-x\",gpu_instance=\"1\",mig_profile=\"1g.10gb\"}}'\n            value: 0.5",
            owner("MIG-x", "p0")
        ),
        String::new(),
    ]
    .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mig-join.yml");
    std::fs::write(&file, &yaml).unwrap();
    let output = Command::new("promtool")
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .expect("promtool is installed (Debian package prometheus)");
    assert!(
        output.status.success(),
        "{}{}\n{yaml}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
