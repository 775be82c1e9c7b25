#!/usr/bin/env bash
# Validation of poolprof-exporter on a real GPU (an H100 here), in one run:
#  1. start the release exporter (NVML backend) on a loopback port, check /metrics
#     and `promtool check metrics`;
#  2. bf16 GEMM loop, then elementwise loop (h100_workload.py), scraping every
#     second: a table of GPM tensor / DRAM / SM activity, power and utilization
#     medians per phase;
#  3. the benchmark (bench/exporter/run.sh) side by side with nvidia-smi dmon and a
#     Python exporter.
# Run in the repository root. Needs target/release/poolprof-exporter,
# target/release/scrape-load, python3 with torch (and nvidia-ml-py +
# prometheus_client for the Python peer), and promtool (PROMTOOL, or a Debian
# prometheus_*.deb in .carry/ to take it from).
#
# Environment: PROMTOOL (default .carry/promtool), EXPORTER and SCRAPE_LOAD (default
# the target/release binaries), BENCH_DURATION (default 300 s;
# 0 skips the benchmark), GEMM_SECONDS / ELEMENTWISE_SECONDS (default 20),
# LAT_REPS (default 5), OUT (where results go; default a new temporary folder).
# Results (at most 8 files): validation.log, metrics-first.prom, scrapes.txt,
# validation-table.md, exporter.log, bench-table.md, bench-raw.tar.gz.
# Defaults take about 7.5 minutes.
set -uo pipefail

OUT=${OUT:-$(mktemp -d -t poolprof-h100.XXXXXX)}
PROMTOOL=${PROMTOOL:-.carry/promtool}
BENCH_DURATION=${BENCH_DURATION:-300}
GEMM_SECONDS=${GEMM_SECONDS:-20}
ELEMENTWISE_SECONDS=${ELEMENTWISE_SECONDS:-20}
LAT_REPS=${LAT_REPS:-5}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
SCRAPE_LOAD=${SCRAPE_LOAD:-target/release/scrape-load}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
mkdir -p "$OUT"
LOG="$OUT/validation.log"
: > "$LOG"

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ "$BENCH_DURATION" =~ ^[0-9]+$ ]] || die "BENCH_DURATION=$BENCH_DURATION is not a number of seconds"

EXPORTER_PID=""
cleanup() {
  [[ -n "$EXPORTER_PID" ]] && kill "$EXPORTER_PID" 2>/dev/null
  jobs -p | xargs -r kill 2>/dev/null
  sleep 0.3
  jobs -p | xargs -r kill -9 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM

log "poolprof h100-exporter validation; results in $OUT"
for f in "$EXPORTER" "$SCRAPE_LOAD"; do
  [[ -x "$f" ]] || die "$f is missing: build it (cargo build --release -p poolprof-exporter; cd bench/exporter && CARGO_TARGET_DIR=../../target cargo build --release) and carry it"
done
{
  echo "## device"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,pstate,power.draw,clocks.sm,clocks.mem,mig.mode.current --format=csv 2>&1
  echo "## versions"
  "$EXPORTER" --version 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  uname -a; nproc
} >> "$LOG" 2>&1

if [[ ! -x "$PROMTOOL" ]]; then
  deb=$(ls .carry/prometheus_*.deb 2>/dev/null | head -1)
  if [[ -n "$deb" ]] && dpkg -x "$deb" /tmp/poolprof-prom 2>>"$LOG"; then
    PROMTOOL=/tmp/poolprof-prom/usr/bin/promtool
  fi
fi

# 1. exporter, /metrics, promtool
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])') \
  || die "cannot pick a port"
URL="http://127.0.0.1:$PORT/metrics"
"$EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collect-interval=1s > "$OUT/exporter.log" 2>&1 &
EXPORTER_PID=$!
ready=0
for _ in $(seq 1 100); do
  kill -0 "$EXPORTER_PID" 2>/dev/null || { tail -20 "$OUT/exporter.log" >> "$LOG"; die "exporter exited at start (exporter.log)"; }
  if "$SCRAPE_LOAD" --url "$URL" --get --timeout 2s > /dev/null 2>&1; then ready=1; break; fi
  sleep 0.1
done
(( ready )) || die "exporter did not serve $URL within 10 s"
sleep 3 # two collections, so GPM (two samples) has values
"$SCRAPE_LOAD" --url "$URL" --get --timeout 5s > "$OUT/metrics-first.prom" 2>>"$LOG" || die "GET $URL failed"
log "/metrics: $(wc -c < "$OUT/metrics-first.prom") bytes, $(grep -c '^poolprof_' "$OUT/metrics-first.prom") samples"
grep -E '^poolprof_(gpu_up|gpu_info|exporter_build_info)' "$OUT/metrics-first.prom" | tee -a "$LOG" >&2
failed_collectors=$(grep -E '^poolprof_exporter_collector_success\{.*\} 0' "$OUT/metrics-first.prom")
[[ -z "$failed_collectors" ]] && log "every collector succeeded" || log "collectors failing: $failed_collectors"
if [[ -x "$PROMTOOL" ]]; then
  if lint=$(timeout 30 "$PROMTOOL" check metrics < "$OUT/metrics-first.prom" 2>&1) && [[ -z "$lint" ]]; then
    log "promtool check metrics: clean (printed nothing)"
  else
    log "promtool check metrics: NOT clean:"; echo "$lint" | tee -a "$LOG" >&2
  fi
else
  log "promtool not found at $PROMTOOL (nor a .carry/prometheus_*.deb): lint skipped"
fi

# 2. GEMM then elementwise, scraped every second
log "workload: idle 5 s, GEMM ${GEMM_SECONDS} s, elementwise ${ELEMENTWISE_SECONDS} s"
timeout $(( GEMM_SECONDS + ELEMENTWISE_SECONDS + 120 )) env PYTHONUNBUFFERED=1 python3 docs/validation/h100_workload.py \
  --url "$URL" --scrapes "$OUT/scrapes.txt" --table "$OUT/validation-table.md" \
  --gemm-seconds "$GEMM_SECONDS" --elementwise-seconds "$ELEMENTWISE_SECONDS" 2>&1 | tee -a "$LOG"
workload_rc=${PIPESTATUS[0]}
log "workload exit $workload_rc (0: both checks passed)"
kill -0 "$EXPORTER_PID" 2>/dev/null || die "exporter died during the workload"
"$SCRAPE_LOAD" --url "$URL" --get --timeout 5s > /tmp/poolprof-last.prom 2>/dev/null \
  && grep -E '^poolprof_exporter_collector_(success|duration_seconds)' /tmp/poolprof-last.prom >> "$LOG"
kill "$EXPORTER_PID" 2>/dev/null; wait "$EXPORTER_PID" 2>/dev/null; EXPORTER_PID=""

# 3. benchmark with peers
if (( BENCH_DURATION > 0 )); then
  log "benchmark: ${BENCH_DURATION} s window, then latency ${LAT_REPS} x 5 s per exporter"
  timeout $(( BENCH_DURATION + 240 )) env BENCH_OUT="$OUT" DURATION="$BENCH_DURATION" \
    WINDOW=$(( BENCH_DURATION >= 60 ? 30 : 10 )) LAT_REPS="$LAT_REPS" \
    EXPORTER="$EXPORTER" SCRAPE_LOAD="$SCRAPE_LOAD" EXPORTER_ARGS="" \
    bash bench/exporter/run.sh 2>&1 | tee -a "$LOG"
  log "benchmark exit ${PIPESTATUS[0]}"
fi
log "done; results: $(ls "$OUT" | tr '\n' ' ')"
