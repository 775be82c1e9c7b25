#!/usr/bin/env bash
# Validation and overhead of poolprof's CUPTI injection library on a real GPU (an
# H100 here), in one run of at most about 7 minutes:
#  1. start the release exporter (NVML backend; the simulator if NVML fails) with its
#     kernel listener on a socket in a temporary folder, pinned away from the
#     benchmark's CPUs;
#  2. correctness, tracing every launch: a GPU-bound bf16 GEMM loop (and a training
#     loop), the exporter's kernel time against CUDA-event timing of the same loop
#     (GEMM within 5%);
#  3. overhead WITHIN ONE PROCESS (inject_ab.py): with POOLPROF_INJECT_DUTY=AB_DUTY
#     (default 500/1000) kernel records are on half of every second; every step of a
#     training loop, batch-1 inference and a tiny-kernel loop is timed and classified
#     by poolprof_inject_tracing() read before and after it; traced vs untraced steps
#     give the per-step cost of tracing, and from it the default's overhead;
#  4. the cost of being loaded while off, ACROSS PROCESSES (noisy): rounds of a
#     baseline process and one with the library never tracing (DUTY=0/1000), in
#     alternating order, until BUDGET_S.
# summary.md is rewritten after every stage (a cut-off run still returns tables) and
# printed at the end. Run in the repository root. Needs
# target/release/poolprof-exporter and target/release/libpoolprof_inject.so
# (cargo build --release -p poolprof-exporter -p poolprof-inject) and python3 with torch.
#
# Environment: OUT (results, default a new temporary folder), AB_DUTY (500/1000),
# AB_SECONDS (timed seconds per program in the A/B, default 40), REPS (cross-process
# rounds, default 4), BUDGET_S (no new round starts after this many seconds if it would
# not end before; default 400), SCALE (work per timed region of a cross-process run,
# default 0.6), EXPORTER, INJECT_LIB (default the target/release files), PIN (default 1;
# 0 = no CPU pinning). Results (7 files): kernels.log, exporter.log, validate.json,
# ab.json, bench.jsonl, kernel-metrics.prom, summary.md.
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1
START=$SECONDS

OUT=${OUT:-$(mktemp -d -t poolprof-kernels.XXXXXX)}
REPS=${REPS:-4}
BUDGET_S=${BUDGET_S:-400}
SCALE=${SCALE:-0.6}
AB_DUTY=${AB_DUTY:-500/1000}
AB_SECONDS=${AB_SECONDS:-40}
PIN=${PIN:-1}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
INJECT_LIB=${INJECT_LIB:-target/release/libpoolprof_inject.so}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/kernels.log"
: > "$LOG"
WORKLOADS=${WORKLOADS:-docs/validation/kernels_workloads.py}
AB=${AB:-docs/validation/inject_ab.py}

