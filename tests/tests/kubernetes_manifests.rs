//! deploy/kubernetes/: every overlay and example renders with `kubectl kustomize`; the
//! output passes kubernetes-validate (PyPI) strictly against a current Kubernetes
//! version's schemas, and its ServiceMonitors and PodMonitors pass the
//! prometheus-operator CRD's schema (`deploy/kubernetes/check-monitors.py`); both
//! validators reject a deliberately broken manifest. The rendered exporter DaemonSet
//! mounts what its flags point at, read by the exporter's own command-line parser: the
//! kernel socket's folder from the host, writable, the kubelet's pod-resources socket
//! read-only, the web config from a Secret; the example training pod reaches the same
//! host socket and the injection library the DaemonSet installs; the analyzer's
//! arguments parse with the analyzer's parser and point at the ports and Services
//! that exist.
//!
//! Needs `kubectl` (1.21 or newer, for kustomize v4+), `python3 -m kubernetes_validate`
//! and `cloudcoil-models-prometheus-operator`; tests/run.sh installs what is missing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap::Parser;
use poolprof_e2e::process::output_text;
use serde::Deserialize;
use serde_yaml_ng::Value;

/// Oldest Kubernetes version the manifests are checked against (besides the newest
/// that kubernetes-validate knows).
const OLDEST_KUBERNETES: &str = "1.34.0";
/// Where the kubelet serves its pod-resources API on every node.
const KUBELET_POD_RESOURCES_SOCKET: &str = "/var/lib/kubelet/pod-resources/kubelet.sock";
/// The injection library's file name (the poolprof-inject cdylib).
const INJECT_LIBRARY: &str = "libpoolprof_inject.so";
/// bcrypt of "test" (cost 4), to fill the example web config's placeholder.
const TEST_BCRYPT_HASH: &str = "$2b$04$rwFHDI1sAfdNWrkXVN/U2.XyKuhp/QOKdoNBa4eSUfE81OgzEI5Lm";

fn kubernetes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

/// Every directory under overlays/ and examples/ that holds a kustomization.
fn kustomizations() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for group in ["overlays", "examples"] {
        let group_dir = kubernetes_dir().join(group);
        let entries = std::fs::read_dir(&group_dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", group_dir.display()));
        for entry in entries {
            let dir = entry.unwrap().path();
            if dir.join("kustomization.yaml").is_file() {
                found.push(dir);
            }
        }
    }
    found.sort();
    found
}

fn name_of(dir: &Path) -> String {
    dir.file_name().unwrap().to_string_lossy().into_owned()
}

fn overlay(name: &str) -> PathBuf {
    kubernetes_dir().join("overlays").join(name)
}

/// `kubectl kustomize DIR`, as text.
fn render_text(dir: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run kubectl ({e}): run tests/run.sh, which installs it, or install kubectl 1.21 or newer")
        });
    assert!(
        out.status.success(),
        "kubectl kustomize {} failed (kubectl older than 1.21 embeds a kustomize too old \
         for these files: check `kubectl version --client`):\n{}",
        dir.display(),
        output_text(&out)
    );
    String::from_utf8(out.stdout).expect("kustomize writes UTF-8")
}

fn parse_docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).expect("kustomize output is YAML"))
        .filter(|doc| !doc.is_null())
        .collect()
}

fn render(dir: &Path) -> Vec<Value> {
    parse_docs(&render_text(dir))
}

fn str_of<'a>(value: &'a Value, what: &str) -> &'a str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {value:?}"))
}

fn seq(value: &Value) -> &[Value] {
    value.as_sequence().map(Vec::as_slice).unwrap_or(&[])
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    try_find(docs, kind, name).unwrap_or_else(|| panic!("no {kind}/{name} rendered"))
}

fn try_find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
}

fn container<'a>(pod_spec: &'a Value, name: &str) -> &'a Value {
    seq(&pod_spec["containers"])
        .iter()
        .find(|c| c["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no container {name} in {pod_spec:?}"))
}

/// The container's command and arguments as one argv.
fn command_line(container: &Value) -> Vec<String> {
    seq(&container["command"])
        .iter()
        .chain(seq(&container["args"]))
        .map(|a| str_of(a, "an argument").to_string())
        .collect()
}

fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    seq(&container["env"])
        .iter()
        .find(|e| e["name"].as_str() == Some(name))
        .and_then(|e| e["value"].as_str())
}

fn container_port(container: &Value, name: &str) -> u64 {
    seq(&container["ports"])
        .iter()
        .find(|p| p["name"].as_str() == Some(name))
        .and_then(|p| p["containerPort"].as_u64())
        .unwrap_or_else(|| panic!("no containerPort named {name} in {container:?}"))
}

/// Where a path inside a container comes from: the mount whose folder holds it (the
/// longest such), its volume, and the path's part below the mount.
struct Source<'a> {
    read_only: bool,
    volume: &'a Value,
    below: PathBuf,
}

impl Source<'_> {
    /// The path on the node, when the volume is a hostPath.
    fn host_path(&self) -> Option<PathBuf> {
        let base = self.volume["hostPath"]["path"].as_str()?;
        Some(if self.below.as_os_str().is_empty() {
            PathBuf::from(base)
        } else {
            Path::new(base).join(&self.below)
        })
    }
}

fn source<'a>(pod_spec: &'a Value, container: &'a Value, path: &Path) -> Source<'a> {
    let mount = seq(&container["volumeMounts"])
        .iter()
        .filter(|m| path.starts_with(str_of(&m["mountPath"], "mountPath")))
        .max_by_key(|m| m["mountPath"].as_str().unwrap().len())
        .unwrap_or_else(|| {
            panic!(
                "{} is on no volume of container {}: the container's own filesystem \
                 is not the node's",
                path.display(),
                container["name"].as_str().unwrap_or("?")
            )
        });
    let volume_name = str_of(&mount["name"], "a volumeMount's name");
    let volume = seq(&pod_spec["volumes"])
        .iter()
        .find(|v| v["name"].as_str() == Some(volume_name))
        .unwrap_or_else(|| panic!("volumeMount {volume_name} has no volume"));
    let below = path
        .strip_prefix(str_of(&mount["mountPath"], "mountPath"))
        .unwrap()
        .to_path_buf();
    Source {
        read_only: mount["readOnly"].as_bool().unwrap_or(false),
        volume,
        below,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// kubernetes-validate, strict (unknown fields are errors), against one version or,
/// with `None`, the newest it knows.
fn kubernetes_validate(files: &[PathBuf], version: Option<&str>) -> Output {
    let mut command = Command::new("python3");
    command.args(["-m", "kubernetes_validate", "--strict", "--quiet"]);
    if let Some(version) = version {
        command.args(["--kubernetes-version", version]);
    }
    command.args(files).output().unwrap_or_else(|e| {
        panic!("cannot run python3 ({e}): run tests/run.sh, which installs kubernetes-validate")
    })
}

fn check_monitors(files: &[PathBuf]) -> Output {
    Command::new("python3")
        .arg(kubernetes_dir().join("check-monitors.py"))
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3: {e}"))
}

fn is_monitor(doc: &Value) -> bool {
    doc["apiVersion"].as_str() == Some("monitoring.coreos.com/v1")
}

#[test]
fn every_overlay_renders_with_the_one_image_reference() {
    let dirs = kustomizations();
    let names: BTreeSet<String> = dirs.iter().map(|d| name_of(d)).collect();
    for expected in ["serve", "cron", "tls-auth", "training-pod"] {
        assert!(
            names.contains(expected),
            "{expected} missing from {names:?}"
        );
    }
    // The image component is the one place images are named: read it, not a copy.
    let component =
        std::fs::read_to_string(kubernetes_dir().join("components/image/kustomization.yaml"))
            .unwrap();
    let component: Value = serde_yaml_ng::from_str(&component).unwrap();
    let images: Vec<(String, String)> = seq(&component["images"])
        .iter()
        .map(|i| {
            (
                str_of(&i["name"], "images[].name").to_string(),
                format!(
                    "{}:{}",
                    str_of(&i["newName"], "newName"),
                    str_of(&i["newTag"], "newTag")
                ),
            )
        })
        .collect();
    for dir in dirs
        .iter()
        .filter(|d| d.starts_with(kubernetes_dir().join("overlays")))
    {
        let docs = render(dir);
        let mut used = BTreeSet::new();
        for doc in &docs {
            let kind = str_of(&doc["kind"], "kind");
            let pod_spec = match kind {
                "DaemonSet" | "Deployment" => &doc["spec"]["template"]["spec"],
                "CronJob" => &doc["spec"]["jobTemplate"]["spec"]["template"]["spec"],
                _ => continue,
            };
            for c in seq(&pod_spec["containers"])
                .iter()
                .chain(seq(&pod_spec["initContainers"]))
            {
                let image = str_of(&c["image"], "image");
                assert!(
                    images.iter().any(|(_, reference)| reference == image),
                    "{}: {kind} container {:?} has image {image}, not one set by components/image",
                    name_of(dir),
                    c["name"]
                );
                used.insert(image.to_string());
            }
            assert_eq!(
                doc["metadata"]["namespace"].as_str(),
                Some("poolprof"),
                "{}: {kind} outside the poolprof namespace",
                name_of(dir)
            );
        }
        let poolprof = &images
            .iter()
            .find(|(name, _)| name == "poolprof")
            .unwrap()
            .1;
        assert!(
            used.contains(poolprof),
            "{}: no container runs {poolprof}",
            name_of(dir)
        );
    }
}

#[test]
fn rendered_manifests_pass_the_kubernetes_and_prometheus_operator_schemas() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut monitors = BTreeSet::new();
    for dir in kustomizations() {
        let text = render_text(&dir);
        for doc in parse_docs(&text).iter().filter(|d| is_monitor(d)) {
            monitors.insert(format!(
                "ok {}/{}",
                str_of(&doc["kind"], "kind"),
                str_of(&doc["metadata"]["name"], "name")
            ));
        }
        files.push(write(tmp.path(), &format!("{}.yaml", name_of(&dir)), &text));
    }
    for version in [Some(OLDEST_KUBERNETES), None] {
        let out = kubernetes_validate(&files, version);
        let text = output_text(&out);
        assert!(
            out.status.success(),
            "kubernetes-validate ({}) rejected a rendered overlay:\n{text}",
            version.unwrap_or("newest")
        );
        // Only the operator's custom resources may lack a core schema; any other
        // unknown kind (a typo in apiVersion or kind) is an error.
        for line in text.lines().filter(|l| l.starts_with("WARN")) {
            assert!(
                line.contains("kind PodMonitor with api version monitoring.coreos.com/v1")
                    || line
                        .contains("kind ServiceMonitor with api version monitoring.coreos.com/v1"),
                "kubernetes-validate could not check: {line}"
            );
        }
    }
    assert!(
        !monitors.is_empty(),
        "no ServiceMonitor or PodMonitor rendered"
    );
    let out = check_monitors(&files);
    let text = output_text(&out);
    assert!(
        out.status.success(),
        "check-monitors.py rejected a monitor:\n{text}"
    );
    let checked: BTreeSet<String> = text
        .lines()
        .filter(|l| l.starts_with("ok "))
        .map(str::to_string)
        .collect();
    assert_eq!(checked, monitors, "every monitor must be checked:\n{text}");
}

#[test]
fn the_validators_reject_broken_manifests() {
    let tmp = tempfile::tempdir().unwrap();
    let mut docs = render(&overlay("serve"));
    for doc in &mut docs {
        match doc["kind"].as_str() {
            // A misspelt field that a lenient check would drop silently.
            Some("DaemonSet") => {
                let mount =
                    &mut doc["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0];
                let read_only = mount.as_mapping_mut().unwrap().remove("readOnly").unwrap();
                mount
                    .as_mapping_mut()
                    .unwrap()
                    .insert("readonly".into(), read_only);
            }
            Some("PodMonitor") => {
                let endpoint = doc["spec"]["podMetricsEndpoints"][0]
                    .as_mapping_mut()
                    .unwrap();
                let relabelings = endpoint.remove("relabelings").unwrap();
                endpoint.insert("relabellings".into(), relabelings);
            }
            _ => {}
        }
    }
    let text: String = docs
        .iter()
        .map(|d| format!("---\n{}", serde_yaml_ng::to_string(d).unwrap()))
        .collect();
    let broken = write(tmp.path(), "broken.yaml", &text);

    let out = kubernetes_validate(std::slice::from_ref(&broken), Some(OLDEST_KUBERNETES));
    let said = output_text(&out);
    assert!(
        !out.status.success(),
        "kubernetes-validate accepted a misspelt field:\n{said}"
    );
    assert!(said.contains("'readonly' was unexpected"), "{said}");

    let out = check_monitors(std::slice::from_ref(&broken));
    let said = output_text(&out);
    assert!(
        !out.status.success(),
        "check-monitors.py accepted a misspelt field:\n{said}"
    );
    assert!(
        said.contains("PodMonitor/poolprof-exporter")
            && said.contains("'relabellings' was unexpected"),
        "{said}"
    );
}

/// What the exporter DaemonSet of one overlay gives the exporter, checked on the way:
/// the node's paths of the kernel socket and of the folder the library is put in.
struct ExporterOnNode {
    socket: PathBuf,
    library_dir: PathBuf,
}

fn check_exporter(overlay_name: &str, docs: &[Value]) -> ExporterOnNode {
    let daemonset = find(docs, "DaemonSet", "poolprof-exporter");
    let pod = &daemonset["spec"]["template"]["spec"];
    let exporter = container(pod, "poolprof-exporter");
    let argv = command_line(exporter);
    let cli = poolprof_exporter::cli::Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("{overlay_name}: the exporter refuses {argv:?}: {e}"));
    let flags = &cli.serve;
    assert_eq!(
        flags.gpu_source(),
        poolprof_exporter::cli::GpuSource::Nvml,
        "{overlay_name}: {argv:?}"
    );

    // The kernel socket: in a folder from the node, writable (the exporter creates it).
    assert!(!flags.no_kernels, "{overlay_name}: kernel metrics are off");
    let socket = source(pod, exporter, &flags.kernels_socket_path);
    assert!(
        !socket.read_only,
        "{overlay_name}: the kernel socket's folder is read-only"
    );
    let socket_on_node = socket
        .host_path()
        .unwrap_or_else(|| panic!("{overlay_name}: the kernel socket's folder is not a hostPath"));

    // The kubelet's socket: named explicitly (so a missing one stops the exporter
    // with a clear error), from the node, read-only.
    let kubelet = flags
        .kubelet_socket
        .as_deref()
        .unwrap_or_else(|| panic!("{overlay_name}: --kubelet.pod-resources-socket is not set"));
    assert!(!flags.no_kubelet);
    let kubelet = source(pod, exporter, kubelet);
    assert!(
        kubelet.read_only,
        "{overlay_name}: the kubelet's socket is mounted writable"
    );
    assert_eq!(
        kubelet.host_path().as_deref(),
        Some(Path::new(KUBELET_POD_RESOURCES_SOCKET))
    );

    // The web config: a file of a Secret, read-only.
    let port = container_port(exporter, "metrics");
    let listen = flags.listen_addresses.join(",");
    assert!(
        listen.ends_with(&format!(":{port}")),
        "{overlay_name}: listens on {listen}, the port is {port}"
    );
    let readiness = &exporter["readinessProbe"];
    match &flags.web_config_file {
        None => {
            assert_eq!(
                readiness["httpGet"]["path"].as_str(),
                Some("/-/ready"),
                "{overlay_name}"
            );
            assert_eq!(
                readiness["httpGet"]["port"].as_str(),
                Some("metrics"),
                "{overlay_name}"
            );
        }
        Some(file) => {
            let web = source(pod, exporter, file);
            assert!(
                web.read_only,
                "{overlay_name}: the web config is mounted writable"
            );
            let secret = &web.volume["secret"];
            assert!(
                secret["secretName"].is_string(),
                "{overlay_name}: the web config is not a Secret"
            );
            let items: Vec<&str> = seq(&secret["items"])
                .iter()
                .filter_map(|i| i["path"].as_str())
                .collect();
            assert!(
                items.is_empty() || items.contains(&web.below.to_str().unwrap()),
                "{overlay_name}: {} is not among the Secret's items {items:?}",
                file.display()
            );
            // Basic auth covers the probes too: an HTTP probe would get 401.
            assert_eq!(
                readiness["tcpSocket"]["port"].as_str(),
                Some("metrics"),
                "{overlay_name}"
            );
        }
    }

    // Least privilege: root with one capability, no privileged mode, no API token.
    let security = &exporter["securityContext"];
    assert_ne!(
        security["privileged"].as_bool(),
        Some(true),
        "{overlay_name}"
    );
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(seq(&security["capabilities"]["drop"]), [Value::from("ALL")]);
    assert_eq!(
        seq(&security["capabilities"]["add"]),
        [Value::from("SYS_PTRACE")]
    );
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(false));
    assert_eq!(
        pod["hostPID"].as_bool(),
        Some(true),
        "workload names need the node's pids"
    );
    assert_ne!(pod["hostNetwork"].as_bool(), Some(true));

    // The library installer writes into a folder of the node.
    let installer = seq(&pod["initContainers"])
        .iter()
        .find(|c| command_line(c).iter().any(|a| a.contains(INJECT_LIBRARY)))
        .unwrap_or_else(|| panic!("{overlay_name}: no init container installs {INJECT_LIBRARY}"));
    let script = command_line(installer).join(" ");
    let target = script
        .split_whitespace()
        .find(|word| word.ends_with(&format!("/{INJECT_LIBRARY}")) && !word.starts_with("/usr/"))
        .unwrap_or_else(|| panic!("{overlay_name}: where does {script:?} put the library?"));
    let library = source(pod, installer, Path::new(target));
    assert!(!library.read_only);
    let library_on_node = library
        .host_path()
        .expect("the library folder is a hostPath");

    // The monitor scrapes the port the exporter listens on and names the node.
    let monitor = find(docs, "PodMonitor", "poolprof-exporter");
    let endpoint = &monitor["spec"]["podMetricsEndpoints"][0];
    assert_eq!(endpoint["port"].as_str(), Some("metrics"));
    assert!(
        seq(&endpoint["relabelings"])
            .iter()
            .any(|r| r["targetLabel"].as_str() == Some("node")
                && seq(&r["sourceLabels"]) == [Value::from("__meta_kubernetes_pod_node_name")]),
        "{overlay_name}: no node label"
    );
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"], daemonset["spec"]["selector"]["matchLabels"],
        "{overlay_name}: the PodMonitor selects other pods"
    );
    ExporterOnNode {
        socket: socket_on_node,
        library_dir: library_on_node.parent().unwrap().to_path_buf(),
    }
}

