#!/usr/bin/env bash
# Co-location measurements on a real GPU (an H100 here), one step per run. In every
# mode the exporter publishes the programs' metrics and a Prometheus (Debian's package,
# carried as .carry/prometheus_*.deb) scrapes it every second.
#   MODE=profile each program alone for PROFILE_SECONDS under the injection library,
#            GAP_SECONDS apart (sampled kernel counters arrive seconds late); then
#            poolprof-analyzer builds the profiles from Prometheus (profiles.json) and
#            predicts every pair (predictions.json): predictions come before any pair runs.
#   MODE=ts  time-slicing (the default: two processes, no MPS), injection library on.
#   MODE=mps the MPS control daemon runs; the programs join it (no injection library).
#            With MPS_LIMIT=P (1-100): first every program alone without a limit
#            (runs-mps-reference.jsonl), then alone and every pair with each client
#            limited to P% of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), in
#            runs-mps-limitP.jsonl.
# In profile mode, also kernels-PROGRAM.csv (Orion's format) and .json per program
# (`poolprof-analyzer kernels`).
# In ts and mps, bench/workloads/corun.py measures each program alone and every pair at
# once, REPS times, alone runs before, between and after. Results in $OUT: runs-MODE.jsonl
# (one line per run), summary-MODE.md, colocation-MODE.log, exporter-MODE.log, and
# prom-MODE.tgz (Prometheus' data folder: run a Prometheus on it to query the window).
# Run in the repository root. Needs target/release/poolprof-exporter,
# target/release/libpoolprof_inject.so, target/release/poolprof-analyzer (profile) and
# python3 with torch, torchvision, transformers.
#
# Environment: MODE (ts|mps), OUT, PROGRAMS (default all), SECONDS_PER_RUN (3), REPS (2),
# PROFILE_SECONDS (12), GAP_SECONDS (8), BUDGET_S (the co-run schedule starts nothing
# that would end later; default 480).
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1
START=$SECONDS
MODE=${MODE:-ts}
OUT=${OUT:-$(mktemp -d -t poolprof-colocation.XXXXXX)}
SECS=${SECONDS_PER_RUN:-3}
REPS=${REPS:-2}
PROGRAMS=${PROGRAMS:-}
BUDGET_S=${BUDGET_S:-480}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
INJECT_LIB=${INJECT_LIB:-target/release/libpoolprof_inject.so}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
LOG="$OUT/colocation-$MODE.log"; : > "$LOG"
log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - START))s] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
PROFILE_SECONDS=${PROFILE_SECONDS:-12}
GAP_SECONDS=${GAP_SECONDS:-8}
ANALYZER=${ANALYZER:-target/release/poolprof-analyzer}
[[ "$MODE" =~ ^(profile|ts|mps)$ ]] || die "MODE=$MODE is profile, ts or mps"
[[ "$MODE" != profile || -x "$ANALYZER" ]] || die "$ANALYZER missing: cargo build --release, and carry it"
[[ "$SECS" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SECONDS_PER_RUN=$SECS is not a number"
[[ "$REPS" =~ ^[1-5]$ ]] || die "REPS=$REPS is 1 to 5"
MPS_LIMIT=${MPS_LIMIT:-}
[[ -z "$MPS_LIMIT" || ( "$MODE" == mps && "$MPS_LIMIT" =~ ^[1-9][0-9]?$|^100$ ) ]] \
  || die "MPS_LIMIT=$MPS_LIMIT: a percentage 1-100, with MODE=mps"
[[ -x "$EXPORTER" ]] || die "$EXPORTER missing: cargo build --release, and carry it"
[[ -f "$INJECT_LIB" ]] || die "$INJECT_LIB missing: cargo build --release, and carry it"
LIB=$(cd "$(dirname "$INJECT_LIB")" && pwd)/$(basename "$INJECT_LIB")

RUNDIR=$(mktemp -d -t poolprof-colo.XXXXXX)
SOCK="$RUNDIR/inject.sock"
PROMDATA="$RUNDIR/prom-$MODE"
EXPORTER_PID="" PROM_PID="" MPS_ON=0
cleanup() {
  [[ "$MPS_ON" == 1 ]] && { echo quit | nvidia-cuda-mps-control; MPS_ON=0; }
  [[ -n "$PROM_PID" ]] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  [[ -n "$EXPORTER_PID" ]] && kill "$EXPORTER_PID" 2>/dev/null && wait "$EXPORTER_PID" 2>/dev/null
  rm -rf "$RUNDIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

{
  echo "## device"; nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,pstate,power.draw,clocks.sm,clocks.mem,compute_mode,mig.mode.current --format=csv
  echo "## versions"; "$EXPORTER" --version
  python3 -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "torchvision", torchvision.__version__, "transformers", transformers.__version__)'
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"; date -u
  echo "## host"; nproc; grep -m1 'model name' /proc/cpuinfo; echo "load: $(cat /proc/loadavg)"
} >> "$LOG" 2>&1

pick_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PORT=$(pick_port) || die "cannot pick a port"
"$EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collect-interval=1s \
  --kernels.socket-path="$SOCK" >> "$OUT/exporter-$MODE.log" 2>&1 &
EXPORTER_PID=$!

deb=$(ls .carry/prometheus_*.deb 2>/dev/null | head -1)
if [[ -n "$deb" ]] && dpkg -x "$deb" /tmp/poolprof-prom >> "$LOG" 2>&1; then
  PPORT=$(pick_port)
  cat > "$RUNDIR/prometheus.yml" <<EOF
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: poolprof-exporter
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
EOF
  /tmp/poolprof-prom/usr/bin/prometheus --config.file="$RUNDIR/prometheus.yml" \
    --storage.tsdb.path="$PROMDATA" --web.listen-address="127.0.0.1:$PPORT" \
    --storage.tsdb.retention.time=1d >> "$OUT/prometheus-$MODE.log" 2>&1 &
  PROM_PID=$!
  log "prometheus on 127.0.0.1:$PPORT"
else
  log "no .carry/prometheus_*.deb: no Prometheus (the run's results come without profiles)"
fi
for _ in $(seq 50); do
  python3 -c "import urllib.request;urllib.request.urlopen('http://127.0.0.1:$PORT/metrics',timeout=1)" 2>/dev/null && break
  sleep 0.2
done
log "exporter on 127.0.0.1:$PORT (pid $EXPORTER_PID)"

WORKER_ENV=()
if [[ "$MODE" != mps ]]; then
  WORKER_ENV=(CUDA_INJECTION64_PATH="$LIB" POOLPROF_INJECT_SOCKET="$SOCK")
else
  export CUDA_MPS_PIPE_DIRECTORY="$RUNDIR/mps" CUDA_MPS_LOG_DIRECTORY="$RUNDIR/mpslog"
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || die "cannot start the MPS control daemon"
  MPS_ON=1
  log "MPS control daemon started"
fi

if [[ "$MODE" == profile ]]; then
  log "profiles: ${PROFILE_SECONDS}s alone each, ${GAP_SECONDS}s apart"
  P0=$(date +%s)
  env "${WORKER_ENV[@]}" python3 bench/workloads/corun.py --out "$OUT/runs-$MODE.jsonl" \
    --label "$MODE" --only-profile --profile-seconds "$PROFILE_SECONDS" --gap "$GAP_SECONDS" \
    --budget "$BUDGET_S" ${PROGRAMS:+--programs "$PROGRAMS"} 2>> "$LOG" || log "corun.py failed (exit $?)"
  sleep 3  # the last scrape
  P1=$(date +%s)
  "$ANALYZER" profiles --prometheus "http://127.0.0.1:$PPORT" --lookback "$((P1 - P0 + 5))s" \
    --step 1s --end "$P1" > "$OUT/profiles.json" 2>> "$LOG" || log "profiles failed (exit $?)"
  "$ANALYZER" colocate --input "$OUT/profiles.json" > "$OUT/predictions.json" 2>> "$LOG" \
    || log "colocate failed (exit $?)"
  for w in $(python3 -c 'import json,sys;[print(p["workload"]) for p in json.load(open(sys.argv[1]))["profiles"] if p.get("kernels")]' "$OUT/profiles.json" 2>> "$LOG"); do
    "$ANALYZER" kernels --input "$OUT/profiles.json" --workload "$w" --format orion > "$OUT/kernels-$w.csv" 2>> "$LOG" || log "kernels $w failed"
    "$ANALYZER" kernels --input "$OUT/profiles.json" --workload "$w" > "$OUT/kernels-$w.json" 2>> "$LOG" || log "kernels $w (json) failed"
  done
  python3 - "$OUT/predictions.json" > "$OUT/summary-$MODE.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("| pair | time-slicing | mps | recommended | verdict |")
print("| --- | --- | --- | --- | --- |")
for p in d["pairs"]:
    m = {x["mode"]: x for x in p["modes"]}
    f = lambda x: f'{x["progress_a"]:.2f} / {x["progress_b"]:.2f}' if x["feasible"] else "no"
    print(f'| {p["workload_a"]} + {p["workload_b"]} | {f(m["time_slicing"])} | {f(m["mps"])} | {p["recommended_mode"]} | {p["recommendation"]} |')
PY
elif [[ -n "$MPS_LIMIT" ]]; then
  log "MPS reference: alone without limits, ${SECS}s runs"
  python3 bench/workloads/corun.py --out "$OUT/runs-mps-reference.jsonl" --label mps \
    --alone-only --seconds "$SECS" --reps 2 --budget "$BUDGET_S" \
    ${PROGRAMS:+--programs "$PROGRAMS"} > "$OUT/summary-mps-reference.md" 2>> "$LOG" || log "corun.py failed (exit $?)"
  log "MPS with every client limited to $MPS_LIMIT% of the SMs, ${SECS}s runs, $REPS reps"
  CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$MPS_LIMIT python3 bench/workloads/corun.py \
    --out "$OUT/runs-mps-limit$MPS_LIMIT.jsonl" --label "mps-limit$MPS_LIMIT" \
    --seconds "$SECS" --reps "$REPS" --budget "$((BUDGET_S - (SECONDS - START)))" \
    ${PROGRAMS:+--programs "$PROGRAMS"} > "$OUT/summary-$MODE.md" 2>> "$LOG" || log "corun.py failed (exit $?)"
else
  log "co-run: mode $MODE, ${SECS}s runs, $REPS reps, budget ${BUDGET_S}s"
  env "${WORKER_ENV[@]}" python3 bench/workloads/corun.py --out "$OUT/runs-$MODE.jsonl" \
    --label "$MODE" --seconds "$SECS" --reps "$REPS" --budget "$BUDGET_S" \
    ${PROGRAMS:+--programs "$PROGRAMS"} > "$OUT/summary-$MODE.md" 2>> "$LOG" || log "corun.py failed (exit $?)"
fi
[[ "$MODE" == mps ]] && grep -h "" "$CUDA_MPS_LOG_DIRECTORY"/control.log 2>/dev/null | tail -5 >> "$LOG"
python3 -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics',timeout=5).read().decode())" \
  > "$RUNDIR/last.prom" 2>/dev/null && grep -c '^poolprof_' "$RUNDIR/last.prom" | sed 's/^/exporter series at the end: /' >> "$LOG"
if [[ -n "$PROM_PID" ]]; then
  kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null; PROM_PID=""
  tar -C "$RUNDIR" -czf "$OUT/prom-$MODE.tgz" "prom-$MODE" && log "prometheus data: $(du -h "$OUT/prom-$MODE.tgz" | cut -f1)"
fi
log "done"
cat "$OUT/summary-$MODE.md"