# GET a URL to stdout (curl may be missing on the GPU machine).
fetch() { python3 -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=5).read().decode())' "$1" 2>/dev/null; }
log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - START))s] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ "$REPS" =~ ^[0-9]+$ ]] && (( REPS >= 1 && REPS <= 50 )) || die "REPS=$REPS is not a number from 1 to 50"
[[ "$BUDGET_S" =~ ^[0-9]+$ ]] || die "BUDGET_S=$BUDGET_S is not a number of seconds"
[[ "$SCALE" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SCALE=$SCALE is not a positive number"
[[ "$AB_DUTY" =~ ^[0-9]+/[0-9]+$ ]] || die "AB_DUTY=$AB_DUTY is not TRACE_MS/PERIOD_MS"
[[ "$AB_SECONDS" =~ ^[0-9]+$ ]] && (( AB_SECONDS >= 5 && AB_SECONDS <= 120 )) \
  || die "AB_SECONDS=$AB_SECONDS is not a number from 5 to 120"

EXPORTER_PID=""
RUNDIR=$(mktemp -d -t poolprof-sock.XXXXXX)
cleanup() {
  [[ -n "$EXPORTER_PID" ]] && kill "$EXPORTER_PID" 2>/dev/null && wait "$EXPORTER_PID" 2>/dev/null
  rm -rf "$RUNDIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[[ -x "$EXPORTER" ]] || die "$EXPORTER missing: cargo build --release -p poolprof-exporter, and carry it"
[[ -f "$INJECT_LIB" ]] || die "$INJECT_LIB missing: cargo build --release -p poolprof-inject, and carry it"
LIB=$(cd "$(dirname "$INJECT_LIB")" && pwd)/$(basename "$INJECT_LIB")
SOCK="$RUNDIR/inject.sock"

log "poolprof h100-kernels; results in $OUT"
BUS_ID=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | head -1 | tr -d ' ')
{
  echo "## device"; nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,pstate,power.draw,clocks.sm,clocks.mem,pci.bus_id --format=csv 2>&1
  echo "## versions"; "$EXPORTER" --version 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"; date -u
  ldconfig -p 2>/dev/null | grep -m2 libcupti
  echo "## host"; nproc; grep -m1 'model name' /proc/cpuinfo
  lscpu 2>/dev/null | grep -E '^(Thread|Core|Socket|NUMA node)' 
  echo "governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo n/a)"
  echo "gpu local cpus: $(cat "/sys/bus/pci/devices/$(echo "${BUS_ID:4}" | tr 'A-F' 'a-f')/local_cpulist" 2>/dev/null || echo n/a)"
  echo "load: $(cat /proc/loadavg)"
  echo "busiest processes:"; ps -eo pid,pcpu,rss,comm --sort=-pcpu 2>/dev/null | head -6
} >> "$LOG" 2>&1

# CPU plan: main thread / other threads of a benchmarked process / the exporter.
MAIN_CPUS="" HELPER_CPUS="" EXPORTER_CPUS=""
if [[ "$PIN" == 1 ]]; then
  read -r MAIN_CPUS HELPER_CPUS EXPORTER_CPUS <<< "$(python3 "$WORKLOADS" cpus --pci-bus-id "$BUS_ID" 2>>"$LOG")"
fi
CPUS_ARG=""
[[ -n "$MAIN_CPUS" && -n "$HELPER_CPUS" ]] && CPUS_ARG="$MAIN_CPUS:$HELPER_CPUS"
log "cpu plan: main thread ${MAIN_CPUS:-any}, other threads ${HELPER_CPUS:-any}, exporter ${EXPORTER_CPUS:-any}"

# 1. exporter with the kernel listener
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])') \
  || die "cannot pick a port"