#[test]
fn exporter_daemonset_mounts_what_its_flags_point_at() {
    for name in ["serve", "cron", "tls-auth"] {
        check_exporter(name, &render(&overlay(name)));
    }
}

#[test]
fn tls_auth_web_config_example_fits_the_mounts() {
    let docs = render(&overlay("tls-auth"));
    let pod = &find(&docs, "DaemonSet", "poolprof-exporter")["spec"]["template"]["spec"];
    let exporter = container(pod, "poolprof-exporter");
    let example = kubernetes_dir().join("overlays/tls-auth/web-config.example.yml");
    let text = std::fs::read_to_string(&example).unwrap();
    use poolprof_exporter::server::web_config::{PemSource, WebConfig};
    // As shipped, the placeholder cannot go live by mistake.
    let err = WebConfig::parse(&text, &example).unwrap_err().to_string();
    assert!(
        err.contains("basic_auth_users") && err.contains("bcrypt"),
        "{err}"
    );
    // With a hash filled in it is a valid web config whose files are in the TLS Secret.
    let filled = text.replace(
        "REPLACE-WITH-A-BCRYPT-HASH",
        &format!("'{TEST_BCRYPT_HASH}'"),
    );
    let config = WebConfig::parse(&filled, &example).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.basic_auth_users.len(), 1);
    let tls = config.tls.expect("the example turns TLS on");
    for pem in [&tls.cert, &tls.key] {
        let PemSource::File(path) = pem else {
            panic!("inline PEM in the example: {pem:?}")
        };
        let from = source(pod, exporter, path);
        assert!(from.read_only);
        assert_eq!(
            from.volume["secret"]["secretName"].as_str(),
            Some("poolprof-exporter-tls"),
            "{} is not in the TLS Secret",
            path.display()
        );
    }
    // Prometheus checks the certificate against the same Secret's CA.
    let tls_config = &find(&docs, "PodMonitor", "poolprof-exporter")["spec"]["podMetricsEndpoints"]
        [0]["tlsConfig"];
    assert_eq!(
        tls_config["ca"]["secret"]["name"].as_str(),
        Some("poolprof-exporter-tls")
    );
}

