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
# binary → package. promtool comes with prometheus. kubernetes-client is left out on
# purpose: it conflicts with a preinstalled kubectl on some machines. chromium opens
# the analyzer's HTML report headless (tests/tests/report_e2e.rs).
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
