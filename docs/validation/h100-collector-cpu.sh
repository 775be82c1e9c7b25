#!/usr/bin/env bash
# Where poolprof-exporter's CPU goes on a GPU node, in one command: a GEMM loop keeps
# GPU 0 busy; the NVML query costs are timed first (nvml_call_cost.py, rounds one
# second apart); then side by side for DURATION seconds, each scraped once a second
# with Prometheus's Accept and Accept-Encoding headers over a kept connection
# (target/release/scrape-load, carried beside the exporter): the exporter with every
# collector (`all`), one with none, one per collector (`--collector.disable-defaults
# --collector.<name>`; PER_COLLECTOR=0 leaves these out), and other builds given in
# EXTRA as `name=path` (every collector, to compare builds in the same run). CPU is
# read from /proc/PID/task/*/schedstat (on-CPU nanoseconds, not 10 ms ticks), per
# thread for `all`; `all` also reports its own per-collector CPU counters.
#
# Run in the repository root on the GPU node; carry target/release/poolprof-exporter.
# Environment: DURATION (default 90 s), ROUNDS (NVML query rounds, default 30; 0
# skips them), PER_COLLECTOR (default 1), EXTRA (default none),
# BIN (default target/release/poolprof-exporter), EXPORTER_ARGS (extra flags, e.g.
# `--simulate 1` to try the script without a GPU), OUT (results, default a new folder).
set -uo pipefail

cd "$(dirname "$0")/../.." || { echo "h100-collector-cpu.sh: cannot enter the repository root" >&2; exit 1; }
DURATION=${DURATION:-90}
ROUNDS=${ROUNDS:-30}
PER_COLLECTOR=${PER_COLLECTOR:-1}
EXTRA=${EXTRA:-}
BIN=${BIN:-target/release/poolprof-exporter}
EXPORTER_ARGS=${EXPORTER_ARGS:-}
OUT=${OUT:-$(mktemp -d -t poolprof-collector-cpu.XXXXXX)}
COLLECTORS="utilization memory power temperature clocks pcie clock_events ecc xid nvlink codec process gpm mig"
note() { echo "h100-collector-cpu.sh: $*" >&2; }
[[ -x "$BIN" ]] || { note "missing $BIN: build it (cargo build --release -p poolprof-exporter) and carry it"; exit 2; }
mkdir -p "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

python3 - "$((DURATION + 300))" > "$OUT/gemm.log" 2>&1 <<'PY' &
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize()
PY
PIDS+=($!)
sleep 8
echo "## NVML queries (GEMM loop on GPU 0)"
(( ROUNDS > 0 )) && { python3 docs/validation/nvml_call_cost.py "$ROUNDS" 1.0 || note "nvml_call_cost.py failed"; }

port=19600
declare -A PID_OF PORT_OF
start() {  # start NAME BINARY ARGS...
  local name=$1 bin=$2; shift 2
  "$bin" --web.listen-address="127.0.0.1:$port" --collect-interval=1s --no-kernels $EXPORTER_ARGS "$@" \
    > "$OUT/$name.log" 2>&1 &
  PIDS+=($!); PID_OF[$name]=$!; PORT_OF[$name]=$port; port=$((port + 1))
}
SUBJECTS="all none"
start all "$BIN"
start none "$BIN" --collector.disable-defaults
for extra in $EXTRA; do
  [[ -x "${extra#*=}" ]] || { note "EXTRA: ${extra#*=} is not an executable"; exit 2; }
  start "${extra%%=*}" "${extra#*=}"; SUBJECTS="$SUBJECTS ${extra%%=*}"
done
if (( PER_COLLECTOR )); then
  for c in $COLLECTORS; do
    start "only-$c" "$BIN" --collector.disable-defaults "--collector.$c"; SUBJECTS="$SUBJECTS only-$c"
  done