#[test]
fn training_pod_reaches_the_exporters_socket_and_library() {
    let on_node = check_exporter("serve", &render(&overlay("serve")));
    let docs = render(&kubernetes_dir().join("examples/training-pod"));
    let pod = &docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("Pod"))
        .expect("a Pod")["spec"];
    for c in seq(&pod["containers"]) {
        let library = env_value(c, "CUDA_INJECTION64_PATH")
            .expect("the pod opts in with CUDA_INJECTION64_PATH");
        assert!(
            library.starts_with('/'),
            "CUDA_INJECTION64_PATH must be absolute"
        );
        let library = source(pod, c, Path::new(library));
        assert_eq!(
            library.host_path(),
            Some(on_node.library_dir.join(INJECT_LIBRARY))
        );
        assert!(library.read_only);

        let socket = env_value(c, "POOLPROF_INJECT_SOCKET")
            .unwrap_or(poolprof_inject::config::DEFAULT_SOCKET);
        let socket = source(pod, c, Path::new(socket));
        assert_eq!(
            socket.host_path(),
            Some(on_node.socket.clone()),
            "the pod talks to another socket"
        );
        assert!(
            socket.read_only,
            "connecting needs no write access to the folder"
        );
        assert!(
            c["resources"]["limits"]["nvidia.com/gpu"].is_number(),
            "a training pod asks for a GPU"
        );
    }
}

