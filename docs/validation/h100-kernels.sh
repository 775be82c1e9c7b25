#!/usr/bin/env bash
# Validation and overhead of poolprof's CUPTI injection library on a real GPU (an
# H100 here), in one run of at most about 9.5 minutes:
#  1. start the release exporter (NVML backend; the simulator if NVML fails) with its
#     kernel listener on a socket in a temporary folder, pinned away from the
#     benchmark's CPUs;
#  2. correctness (VALIDATE=1), tracing every launch: a GPU-bound bf16 GEMM loop, the
#     exporter's kernel time against CUDA-event timing of the same loop (within 5%);
#     sampling accuracy: each program of SAMPLED_STEPS traced at every launch and then
#     sampled, the exporter's totals per process compared; then (MEMCPY_CHECK=1)
#     host-to-device copies of a known size
#     under the library's defaults (sampled): the exporter's scaled-up bytes against
#     the bytes copied;
#  3. overhead WITHIN ONE PROCESS (AB_SECONDS > 0; inject_ab.py): with
#     POOLPROF_INJECT_DUTY=AB_DUTY records are on half of every second; traced vs
#     untraced steps give the per-step cost of tracing;
#  4. overhead ACROSS PROCESSES THAT TAKE TURNS (bench/inject/overhead.py): one process each
#     for the baseline, the library (defaults; without memcpy; never tracing; every
#     launch) and torch.profiler; rounds of one short turn each, in rotating order;
#     SETS sets of fresh processes, as many as fit in BUDGET_S.
# summary.md is rewritten after every stage (a cut-off run still returns tables) and
# printed at the end. Run in the repository root. Needs
# target/release/poolprof-exporter and target/release/libpoolprof_inject.so
# (cargo build --release -p poolprof-exporter -p poolprof-inject) and python3 with torch.
#
# Environment: OUT (results, default a new temporary folder), VALIDATE (1), MEMCPY_CHECK
# (1), AB_DUTY (500/1000), AB_SECONDS (timed seconds per program in the A/B; default 0 =
# skipped), SETS (2), ROUNDS (rounds per program and set, 1..1000, default 30), TURN_SECONDS
# (0.25), VARIANTS (bench/inject/overhead.py's; default base,lib,lib_never,lib_always,prof), PROGRAMS (of
# the turn-taking benchmark; default train,infer,tiny), BUDGET_S (the
# turn-taking benchmark starts no set that would end after this many seconds of the
# run; default 540; 60 or less skips it), SAMPLED_STEPS (programs and steps of the
# sampling accuracy check, each in its own process traced at every launch with
# EVERY_STEPS's steps, then sampled under the library's defaults; defaults
# train=1000,infer=100,tiny=1000 and train=200,infer=20,tiny=200), SAMPLED_SETTLE (15), MEMCPY_SECONDS (10), DUTY_UNDER_TEST (the
# POOLPROF_INJECT_DUTY of those two checks; default the library's), EXPORTER, INJECT_LIB (default the target/release files), PIN
# (default 1; 0 = no CPU pinning). Results: kernels.log, exporter.log, validate.json,
# every-PROGRAM.json, sampled-PROGRAM.json, totals-*.json, memcpy.json, ab.json, overhead.json (+ one log per benchmarked process),
# kernel-metrics.prom, summary.md.
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1
START=$SECONDS

OUT=${OUT:-$(mktemp -d -t poolprof-kernels.XXXXXX)}
VALIDATE=${VALIDATE:-1}
MEMCPY_CHECK=${MEMCPY_CHECK:-1}
EVERY_STEPS=${EVERY_STEPS:-train=200,infer=20,tiny=200}
# A sampled window is reported once its process launched again in a later window
# (a period, 4 s by default; up to three when idle), so sampled checks wait longer.
SAMPLED_SETTLE=${SAMPLED_SETTLE:-15}
SAMPLED_STEPS=${SAMPLED_STEPS:-train=1000,infer=100,tiny=1000}
MEMCPY_SECONDS=${MEMCPY_SECONDS:-10}
DUTY_UNDER_TEST=${DUTY_UNDER_TEST:-}
SETS=${SETS:-2}
ROUNDS=${ROUNDS:-30}
TURN_SECONDS=${TURN_SECONDS:-0.25}
VARIANTS=${VARIANTS:-base,lib,lib_never,lib_always,prof}
PROGRAMS=${PROGRAMS:-train,infer,tiny}
BUDGET_S=${BUDGET_S:-540}
AB_DUTY=${AB_DUTY:-500/1000}
AB_SECONDS=${AB_SECONDS:-0}
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
OVERHEAD=${OVERHEAD:-bench/inject/overhead.py}