fi
# What Prometheus 2.x sends (scrape_protocols default), gzip included.
ACCEPT='Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
sleep 3
for name in "${!PID_OF[@]}"; do
  kill -0 "${PID_OF[$name]}" 2>/dev/null || { note "$name exited:"; tail -3 "$OUT/$name.log" >&2; }
done
# A kept connection per exporter, as Prometheus keeps one (scrape-load where it was
# carried; curl, a new connection per scrape, otherwise).
if [[ -x target/release/scrape-load ]]; then
  for name in "${!PORT_OF[@]}"; do
    target/release/scrape-load --url "http://127.0.0.1:${PORT_OF[$name]}/metrics" --concurrency 1 --threads 1 \
      --interval 1s --duration "$((DURATION + 30))s" --gzip --accept "${ACCEPT#Accept: }" --format kv > /dev/null 2>&1 &
    PIDS+=($!)
  done
else
  note "target/release/scrape-load not carried: scraping with curl, a new connection each time"
  ( while true; do for name in "${!PORT_OF[@]}"; do curl -s -o /dev/null --compressed -H "$ACCEPT" "127.0.0.1:${PORT_OF[$name]}/metrics"; done; sleep 1; done ) &
  PIDS+=($!)
fi
sleep 7
# The sum over the process's threads: /proc/PID/schedstat counts the main thread only.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'; }
threads() {  # pid -> "tid comm cpu_ns" per thread
  for t in /proc/"$1"/task/*; do
    echo "${t##*/} $(tr ' ' _ < "$t/comm") $(awk '{print $1}' "$t/schedstat")"
  done | sort
}
declare -A BEFORE
for name in "${!PID_OF[@]}"; do BEFORE[$name]=$(cpu_ns "${PID_OF[$name]}"); done
threads "${PID_OF[all]}" > "$OUT/threads-before.txt"
curl -s "127.0.0.1:${PORT_OF[all]}/metrics" > "$OUT/all-before.prom"
sleep "$DURATION"
curl -s "127.0.0.1:${PORT_OF[all]}/metrics" > "$OUT/all-after.prom"
threads "${PID_OF[all]}" > "$OUT/threads-after.txt"
echo
echo "## Exporters side by side, ${DURATION} s, each scraped once a second"
echo "| exporter | CPU % of one core | above none |"
echo "| --- | ---: | ---: |"
none_pct=$(awk -v a="${BEFORE[none]}" -v b="$(cpu_ns "${PID_OF[none]}")" -v d="$DURATION" 'BEGIN{printf "%.4f", (b-a)/d/1e7}')
for name in $SUBJECTS; do
  after=$(cpu_ns "${PID_OF[$name]}")
  awk -v n="$name" -v a="${BEFORE[$name]}" -v b="$after" -v d="$DURATION" -v z="$none_pct" \
    'BEGIN{p=(b-a)/d/1e7; printf "| %s | %.4f | %+.4f |\n", n, p, p-z}'
done
echo
echo "## Threads of the exporter with every collector"
echo "| thread | CPU % of one core |"
echo "| --- | ---: |"
join "$OUT/threads-before.txt" "$OUT/threads-after.txt" |
  awk -v d="$DURATION" '{printf "| %s (%s) | %.4f |\n", $2, $1, ($5-$3)/d/1e7}'
echo
echo "## Collector CPU of the exporter with every collector, over the window (its own counters)"
echo "| collector | CPU % of one core |"
echo "| --- | ---: |"
join <(grep '^poolprof_exporter_collector_cpu_seconds_total' "$OUT/all-before.prom" | sort) \
     <(grep '^poolprof_exporter_collector_cpu_seconds_total' "$OUT/all-after.prom" | sort) |
  awk -v d="$DURATION" '{sub(/.*collector="/, "", $1); sub(/".*/, "", $1); printf "| %s | %.4f |\n", $1, ($3-$2)/d*100}'
echo
echo "## Collector durations of the exporter with every collector (last collection)"
grep '^poolprof_exporter_collector_duration_seconds' "$OUT/all-after.prom"
