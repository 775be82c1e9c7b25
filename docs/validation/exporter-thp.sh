#!/usr/bin/env bash
# Does transparent huge page backing inflate the exporter's resident memory? Runs the
# NVML exporter for SECONDS twice, as is and with THP disabled for the process
# (prctl(PR_SET_THP_DISABLE), inherited across exec), and prints the system's THP
# settings, peak and current RSS, and the anonymous memory backed by huge pages.
# Run in the repository root with target/release/poolprof-exporter carried.
# Environment: EXPORTER (default target/release/poolprof-exporter), SECONDS_EACH (12).
set -uo pipefail
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
SECONDS_EACH=${SECONDS_EACH:-12}
EXTRA=${EXTRA:-}  # e.g. "--simulate 2" to try it without a GPU
cd "$(dirname "$0")/../.." || exit 1
[[ -x "$EXPORTER" ]] || { echo "$EXPORTER is missing: build and carry it" >&2; exit 1; }
echo "## THP: enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1); defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)"
echo "kernel $(uname -r)"
no_thp() { exec python3 -c 'import ctypes,os,sys
assert ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0) == 0, "prctl"
os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }
measure() { # label, then the command
  local label=$1; shift
  local port; port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  "$@" --web.listen-address="127.0.0.1:$port" --no-kubelet --collect-interval=1s > /tmp/thp-$label.log 2>&1 &
  local pid=$!
  sleep "$SECONDS_EACH"
  if ! kill -0 "$pid" 2>/dev/null; then echo "$label: exporter exited"; tail -3 /tmp/thp-$label.log; return; fi
  echo "### $label"
  grep -E '^(VmHWM|VmRSS|RssAnon|RssFile)' /proc/$pid/status | tr -s ' ' | tr '\n' ';'; echo
  echo "AnonHugePages total: $(awk '/^AnonHugePages/ {s+=$2} END {print s " kB"}' /proc/$pid/smaps)"
  echo "THP_enabled line: $(grep THP_enabled /proc/$pid/status)"
  echo "largest resident mappings (KiB rss, anon-huge, name):"
  awk '/^[0-9a-f]+-[0-9a-f]+ / {name=$6; if (name=="") name="[anon " $1 "]"} /^Rss:/ {rss=$2} /^AnonHugePages:/ {print rss, $2, name}' /proc/$pid/smaps \
    | sort -rn | head -6
  kill "$pid"; wait "$pid" 2>/dev/null
}
measure default "$EXPORTER" $EXTRA
measure thp-disabled no_thp "$EXPORTER" $EXTRA
