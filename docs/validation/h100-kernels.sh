#!/usr/bin/env bash
# Validation and overhead of poolprof's CUPTI injection library on a real GPU (an
# H100 here), in one run:
#  1. start the release exporter (NVML backend; the simulator if NVML fails) with its
#     kernel listener on a socket in a temporary folder;
#  2. validate: with CUDA_INJECTION64_PATH set, a GPU-bound bf16 GEMM loop and a
#     training loop, comparing the kernel time the exporter reports with CUDA-event
#     timing of the same loop (GEMM within 5%), then the three programs once
#     (training, batch-1 transformer inference, tiny-kernel loop); kernel metrics saved;
#  3. overhead: the three programs as baseline / library / library with a 10% duty
#     cycle / torch.profiler (CUDA activities), one process per run, interleaved in a
#     rotating order, REPS rounds; medians with min-max and the processes' peak RSS.
# Prints short markdown tables. Run in the repository root. Needs
# target/release/poolprof-exporter and target/release/libpoolprof_inject.so
# (cargo build --release -p poolprof-exporter -p poolprof-inject) and python3 with torch.
#
# Environment: OUT (results, default a new temporary folder), REPS (default 7),
# EXPORTER, INJECT_LIB (default the target/release files), DUTY (default 100/1000).
# Results (at most 8 files): kernels.log, exporter.log, validate.json,
# kernel-metrics.prom, bench.jsonl, summary.md. Defaults take about 5 minutes.
set -uo pipefail
export PYTHONDONTWRITEBYTECODE=1

OUT=${OUT:-$(mktemp -d -t poolprof-kernels.XXXXXX)}
REPS=${REPS:-7}
DUTY=${DUTY:-100/1000}
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
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ "$REPS" =~ ^[0-9]+$ ]] && (( REPS >= 1 )) || die "REPS=$REPS is not a positive number"

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
{
  echo "## device"; nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,pstate,power.draw,clocks.sm,clocks.mem --format=csv 2>&1
  echo "## versions"; "$EXPORTER" --version 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)"; date -u
  ldconfig -p 2>/dev/null | grep -m2 libcupti
} >> "$LOG" 2>&1

# 1. exporter with the kernel listener
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])') \
  || die "cannot pick a port"
URL="http://127.0.0.1:$PORT/metrics"
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
  log "exporter with NVML did not start (exporter.log); trying --simulate 1 (kernel metrics do not need NVML)"
  kill "$EXPORTER_PID" 2>/dev/null; wait "$EXPORTER_PID" 2>/dev/null
  start_exporter --simulate 1 || die "exporter did not serve $URL with a socket at $SOCK (is the kernel listener wired in app.rs?)"
fi
log "exporter pid $EXPORTER_PID on $URL, kernel socket $SOCK"

inject_env=(CUDA_INJECTION64_PATH="$LIB" POOLPROF_INJECT_SOCKET="$SOCK")

# 2. validation
log "validate: GEMM loop and training loop against CUDA events, then the three programs"
timeout 240 env "${inject_env[@]}" POOLPROF_WORKLOAD=h100-validate PYTHONUNBUFFERED=1 \
  python3 "$WORKLOADS" validate --metrics-url "$URL" --workload h100-validate \
  --out "$OUT/validate.json" >> "$LOG" 2>&1
rc=$?
grep -m3 '^poolprof-inject:' "$LOG" >&2 && log "the library stepped aside (see above)"
(( rc == 0 )) || die "validate exited $rc (kernels.log)"
fetch "$URL" | grep -E '^(# (HELP|TYPE) )?poolprof_(kernel|memcpy|memset|inject)_' > "$OUT/kernel-metrics.prom"
log "kernel metrics: $(grep -c '^poolprof_' "$OUT/kernel-metrics.prom") samples in kernel-metrics.prom"

