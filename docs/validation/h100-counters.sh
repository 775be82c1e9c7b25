#!/usr/bin/env bash
# Per-kernel counters of the injection library (POOLPROF_KERNEL_COUNTERS=1) on a real
# GPU (an H100 here), in under 3 minutes:
#  1. start the release exporter (NVML; the simulator if NVML fails: kernel metrics
#     do not need it) with its kernel listener on a socket in a temporary folder;
#  2. run docs/validation/counters_workload.py (a bf16 GEMM of 4096^3 and an fp32 add
#     of two 1 GiB tensors, in a loop) twice with the library injected under its
#     default duty cycle: once with POOLPROF_KERNEL_COUNTERS=1 (then torch.profiler for
#     a few steps: it must still record every kernel), once without;
#  3. scrape /metrics and print, per profiled kernel, the FLOPs and DRAM bytes
#     measured against the expected values (GEMM 2*M*N*K FLOPs; add one FLOP and
#     3x4 bytes per element), the cost in steps/s, and PASS/FAIL lines.
# Run in the repository root. Needs target/release/poolprof-exporter and
# target/release/libpoolprof_inject.so
# (cargo build --release -p poolprof-inject -p poolprof-exporter) and python3 with torch.
# Environment: OUT (results; default a new temporary folder), SECONDS_PER_RUN (20),
# EXPORTER, INJECT_LIB. Results: counters.log, exporter.log, on.json, off.json,
# on.stderr, off.stderr, metrics.prom, summary.md. Exit status 1 when a check fails.
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1
START=$SECONDS

OUT=${OUT:-$(mktemp -d -t poolprof-counters.XXXXXX)}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-20}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
INJECT_LIB=${INJECT_LIB:-target/release/libpoolprof_inject.so}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/counters.log"
: > "$LOG"
WORKLOAD=docs/validation/counters_workload.py

fetch() { python3 -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=5).read().decode())' "$1" 2>/dev/null; }
log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - START))s] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; echo "FAIL $*"; exit 1; }
[[ "$SECONDS_PER_RUN" =~ ^[0-9]+$ ]] && (( SECONDS_PER_RUN >= 5 && SECONDS_PER_RUN <= 60 )) \
  || die "SECONDS_PER_RUN=$SECONDS_PER_RUN is not a number from 5 to 60"
[[ -x "$EXPORTER" ]] || die "$EXPORTER missing: cargo build --release -p poolprof-exporter, and carry it"
[[ -f "$INJECT_LIB" ]] || die "$INJECT_LIB missing: cargo build --release -p poolprof-inject, and carry it"
LIB=$(cd "$(dirname "$INJECT_LIB")" && pwd)/$(basename "$INJECT_LIB")
python3 -c 'import torch; assert torch.cuda.is_available()' 2>> "$LOG" || die "python3 with CUDA torch is needed"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'; } >> "$LOG" 2>&1

EXPORTER_PID=""
cleanup() {
  [[ -n "$EXPORTER_PID" ]] && kill "$EXPORTER_PID" 2>/dev/null && wait "$EXPORTER_PID" 2>/dev/null
}
trap cleanup EXIT

# 1. exporter with the kernel listener
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])') \
  || die "cannot pick a port"
URL="http://127.0.0.1:$PORT/metrics"
SOCK="$OUT/inject.sock"
start_exporter() {
  "$EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collect-interval=1s \
    --kernels.socket-path="$SOCK" "$@" >> "$OUT/exporter.log" 2>&1 &
  EXPORTER_PID=$!
  for _ in $(seq 1 100); do
    kill -0 "$EXPORTER_PID" 2>/dev/null || return 1
    [[ -S "$SOCK" ]] && fetch "$URL" > /dev/null && return 0
    sleep 0.1
  done
  return 1
}
if ! start_exporter; then
  log "exporter with NVML did not start (exporter.log); trying --simulate 1"
  kill "$EXPORTER_PID" 2>/dev/null; wait "$EXPORTER_PID" 2>/dev/null
  start_exporter --simulate 1 || die "exporter did not serve $URL with a socket at $SOCK"
fi
log "exporter pid $EXPORTER_PID on $URL, kernel socket $SOCK"

# 2. the workload with and without counters
inject=(CUDA_INJECTION64_PATH="$LIB" POOLPROF_INJECT_SOCKET="$SOCK")
log "run with POOLPROF_KERNEL_COUNTERS=1 ($SECONDS_PER_RUN s, then torch.profiler)"
env "${inject[@]}" POOLPROF_KERNEL_COUNTERS=1 POOLPROF_WORKLOAD=counters-on \
  timeout 90 python3 "$WORKLOAD" run --seconds "$SECONDS_PER_RUN" --out "$OUT/on.json" --profile-after \
  > /dev/null 2> "$OUT/on.stderr" || die "the run with counters failed (on.stderr: $(tail -n 3 "$OUT/on.stderr"))"
log "run without counters ($SECONDS_PER_RUN s)"
env "${inject[@]}" POOLPROF_WORKLOAD=counters-off \
  timeout 90 python3 "$WORKLOAD" run --seconds "$SECONDS_PER_RUN" --out "$OUT/off.json" \
  > /dev/null 2> "$OUT/off.stderr" || die "the run without counters failed (off.stderr: $(tail -n 3 "$OUT/off.stderr"))"
grep -h "poolprof-inject" "$OUT/on.stderr" "$OUT/off.stderr" | sort | uniq -c | tee -a "$LOG" >&2

# 3. what the exporter publishes (the last windows arrive at exit; give it a moment)
sleep 2
fetch "$URL" > "$OUT/metrics.prom" || die "cannot scrape $URL"
python3 "$WORKLOAD" table --metrics "$OUT/metrics.prom" --on "$OUT/on.json" --off "$OUT/off.json" \
  --workload-on counters-on --workload-off counters-off > "$OUT/summary.md" 2>> "$LOG"
STATUS=$?
if grep -q "kernel counters off" "$OUT/on.stderr"; then
  echo "FAIL the library turned counters off: $(grep -h 'kernel counters off' "$OUT/on.stderr" | head -n 1)" >> "$OUT/summary.md"
  STATUS=1
fi
cat "$OUT/summary.md"
log "done in $((SECONDS - START)) s; results in $OUT"
exit "$STATUS"