URL="http://127.0.0.1:$PORT/metrics"
pinned() { # run "$@" on EXPORTER_CPUS (exec keeps the pid)
  if [[ -n "$EXPORTER_CPUS" ]]; then
    python3 -c 'import os,sys; os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(",")}); os.execvp(sys.argv[2], sys.argv[2:])' "$EXPORTER_CPUS" "$@"
  else
    exec "$@"
  fi
}
start_exporter() {
  ( pinned "$EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collect-interval=1s \
    --kernels.socket-path="$SOCK" "$@" ) >> "$OUT/exporter.log" 2>&1 &
  EXPORTER_PID=$!
  for _ in $(seq 1 100); do
    kill -0 "$EXPORTER_PID" 2>/dev/null || return 1
    [[ -S "$SOCK" ]] && fetch "$URL" > /dev/null && return 0
    sleep 0.1
  done
  return 1
}
if ! start_exporter; then
  log "exporter with NVML did not start (exporter.log); trying --simulate 1 (kernel metrics do not need NVML)"
  kill "$EXPORTER_PID" 2>/dev/null; wait "$EXPORTER_PID" 2>/dev/null
  start_exporter --simulate 1 || die "exporter did not serve $URL with a socket at $SOCK"
fi
log "exporter pid $EXPORTER_PID on $URL, kernel socket $SOCK"

inject_env=(CUDA_INJECTION64_PATH="$LIB" POOLPROF_INJECT_SOCKET="$SOCK")
every_launch=(POOLPROF_INJECT_DUTY=always POOLPROF_INJECT_MEMCPY=on)

summarize() { python3 "$AB" summary "$OUT" > "$OUT/summary.md.tmp" 2>> "$LOG" && mv "$OUT/summary.md.tmp" "$OUT/summary.md"; rm -f "$OUT/summary.md.tmp"; }

# 2. correctness
log "validate: GEMM and training loops against CUDA events, every launch traced"
timeout 150 env "${inject_env[@]}" "${every_launch[@]}" POOLPROF_WORKLOAD=h100-validate PYTHONUNBUFFERED=1 \
  python3 "$WORKLOADS" validate --metrics-url "$URL" --workload h100-validate \
  --out "$OUT/validate.json" >> "$LOG" 2>&1
rc=$?
grep -m3 '^poolprof-inject:' "$LOG" >&2 && log "the library stepped aside (see above)"
(( rc == 0 )) || log "validate exited $rc (kernels.log); going on with the overhead"
summarize

# 3. overhead within one process
AB_LIMIT=$(( 3 * (AB_SECONDS + 15) + 40 ))
log "A/B in one process: POOLPROF_INJECT_DUTY=$AB_DUTY, ${AB_SECONDS}s per program (limit ${AB_LIMIT}s)"
timeout "$AB_LIMIT" env "${inject_env[@]}" POOLPROF_INJECT_DUTY="$AB_DUTY" POOLPROF_WORKLOAD=h100-ab \
  PYTHONUNBUFFERED=1 python3 "$AB" ab --seconds "$AB_SECONDS" --cpus "$CPUS_ARG" --out "$OUT/ab.json" >> "$LOG" 2>&1 \
  || log "A/B exited $? (kernels.log); tables hold the programs it finished"
summarize

# 4. loaded but never tracing, across processes (noisy)
kinds=(base lib_never)
: > "$OUT/bench.jsonl"
log "across processes: up to $REPS rounds of ${kinds[*]}, budget ${BUDGET_S}s"
last_round=40
for ((rep = 0; rep < REPS; rep++)); do
  if (( SECONDS - START + last_round > BUDGET_S )); then
    log "stopping after $rep rounds: another (~${last_round}s) would pass the ${BUDGET_S}s budget"
    break
  fi
  round_start=$SECONDS
  for ((k = 0; k < ${#kinds[@]}; k++)); do
    v=${kinds[$(( (k + rep) % ${#kinds[@]} ))]}
    case $v in
      base) envs=() ;;
      lib_never) envs=("${inject_env[@]}" POOLPROF_INJECT_DUTY=0/1000 POOLPROF_WORKLOAD=bench-lib-never) ;;
    esac
    timeout 90 env "${envs[@]}" python3 "$WORKLOADS" bench --variant "$v" --rep "$rep" \
      --cpus "$CPUS_ARG" --scale "$SCALE" --out "$OUT/bench.jsonl" >> "$LOG" 2>&1 \
      || log "bench $v rep $rep failed (kernels.log)"
  done
  last_round=$((SECONDS - round_start))
  log "round $rep took ${last_round}s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  summarize
done
kill -0 "$EXPORTER_PID" 2>/dev/null || log "exporter died during the benchmark"
aside=$(grep -c '^poolprof-inject:' "$LOG")
(( aside == 0 )) || log "the library printed $aside line(s): $(grep -m1 '^poolprof-inject:' "$LOG")"
sleep 1.5  # the last process's final report
fetch "$URL" | grep -E '^(# (HELP|TYPE) )?poolprof_(kernel|memcpy|memset|inject)_' > "$OUT/kernel-metrics.prom"
log "kernel metrics: $(grep -c '^poolprof_' "$OUT/kernel-metrics.prom") samples in kernel-metrics.prom"

# 5. tables
summarize
cat "$OUT/summary.md"
log "done in $((SECONDS - START))s; results: $(ls "$OUT" | tr '\n' ' ')"