# 3. overhead, interleaved with a rotating order
variants=(base lib lib_duty prof)
log "overhead: ${#variants[@]} variants x $REPS rounds, one process each"
: > "$OUT/bench.jsonl"
for ((rep = 0; rep < REPS; rep++)); do
  for ((k = 0; k < ${#variants[@]}; k++)); do
    v=${variants[$(( (k + rep) % ${#variants[@]} ))]}
    case $v in
      base|prof) envs=() ;;
      lib) envs=("${inject_env[@]}" POOLPROF_WORKLOAD=bench-lib) ;;
      lib_duty) envs=("${inject_env[@]}" POOLPROF_WORKLOAD=bench-lib-duty POOLPROF_INJECT_DUTY="$DUTY") ;;
    esac
    timeout 120 env "${envs[@]}" python3 "$WORKLOADS" bench --variant "$v" --rep "$rep" \
      --out "$OUT/bench.jsonl" >> "$LOG" 2>&1 || log "bench $v rep $rep failed (kernels.log)"
  done
done
kill -0 "$EXPORTER_PID" 2>/dev/null || log "exporter died during the benchmark"
fetch "$URL" | grep -E '^poolprof_inject_(dropped|connected|rejected|kernel_sampling)' >> "$LOG"

# 4. tables
python3 - "$OUT" "$DUTY" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
out, duty = sys.argv[1], sys.argv[2]
v = json.load(open(f"{out}/validate.json"))
print(f"## Kernel time: exporter vs CUDA events ({v['device']}, torch {v['torch']})\n")
print("| loop | CUDA events (s) | exporter kernel time (s) | ratio | launches (loop / exporter) |")
print("| --- | ---: | ---: | ---: | --- |")
for r in v["comparisons"]:
    ratio = r["ratio"]
    print(f"| {r['loop']} | {r['event_seconds']:.4f} | {r['exporter_kernel_seconds']:.4f} | "
          f"{ratio:.4f} | {r['loop_launches'] if r['loop_launches'] is not None else '-'} / {r['exporter_launches']:.0f} |")
gemm = v["comparisons"][0]["ratio"]
print(f"\nGEMM loop within 5%: {'yes' if gemm is not None and abs(gemm - 1) <= 0.05 else 'NO'}\n")

# top kernels per workload from the scrape
sys.path.insert(0, "docs/validation")
from kernels_workloads import parse_metrics
rows = [(l.get("workload", ""), l.get("kernel", ""), val)
        for n, l, val in parse_metrics(open(f"{out}/kernel-metrics.prom").read())
        if n == "poolprof_kernel_duration_seconds_total"]
print("## Top kernels of the validation run (exporter, by GPU time)\n")
print("| kernel | seconds |")
print("| --- | ---: |")
for w, k, s in sorted((r for r in rows if r[0] == "h100-validate"), key=lambda r: -r[2])[:10]:
    print(f"| `{k}` | {s:.4f} |")

runs = [json.loads(l) for l in open(f"{out}/bench.jsonl") if l.strip()]
variants = ["base", "lib", "lib_duty", "prof"]
names = {"base": "baseline", "lib": "library (every launch)", "lib_duty": f"library, duty {duty} ms",
         "prof": "torch.profiler (CUDA)"}
print(f"\n## Overhead (wall seconds of the timed loop, median [min-max] of {len(runs) // 4} interleaved runs)\n")
print("| program | " + " | ".join(names[x] for x in variants) + " |")
print("| --- |" + " ---: |" * len(variants))
med = {}
for prog in ["train", "infer", "tiny"]:
    cells = []
    for x in variants:
        vals = [r["seconds"][prog] for r in runs if r["variant"] == x and prog in r["seconds"]]
        if not vals:
            cells.append("-"); continue
        m = statistics.median(vals); med[(prog, x)] = m
        over = "" if x == "base" or (prog, "base") not in med else f" ({(m / med[(prog, 'base')] - 1) * 100:+.1f}%)"
        cells.append(f"{m:.4f} [{min(vals):.4f}-{max(vals):.4f}]{over}")
    print(f"| {prog} | " + " | ".join(cells) + " |")
print("\n## Memory (peak RSS of the process, median)\n")
print("| variant | peak RSS (MiB) | vs baseline (MiB) |")
print("| --- | ---: | ---: |")
base_rss = None
for x in variants:
    vals = [r["rss_peak_bytes"] / 2**20 for r in runs if r["variant"] == x]
    if not vals:
        continue
    m = statistics.median(vals)
    base_rss = m if x == "base" else base_rss
    delta = "" if base_rss is None or x == "base" else f"{m - base_rss:+.1f}"
    print(f"| {names[x]} | {m:.1f} | {delta} |")
EOF
log "done; results: $(ls "$OUT" | tr '\n' ' ')"
