#!/usr/bin/env bash
# Validation and overhead of poolprof's CUPTI injection library on a real GPU (an
# H100 here), in one run of about 7 minutes:
#  1. start the release exporter (NVML backend; the simulator if NVML fails) with its
#     kernel listener on a socket in a temporary folder, pinned away from the
#     benchmark's CPUs;
#  2. validate, tracing every launch: a GPU-bound bf16 GEMM loop and a training loop,
#     the exporter's kernel time against CUDA-event timing of the same loop (GEMM
#     within 5%); then with the default settings (a duty cycle) the training loop
#     again, for the accuracy of the scaled-up counts;
#  3. overhead: training loop, batch-1 transformer inference and a tiny-kernel loop in
#     one process per variant: baseline (then torch.profiler with CUDA activities, in
#     the same process), the library with its defaults, and the library tracing every
#     launch with memcpy/memset (the first run's settings). Rounds of the three
#     processes in a rotating order, REPS rounds or until BUDGET_S; each program
#     warmed up outside the timing, then a fixed amount of work timed in segments;
#     the main thread on a core of its own near the GPU (see kernels_workloads.py).
# Prints short markdown tables (summary.md). Run in the repository root. Needs
# target/release/poolprof-exporter and target/release/libpoolprof_inject.so
# (cargo build --release -p poolprof-exporter -p poolprof-inject) and python3 with torch.
#
# Environment: OUT (results, default a new temporary folder), REPS (default 7),
# BUDGET_S (no new round starts after this many seconds if it would not end before;
# default 450), SCALE (work per timed region, default 1 = about 2.5 s per program),
# EXPORTER, INJECT_LIB (default the target/release files), PIN (default 1; 0 = no
# CPU pinning). Results (7 files): kernels.log, exporter.log, validate.json,
# validate-sampled.json, kernel-metrics.prom, bench.jsonl, summary.md.
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1
START=$SECONDS

OUT=${OUT:-$(mktemp -d -t poolprof-kernels.XXXXXX)}
REPS=${REPS:-7}
BUDGET_S=${BUDGET_S:-450}
SCALE=${SCALE:-1}
PIN=${PIN:-1}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
INJECT_LIB=${INJECT_LIB:-target/release/libpoolprof_inject.so}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/kernels.log"
: > "$LOG"
WORKLOADS=${WORKLOADS:-docs/validation/kernels_workloads.py}