# GET a URL to stdout (curl may be missing on the GPU machine).
fetch() { python3 -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=5).read().decode())' "$1" 2>/dev/null; }
log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - START))s] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ "$SETS" =~ ^[0-9]+$ ]] && (( SETS >= 1 && SETS <= 10 )) || die "SETS=$SETS is not a number from 1 to 10"
[[ "$ROUNDS" =~ ^[0-9]+$ ]] && (( ROUNDS >= 1 && ROUNDS <= 1000 )) || die "ROUNDS=$ROUNDS is not a number from 1 to 1000"
[[ "$PROGRAMS" =~ ^(train|infer|tiny)(,(train|infer|tiny))*$ ]] || die "PROGRAMS=$PROGRAMS is not a list of train, infer and tiny"
[[ "$BUDGET_S" =~ ^[0-9]+$ ]] || die "BUDGET_S=$BUDGET_S is not a number of seconds"
[[ "$VALIDATE$MEMCPY_CHECK" =~ ^[01][01]$ ]] || die "VALIDATE and MEMCPY_CHECK are 0 or 1"
steps_re='^((train|infer|tiny)=[0-9]{1,5})(,(train|infer|tiny)=[0-9]{1,5})*$'
[[ "$EVERY_STEPS" =~ $steps_re ]] || die "EVERY_STEPS=$EVERY_STEPS is not PROGRAM=STEPS,... (train, infer, tiny)"
[[ "$SAMPLED_STEPS" =~ $steps_re ]] || die "SAMPLED_STEPS=$SAMPLED_STEPS is not PROGRAM=STEPS,... (train, infer, tiny)"
# Generous seconds for a list of steps (about 12, 140 and 9 ms a step on an H100).
limit_for() { python3 -c 'import sys; ms={"train":30,"infer":300,"tiny":30}
print(60 + sum(ms[k] * int(n) // 1000 + 10 for k, n in (i.split("=") for i in sys.argv[1].split(","))))' "$1"; }
[[ "$MEMCPY_SECONDS" =~ ^[0-9]+$ ]] && (( MEMCPY_SECONDS >= 1 && MEMCPY_SECONDS <= 120 )) \
  || die "MEMCPY_SECONDS=$MEMCPY_SECONDS is not a number from 1 to 120"
[[ -z "$DUTY_UNDER_TEST" || "$DUTY_UNDER_TEST" =~ ^[0-9]+/[0-9]+$ ]] || die "DUTY_UNDER_TEST=$DUTY_UNDER_TEST is not TRACE_MS/PERIOD_MS"
[[ "$AB_DUTY" =~ ^[0-9]+/[0-9]+$ ]] || die "AB_DUTY=$AB_DUTY is not TRACE_MS/PERIOD_MS"
[[ "$AB_SECONDS" =~ ^[0-9]+$ ]] && (( AB_SECONDS == 0 || (AB_SECONDS >= 5 && AB_SECONDS <= 120) )) \
  || die "AB_SECONDS=$AB_SECONDS is 0 (skip) or a number from 5 to 120"

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
sampled_env=("${inject_env[@]}")
[[ -n "$DUTY_UNDER_TEST" ]] && sampled_env+=(POOLPROF_INJECT_DUTY="$DUTY_UNDER_TEST")
every_launch=(POOLPROF_INJECT_DUTY=always POOLPROF_INJECT_MEMCPY=on)

summarize() {
  {
    python3 "$AB" summary "$OUT" 2>> "$LOG"
    if [[ -s "$OUT/overhead.json" ]]; then
      echo "## Overhead across processes taking turns on the GPU"; echo
      python3 "$OVERHEAD" summary "$OUT/overhead.json" 2>> "$LOG"
    fi
  } > "$OUT/summary.md.tmp" && mv "$OUT/summary.md.tmp" "$OUT/summary.md"
  rm -f "$OUT/summary.md.tmp"
}

# 2. correctness
# A program traced at every launch, then sampled under the library's defaults, each in
# its own process with a fixed warm-up, so each process launches a known number of
# kernels; the exporter's totals for each process after it exited are compared, free
# of the up-to-one-period error of counting over an interval.
WARM_STEPS=20
check_program() { # mode (every|sampled), program, steps
  local mode=$1 name=$2 steps=$3 env_=() settle=2.5
  local last=()
  if [[ $mode == every ]]; then env_=("${inject_env[@]}" "${every_launch[@]}")
  else env_=("${sampled_env[@]}"); settle=$SAMPLED_SETTLE; last=(--end-in-window); fi
  log "validate: $name x$steps, $mode"
  timeout "$(limit_for "$name=$steps")" env "${env_[@]}" POOLPROF_WORKLOAD="h100-$mode-$name" PYTHONUNBUFFERED=1 \
    python3 "$WORKLOADS" validate --sampled --steps "$name=$steps" --warm-steps "$WARM_STEPS" --settle "$settle" \
    "${last[@]}" --metrics-url "$URL" --workload "h100-$mode-$name" --out "$OUT/$mode-$name.json" >> "$LOG" 2>&1 \
    || log "$mode $name exited $? (kernels.log); going on"
  python3 "$WORKLOADS" totals --metrics-url "$URL" --workload "h100-$mode-$name" \
    --out "$OUT/totals-$mode-$name.json" >> "$LOG" 2>&1 || log "no totals for $mode $name"
}
if [[ "$VALIDATE" == 1 ]]; then
  log "validate: GEMM loop against CUDA events, every launch traced"
  timeout 120 env "${inject_env[@]}" "${every_launch[@]}" POOLPROF_WORKLOAD=h100-validate PYTHONUNBUFFERED=1 \
    python3 "$WORKLOADS" validate --metrics-url "$URL" --workload h100-validate \
    --steps "" --out "$OUT/validate.json" >> "$LOG" 2>&1
  rc=$?
  grep -m3 '^poolprof-inject:' "$LOG" >&2 && log "the library stepped aside (see above)"
  (( rc == 0 )) || log "validate exited $rc (kernels.log); going on"
  declare -A every_steps
  for item in ${EVERY_STEPS//,/ }; do every_steps[${item%%=*}]=${item#*=}; done
  for item in ${SAMPLED_STEPS//,/ }; do
    name=${item%%=*}
    check_program every "$name" "${every_steps[$name]:-100}"
    check_program sampled "$name" "${item#*=}"
  done
fi
if [[ "$MEMCPY_CHECK" == 1 ]]; then
  log "memcpy: known host-to-device copies under the library's defaults"
  timeout $(( 100 + MEMCPY_SECONDS )) env "${sampled_env[@]}" POOLPROF_WORKLOAD=h100-memcpy PYTHONUNBUFFERED=1 \
    python3 "$WORKLOADS" memcpy --seconds "$MEMCPY_SECONDS" --settle "$SAMPLED_SETTLE" --metrics-url "$URL" --workload h100-memcpy \
    --out "$OUT/memcpy.json" >> "$LOG" 2>&1 || log "memcpy check exited $? (kernels.log); going on"
fi
summarize

# 3. overhead within one process
if (( AB_SECONDS > 0 )); then
  AB_LIMIT=$(( 3 * (AB_SECONDS + 15) + 40 ))
  log "A/B in one process: POOLPROF_INJECT_DUTY=$AB_DUTY, ${AB_SECONDS}s per program (limit ${AB_LIMIT}s)"
  timeout "$AB_LIMIT" env "${inject_env[@]}" POOLPROF_INJECT_DUTY="$AB_DUTY" POOLPROF_WORKLOAD=h100-ab \
    PYTHONUNBUFFERED=1 python3 "$AB" ab --seconds "$AB_SECONDS" --cpus "$CPUS_ARG" --out "$OUT/ab.json" >> "$LOG" 2>&1 \
    || log "A/B exited $? (kernels.log); tables hold the programs it finished"
  summarize
fi

# 4. overhead across processes taking turns
left=$(( BUDGET_S - (SECONDS - START) ))
if (( left > 60 )); then
  log "turns: $SETS set(s) of $VARIANTS; $ROUNDS rounds of ${TURN_SECONDS}s turns per program; ${left}s left"
  timeout $(( left + 60 )) env PYTHONUNBUFFERED=1 POOLPROF_INJECT_SOCKET="$SOCK" python3 "$OVERHEAD" run \
    --lib "$LIB" --socket "$SOCK" --out "$OUT/overhead.json" --sets "$SETS" --rounds "$ROUNDS" \
    --turn-seconds "$TURN_SECONDS" --variants "$VARIANTS" --programs "$PROGRAMS" \
    --cpus "$CPUS_ARG" --budget "$left" >> "$LOG" 2>&1 || log "turns exited $? (kernels.log)"
else
  log "no time left for the turn-taking benchmark (${left}s)"
fi
kill -0 "$EXPORTER_PID" 2>/dev/null || log "exporter died during the benchmark"
aside=$(cat "$LOG" "$OUT"/overhead.json.*.log 2>/dev/null | grep -c "^poolprof-inject:")
(( aside == 0 )) || log "the library printed $aside line(s): $(grep -m1 '^poolprof-inject:' "$LOG")"
sleep 1.5  # the last process's final report
fetch "$URL" | grep -E '^(# (HELP|TYPE) )?poolprof_(kernel|memcpy|memset|inject)_' > "$OUT/kernel-metrics.prom"
log "kernel metrics: $(grep -c '^poolprof_' "$OUT/kernel-metrics.prom") samples in kernel-metrics.prom"

# 5. tables
summarize
cat "$OUT/summary.md"
log "done in $((SECONDS - START))s; results: $(ls "$OUT" | tr '\n' ' ')"
