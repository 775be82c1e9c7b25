#!/usr/bin/env bash
# Checks the Prometheus configuration, the rule files and their unit tests:
#
#   bash deploy/prometheus/check.sh
#
# promtool check config deploy/prometheus/prometheus.yml (which loads the rule files),
# promtool check rules on every rules/*.yml and promtool test rules on every
# tests/*.test.yml. Exits 1, naming what failed, if anything does; promtool comes with
# Debian's prometheus package (bash tests/run.sh installs it).
set -uo pipefail
cd "$(dirname "$0")/../.."

dir=deploy/prometheus
failed=()

die() {
  echo "deploy/prometheus/check.sh: $*" >&2
  exit 1
}

command -v promtool >/dev/null 2>&1 ||
  die "promtool not found: apt-get install --no-install-recommends prometheus (or run bash tests/run.sh)"

run() { # what, then the command
  local what=$1
  shift
  echo "==> $what"
  if ! "$@"; then
    failed+=("$what")
  fi
}

shopt -s nullglob
rules=("$dir"/rules/*.yml)
tests=("$dir"/tests/*.test.yml)
[ ${#rules[@]} -gt 0 ] || die "no rule files in $dir/rules/"
[ ${#tests[@]} -gt 0 ] || die "no unit tests in $dir/tests/"

run "promtool check config $dir/prometheus.yml" promtool check config "$dir/prometheus.yml"
for file in "${rules[@]}"; do
  run "promtool check rules $file" promtool check rules "$file"
done
for file in "${tests[@]}"; do
  run "promtool test rules $file" promtool test rules "$file"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo >&2
  echo "deploy/prometheus/check.sh: ${#failed[@]} check(s) failed (promtool's output above):" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo
echo "deploy/prometheus/check.sh: config, ${#rules[@]} rule files and ${#tests[@]} unit test files OK"