# GET a URL to stdout (curl may be missing on the GPU machine).
fetch() { python3 -c 'import sys,urllib.request;sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=5).read().decode())' "$1" 2>/dev/null; }
log() { echo "[$(date -u +%H:%M:%S) +$((SECONDS - START))s] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ "$REPS" =~ ^[0-9]+$ ]] && (( REPS >= 1 && REPS <= 50 )) || die "REPS=$REPS is not a number from 1 to 50"
[[ "$BUDGET_S" =~ ^[0-9]+$ ]] || die "BUDGET_S=$BUDGET_S is not a number of seconds"
[[ "$SCALE" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SCALE=$SCALE is not a positive number"

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

# 2. validation
log "validate: GEMM and training loops against CUDA events, every launch traced"
timeout 150 env "${inject_env[@]}" "${every_launch[@]}" POOLPROF_WORKLOAD=h100-validate PYTHONUNBUFFERED=1 \
  python3 "$WORKLOADS" validate --metrics-url "$URL" --workload h100-validate \
  --out "$OUT/validate.json" >> "$LOG" 2>&1
rc=$?
grep -m3 '^poolprof-inject:' "$LOG" >&2 && log "the library stepped aside (see above)"
(( rc == 0 )) || die "validate exited $rc (kernels.log)"
log "validate: training loop with the default settings (duty cycle), scaled-up counts"
timeout 150 env "${inject_env[@]}" POOLPROF_WORKLOAD=h100-sampled PYTHONUNBUFFERED=1 \
  python3 "$WORKLOADS" validate --sampled --train-iterations 1000 --metrics-url "$URL" \
  --workload h100-sampled --out "$OUT/validate-sampled.json" >> "$LOG" 2>&1 \
  || log "sampled validation failed (kernels.log); going on with the benchmark"

# 3. overhead: rounds of three processes in a rotating order
kinds=(base lib lib_always)
: > "$OUT/bench.jsonl"
summarize() { python3 - "$OUT" "$REPS" > "$OUT/summary.md" 2>> "$LOG" <<'EOF'
import json, statistics as st, sys
sys.path.insert(0, "docs/validation")
from kernels_workloads import parse_metrics
out, reps = sys.argv[1], int(sys.argv[2])
def load(name):
    try:
        return json.load(open(f"{out}/{name}"))
    except (OSError, ValueError):
        return None
v, vs = load("validate.json"), load("validate-sampled.json")
if v:
    print(f"## Kernel time: exporter vs CUDA events ({v['device']}, torch {v['torch']})\n")
    print("| loop | library settings | CUDA events (s) | exporter kernel time (s) | ratio | launches (loop / exporter) |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for doc, setting in ((v, "every launch"), (vs, "default (sampled, scaled up)")):
        for r in (doc or {}).get("comparisons", []):
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.4f}"
            print(f"| {r['loop']} | {setting} | {r['event_seconds']:.4f} | {r['exporter_kernel_seconds']:.4f} | "
                  f"{ratio} | {r['loop_launches'] if r['loop_launches'] is not None else '-'} / {r['exporter_launches']:.0f} |")
    gemm = v["comparisons"][0]["ratio"]
    print(f"\nGEMM loop within 5%: {'yes' if gemm is not None and abs(gemm - 1) <= 0.05 else 'NO'}. "
          "The training loop's events also count the gaps between kernels.")
    if vs and len(v["comparisons"]) > 1 and vs["comparisons"]:
        full, samp = v["comparisons"][1], vs["comparisons"][0]
        per = lambda r, k: r[k] / r["iterations"] if r.get("iterations") else None
        ks, kf = per(samp, "exporter_kernel_seconds"), per(full, "exporter_kernel_seconds")
        ls, lf = per(samp, "exporter_launches"), per(full, "exporter_launches")
        if ks and kf and ls and lf:
            print(f"Training loop, sampled (scaled up) / every launch, per step: kernel time {ks / kf:.3f}, "
                  f"launches {ls / lf:.3f} (1 = the sample is unbiased).")
    print()
try:
    metrics = parse_metrics(open(f"{out}/kernel-metrics.prom").read())
except OSError:
    metrics = []
runs = [json.loads(l) for l in open(f"{out}/bench.jsonl") if l.strip()]
variants = [x for x in ["base", "lib", "lib_always", "prof"] if any(r["variant"] == x for r in runs)]
names = {"base": "baseline", "lib": "library, defaults", "lib_always": "library, every launch + memcpy",
         "prof": "torch.profiler (CUDA)"}
progs = ["train", "infer", "tiny"]
def per_step(r, p):
    t = r["programs"].get(p)
    return None if not t else t["seconds"] / t["steps"]
def vals(x, p):
    return [s for r in runs if r["variant"] == x for s in [per_step(r, p)] if s]
def rng(xs, f="{:.3f}"):
    return f"{f.format(st.median(xs))} [{f.format(min(xs))}-{f.format(max(xs))}]" if xs else "-"
rounds = max((r["rep"] for r in runs), default=-1) + 1
print(f"## Time per step (ms): median [min-max] over processes ({rounds} of {reps} rounds ran)\n")
print("| program | " + " | ".join(names[x] for x in variants) + " | baseline spread |")
print("| --- |" + " ---: |" * (len(variants) + 1))
for p in progs:
    cells = [rng([s * 1e3 for s in vals(x, p)]) for x in variants]
    b = vals("base", p)
    spread = f"{(max(b) - min(b)) / st.median(b) * 100:.1f}%" if b else "-"
    print(f"| {p} | " + " | ".join(cells) + f" | {spread} |")
print("\n## Overhead vs baseline: median [min-max] of the per-round ratios (same round, adjacent processes)\n")
others = [x for x in variants if x != "base"]
print("| program | " + " | ".join(names[x] for x in others) + " | baseline within-process CV |")
print("| --- |" + " ---: |" * (len(others) + 1))
for p in progs:
    base = {r["rep"]: per_step(r, p) for r in runs if r["variant"] == "base" and per_step(r, p)}
    cells = []
    for x in others:
        ratios = [per_step(r, p) / base[r["rep"]] - 1 for r in runs
                  if r["variant"] == x and r["rep"] in base and per_step(r, p)]
        cells.append(f"{st.median(ratios) * 100:+.1f}% [{min(ratios) * 100:+.1f}, {max(ratios) * 100:+.1f}]" if ratios else "-")
    cvs = [st.pstdev(t["segments"]) / st.mean(t["segments"]) for r in runs if r["variant"] == "base"
           for t in [r["programs"].get(p)] if t and len(t["segments"]) > 1]
    cv = f"{st.median(cvs) * 100:.1f}%" if cvs else "-"
    print(f"| {p} | " + " | ".join(cells) + f" | {cv} |")
print("\n## CPU and memory (medians over processes)\n")
print("| variant | main thread CPU / wall | other threads CPU / wall | SM clock after timing (MHz) | peak RSS (MiB) |")
print("| --- | ---: | ---: | ---: | ---: |")
for x in variants:
    rs = [r for r in runs if r["variant"] == x]
    wall = [sum(t["seconds"] for t in r["programs"].values()) for r in rs]
    main = [sum(t["main_cpu_s"] for t in r["programs"].values()) / w for r, w in zip(rs, wall) if w]
    other = [sum(t["other_cpu_s"] for t in r["programs"].values()) / w for r, w in zip(rs, wall) if w]
    clk = [t["clocks_mhz"][0] for r in rs for t in r["programs"].values() if t.get("clocks_mhz")]
    rss = [r["rss_peak_bytes"] / 2**20 for r in rs]
    print(f"| {names[x]} | {st.median(main):.2f} | {st.median(other):.3f} | "
          f"{st.median(clk) if clk else 0:.0f} | {st.median(rss):.0f} |" if main else f"| {names[x]} | - | - | - | - |")
dropped = {l.get("workload"): val for n, l, val in metrics if n == "poolprof_inject_dropped_records_total"}
launches = {}
for n, l, val in metrics:
    if n == "poolprof_kernel_launches_total":
        launches[l.get("workload")] = launches.get(l.get("workload"), 0) + val
if launches:
    print("\n## Exporter's view per workload (launches scaled up when sampled)\n")
    print("| workload | launches | dropped records |")
    print("| --- | ---: | ---: |")
    for w in sorted(launches):
        print(f"| {w} | {launches[w]:.0f} | {dropped.get(w, 0):.0f} |")
if v:
    rows = sorted(((l.get("kernel", ""), val) for n, l, val in metrics
                   if n == "poolprof_kernel_duration_seconds_total" and l.get("workload") == "h100-validate"),
                  key=lambda r: -r[1])[:8]
    if rows:
        print("\n## Top kernels of the validation run (exporter, by GPU time)\n")
        print("| kernel | seconds |")
        print("| --- | ---: |")
        for k, s in rows:
            print(f"| `{k}` | {s:.4f} |")
EOF
}

log "overhead: up to $REPS rounds of ${kinds[*]} (+ torch.profiler in the baseline process), budget ${BUDGET_S}s"
last_round=60
for ((rep = 0; rep < REPS; rep++)); do
  if (( SECONDS - START + last_round > BUDGET_S )); then
    log "stopping after $rep rounds: another (~${last_round}s) would pass the ${BUDGET_S}s budget"
    break
  fi
  round_start=$SECONDS
  for ((k = 0; k < ${#kinds[@]}; k++)); do
    v=${kinds[$(( (k + rep) % ${#kinds[@]} ))]}
    extra=()
    case $v in
      base) envs=(); extra=(--with-prof) ;;
      lib) envs=("${inject_env[@]}" POOLPROF_WORKLOAD=bench-lib) ;;
      lib_always) envs=("${inject_env[@]}" "${every_launch[@]}" POOLPROF_WORKLOAD=bench-lib-always) ;;
    esac
    timeout 150 env "${envs[@]}" python3 "$WORKLOADS" bench --variant "$v" "${extra[@]}" --rep "$rep" \
      --cpus "$CPUS_ARG" --scale "$SCALE" --out "$OUT/bench.jsonl" >> "$LOG" 2>&1 \
      || log "bench $v rep $rep failed (kernels.log)"
  done
  last_round=$((SECONDS - round_start))
  log "round $rep took ${last_round}s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  summarize
done
kill -0 "$EXPORTER_PID" 2>/dev/null || log "exporter died during the benchmark"
aside=$(grep -c '^poolprof-inject:' "$LOG")
(( aside == 0 )) || log "the library printed $aside line(s) in benchmarked processes: $(grep -m1 '^poolprof-inject:' "$LOG")"
sleep 1.5  # the last process's final report
fetch "$URL" | grep -E '^(# (HELP|TYPE) )?poolprof_(kernel|memcpy|memset|inject)_' > "$OUT/kernel-metrics.prom"
log "kernel metrics: $(grep -c '^poolprof_' "$OUT/kernel-metrics.prom") samples in kernel-metrics.prom"

# 4. tables
summarize
cat "$OUT/summary.md"
log "done in $((SECONDS - START))s; results: $(ls "$OUT" | tr '\n' ' ')"