#[test]
fn analyzer_arguments_point_at_what_exists() {
    use poolprof_analyzer::cli::{Cli, Command as Sub};
    // As a service: the ports it listens on are the ones declared and monitored.
    let docs = render(&overlay("serve"));
    let pod = &find(&docs, "Deployment", "poolprof-analyzer")["spec"]["template"]["spec"];
    let analyzer = container(pod, "poolprof-analyzer");
    let argv = command_line(analyzer);
    let cli =
        Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("the analyzer refuses {argv:?}: {e}"));
    let Sub::Serve(serve) = cli.command else {
        panic!("the Deployment does not run serve: {argv:?}")
    };
    assert_eq!(u64::from(serve.api.port()), container_port(analyzer, "api"));
    assert_eq!(
        u64::from(serve.listen.port()),
        container_port(analyzer, "metrics")
    );
    let registry = source(pod, analyzer, &serve.registry);
    assert!(!registry.read_only && registry.volume["persistentVolumeClaim"].is_mapping());
    let monitor = find(&docs, "ServiceMonitor", "poolprof-analyzer");
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"].as_str(),
        Some("metrics")
    );
    let url = env_value(analyzer, "POOLPROF_PROMETHEUS_URL").expect("the Prometheus URL");
    reqwest::Url::parse(url).unwrap_or_else(|e| panic!("POOLPROF_PROMETHEUS_URL {url}: {e}"));

    // From cron: it pushes to the Pushgateway Service of the same overlay.
    let docs = render(&overlay("cron"));
    let cron = find(&docs, "CronJob", "poolprof-analyzer");
    let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let analyzer = container(pod, "poolprof-analyzer");
    let argv = command_line(analyzer);
    let cli =
        Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("the analyzer refuses {argv:?}: {e}"));
    let Sub::Run(run) = cli.command else {
        panic!("the CronJob does not run `run`: {argv:?}")
    };
    assert!(run.once);
    let push = run.push.expect("the CronJob pushes");
    let gateway = find(&docs, "Service", push.host_str().expect("a host in --push"));
    assert_eq!(
        seq(&gateway["spec"]["ports"])
            .iter()
            .filter_map(|p| p["port"].as_u64())
            .collect::<Vec<_>>(),
        [u64::from(push.port().unwrap())]
    );
    let monitor = find(&docs, "ServiceMonitor", "poolprof-pushgateway");
    assert_eq!(
        monitor["spec"]["endpoints"][0]["honorLabels"].as_bool(),
        Some(true)
    );
    assert!(
        try_find(&docs, "Deployment", "poolprof-analyzer").is_none(),
        "cron and serve together"
    );
}
