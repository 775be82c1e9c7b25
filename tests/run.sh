#!/usr/bin/env bash
# The one test command (README.md): installs what the tests need, idempotently, then
# runs formatting, lints and every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v prometheus >/dev/null || need_apt+=(prometheus)
command -v promtool >/dev/null || need_apt+=(prometheus)
command -v prometheus-pushgateway >/dev/null || need_apt+=(prometheus-pushgateway)
command -v victoria-metrics >/dev/null || need_apt+=(victoria-metrics)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# End-to-end tests run the built binaries from target/debug.
cargo build --workspace --bins --locked
cargo test --workspace --locked
