#!/usr/bin/env bash
# Benchmark of poolprof-exporter: CPU time and peak RSS over a window at 1 s
# collection, then /metrics latency under concurrent scrapers, with peers measured
# side by side in the same run (all subjects run at once during the window; the
# latency runs interleave the HTTP subjects, A B A B …).
#
# Run from the repository root:
#   bench/exporter/run.sh                        # here: sim backend, 8 GPUs
#   DURATION=300 bench/exporter/run.sh           # on a GPU node: NVML + peers
#
# Environment (all optional):
#   EXPORTER       poolprof-exporter binary (default target/release, else target/debug)
#   EXPORTER_ARGS  backend flags (default "--simulate 8" where there is no nvidia-smi,
#                  else "" for NVML)
#   EXPORTER_CMD   whole command, {port} replaced (overrides the two above)
#   SCRAPE_LOAD    scrape-load binary (default target/release, else target/debug)
#   PEERS          "auto" (default: floor, dmon and python where they can run), "none",
#                  or any of "floor dmon python"; floor is nvml-floor (this folder's
#                  src/bin): nvmlInit and a handle per GPU, then idle, the least any
#                  NVML client costs, so the summary can say what poolprof adds to it
#   BASELINE_CMD   with "baseline" in PEERS: another exporter's command, {port}
#                  replaced, measured as subject "baseline" (an earlier build of
#                  poolprof-exporter, for a before/after in the same run)
#   NVML_FLOOR     nvml-floor binary (default target/release, else target/debug)
#   GEMM           1: a bf16 GEMM loop (torch) keeps GPU 0 busy during the whole run,
#                  started before the subjects and stopped at exit (default 0)
#   GEMM_SIZE      matrix size of that loop (default 8192)
#   PYTHON_CMD     the Python peer's command, {port} replaced
#   DURATION       seconds of the CPU/RSS window (default 300)
#   WINDOW         seconds per window, for the spread (default 30)
#   SCRAPE_EVERY   seconds between scrapes of each HTTP subject during the window,
#                  as a Prometheus would (default 1; 0: no scrapes)
#   SCRAPE_LIKE_PROMETHEUS  1 (default): window scrapes send Prometheus 2.x's Accept
#                  header (OpenMetrics first) and Accept-Encoding: gzip, over one kept
#                  connection, as a Prometheus server does; 0: plain text, no gzip
#   LAT_SECONDS    seconds per latency run (default 5)
#   LAT_REPS       latency runs per HTTP subject (default 5)
#   CONCURRENCY    scrapers in a latency run (default 50)
#   LAT_GZIP       1: latency runs send Accept-Encoding: gzip, as Prometheus does (default 0)
#   BENCH_OUT      where bench-table.md and bench-raw.tar.gz go (default $OUT, else
#                  a new temporary folder)
# Exit: 0 done, 1 a subject failed to start or died, 2 bad settings.
set -uo pipefail

die() { echo "run.sh: $*" >&2; exit "${2:-1}"; }
num() { [[ "$2" =~ ^[0-9]+$ ]] && (( $2 >= $3 && $2 <= $4 )) || die "$1=$2 must be a whole number from $3 to $4" 2; }

cd "$(dirname "$0")/../.." || die "cannot enter the repository root"
HERE=bench/exporter

DURATION=${DURATION:-300}; WINDOW=${WINDOW:-30}; SCRAPE_EVERY=${SCRAPE_EVERY:-1}
LAT_SECONDS=${LAT_SECONDS:-5}; LAT_REPS=${LAT_REPS:-5}; CONCURRENCY=${CONCURRENCY:-50}; LAT_GZIP=${LAT_GZIP:-0}
num DURATION "$DURATION" 5 3600; num WINDOW "$WINDOW" 1 3600; num SCRAPE_EVERY "$SCRAPE_EVERY" 0 60
GEMM=${GEMM:-0}; GEMM_SIZE=${GEMM_SIZE:-8192}
num GEMM "$GEMM" 0 1; num GEMM_SIZE "$GEMM_SIZE" 256 32768
num LAT_SECONDS "$LAT_SECONDS" 1 600; num LAT_REPS "$LAT_REPS" 1 50; num CONCURRENCY "$CONCURRENCY" 1 1024; num LAT_GZIP "$LAT_GZIP" 0 1
GZIP_FLAG=(); (( LAT_GZIP )) && GZIP_FLAG=(--gzip)
SCRAPE_LIKE_PROMETHEUS=${SCRAPE_LIKE_PROMETHEUS:-1}; num SCRAPE_LIKE_PROMETHEUS "$SCRAPE_LIKE_PROMETHEUS" 0 1
PROMETHEUS_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
WINDOW_FLAGS=(); (( SCRAPE_LIKE_PROMETHEUS )) && WINDOW_FLAGS=(--gzip --accept "$PROMETHEUS_ACCEPT")
(( WINDOW <= DURATION )) || die "WINDOW=$WINDOW is longer than DURATION=$DURATION" 2

pick() { for f in "$@"; do [[ -x "$f" ]] && { echo "$f"; return 0; }; done; return 1; }
EXPORTER=${EXPORTER:-$(pick target/release/poolprof-exporter target/debug/poolprof-exporter)} \
  || die "no poolprof-exporter in target/release or target/debug: cargo build --release -p poolprof-exporter" 2
SCRAPE_LOAD=${SCRAPE_LOAD:-$(pick target/release/scrape-load target/debug/scrape-load)} \
  || die "no scrape-load: (cd $HERE && CARGO_TARGET_DIR=../../target cargo build --release)" 2
NVML_FLOOR=${NVML_FLOOR:-$(pick target/release/nvml-floor target/debug/nvml-floor)}
HAVE_SMI=0; command -v nvidia-smi >/dev/null 2>&1 && HAVE_SMI=1
if [[ -z "${EXPORTER_ARGS+set}" ]]; then
  if (( HAVE_SMI )); then EXPORTER_ARGS=""; else EXPORTER_ARGS="--simulate 8"; fi
fi
EXPORTER_CMD=${EXPORTER_CMD:-"$EXPORTER $EXPORTER_ARGS --web.listen-address=127.0.0.1:{port} --collect-interval=1s"}
PYTHON_CMD=${PYTHON_CMD:-"python3 $HERE/peer_exporter.py --port {port} --interval 1"}
PEERS=${PEERS:-auto}
if [[ "$PEERS" == auto ]]; then
  PEERS=""
  (( HAVE_SMI )) && [[ -x "$NVML_FLOOR" ]] && PEERS="floor"
  (( HAVE_SMI )) && PEERS="$PEERS dmon"
  (( HAVE_SMI )) && python3 -c "import pynvml, prometheus_client" 2>/dev/null && PEERS="$PEERS python"
elif [[ "$PEERS" == none ]]; then
  PEERS=""
fi
for p in $PEERS; do
  [[ "$p" == floor || "$p" == dmon || "$p" == python || "$p" == baseline ]] \
    || die "PEERS: unknown peer '$p' (floor, dmon, python, baseline)" 2
done
if [[ " $PEERS " == *" baseline "* && -z "${BASELINE_CMD:-}" ]]; then
  die "PEERS has baseline but BASELINE_CMD is not set" 2
fi
if [[ " $PEERS " == *" floor "* && ! -x "$NVML_FLOOR" ]]; then
  die "PEERS has floor but there is no nvml-floor: (cd $HERE && CARGO_TARGET_DIR=../../target cargo build --release)" 2
fi

WORK=$(mktemp -d -t poolprof-bench.XXXXXX) || die "mktemp failed"
DEST=${BENCH_OUT:-${OUT:-$(mktemp -d -t poolprof-bench-out.XXXXXX)}}
mkdir -p "$DEST" || die "cannot create $DEST"
CLK_TCK=$(getconf CLK_TCK)

declare -A PID PORT
SUBJECTS=()
BG=()
cleanup() {
  for p in "${BG[@]}" "${PID[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${BG[@]}" "${PID[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
now() { date +%s.%N; }

start_http() { # name command-template
  local port cmd; port=$(free_port) || die "cannot pick a port"
  cmd=${2//\{port\}/$port}
  echo "$1: $cmd" >> "$WORK/meta.txt"
  # shellcheck disable=SC2086 # the command is a word list on purpose
  $cmd > "$WORK/$1.stdout" 2> "$WORK/$1.log" &
  PID[$1]=$!; PORT[$1]=$port; SUBJECTS+=("$1")
}

wait_ready() { # name
  local url="http://127.0.0.1:${PORT[$1]}/metrics" i
  for ((i = 0; i < 300; i++)); do
    kill -0 "${PID[$1]}" 2>/dev/null || { tail -5 "$WORK/$1.log" >&2; die "$1 exited before serving $url"; }
    "$SCRAPE_LOAD" --url "$url" --get --timeout 2s > "$WORK/$1.first.prom" 2>/dev/null \
      && grep -q '^[a-z]' "$WORK/$1.first.prom" && return 0
    sleep 0.1
  done
  die "$1 did not serve $url within 30 s (log: $WORK/$1.log)"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(nproc) CPUs, $(uname -sr)"
  (( HAVE_SMI )) && echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "settings: DURATION=$DURATION WINDOW=$WINDOW SCRAPE_EVERY=$SCRAPE_EVERY GEMM=$GEMM LAT_SECONDS=$LAT_SECONDS LAT_REPS=$LAT_REPS CONCURRENCY=$CONCURRENCY LAT_GZIP=$LAT_GZIP SCRAPE_LIKE_PROMETHEUS=$SCRAPE_LIKE_PROMETHEUS"
} > "$WORK/meta.txt"

# The GEMM loop runs for at most the whole benchmark plus margin even if the trap
# never fires, and writes "ready" once its first product is done.
GEMM_PY='
import signal, sys, time, torch
def stop(*_): raise SystemExit(0)
signal.signal(signal.SIGTERM, stop)
n, deadline, ready = int(sys.argv[1]), time.time() + float(sys.argv[2]), sys.argv[3]
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = a @ b; torch.cuda.synchronize(); open(ready, "w").write("ready\n")
done, t0 = 0, time.time()
try:
    while time.time() < deadline:
        for _ in range(20): c = a @ b
        torch.cuda.synchronize(); done += 20
finally:
    s = time.time() - t0
    print(f"gemm: {done} products {n}^3 bf16 in {s:.0f} s, {2 * n**3 * done / s / 1e12:.0f} TFLOP/s", flush=True)
'
if (( GEMM )); then
  gemm_limit=$(( DURATION + 60 + LAT_REPS * LAT_SECONDS * 4 + 300 ))
  python3 -c "$GEMM_PY" "$GEMM_SIZE" "$gemm_limit" "$WORK/gemm.ready" > "$WORK/gemm.stdout" 2> "$WORK/gemm.log" &
  GEMM_PID=$!; BG+=("$GEMM_PID")
  echo "gemm: python3 torch bf16 ${GEMM_SIZE}^3 matmul loop on cuda:0 (pid $GEMM_PID)" >> "$WORK/meta.txt"
  for ((i = 0; i < 600; i++)); do
    [[ -s "$WORK/gemm.ready" ]] && break
    kill -0 "$GEMM_PID" 2>/dev/null || { tail -5 "$WORK/gemm.log" >&2; die "GEMM=1: the GEMM loop exited before its first product (torch with CUDA needed)"; }
    sleep 0.1
  done
  [[ -s "$WORK/gemm.ready" ]] || die "GEMM=1: the GEMM loop did not start within 60 s (log: $WORK/gemm.log)"
  echo "gemm loop running (pid $GEMM_PID)" >&2
fi

start_http poolprof "$EXPORTER_CMD"
for p in $PEERS; do
  case $p in
    python) start_http python "$PYTHON_CMD" ;;
    baseline) start_http baseline "$BASELINE_CMD" ;;
    floor)
      echo "floor: $NVML_FLOOR" >> "$WORK/meta.txt"
      "$NVML_FLOOR" > "$WORK/floor.stdout" 2> "$WORK/floor.log" &
      PID[floor]=$!; SUBJECTS+=(floor) ;;
    dmon)
      echo "dmon: nvidia-smi dmon -d 1" >> "$WORK/meta.txt"
      nvidia-smi dmon -d 1 > "$WORK/dmon.stdout" 2> "$WORK/dmon.log" &
      PID[dmon]=$!; SUBJECTS+=(dmon) ;;
  esac
done
for s in "${SUBJECTS[@]}"; do [[ -n "${PORT[$s]:-}" ]] && wait_ready "$s"; done
if [[ -n "${PID[floor]:-}" ]]; then # ready once it has said so
  for ((i = 0; i < 300; i++)); do
    grep -q 'NVML started' "$WORK/floor.stdout" 2>/dev/null && break
    kill -0 "${PID[floor]}" 2>/dev/null || { cat "$WORK/floor.log" >&2; die "nvml-floor exited at start"; }
    sleep 0.1
  done
fi
echo "subjects: ${SUBJECTS[*]}; warming up 5 s" >&2
sleep 5

for s in "${SUBJECTS[@]}"; do
  [[ -n "${PORT[$s]:-}" ]] || continue
  bytes=$(wc -c < "$WORK/$s.first.prom"); series=$(grep -c '^[a-zA-Z_]' "$WORK/$s.first.prom")
  printf '%s\t%s\t%s\n' "$s" "$bytes" "$series" >> "$WORK/exposition.tsv"
  if (( SCRAPE_EVERY > 0 )); then
    "$SCRAPE_LOAD" --url "http://127.0.0.1:${PORT[$s]}/metrics" --concurrency 1 --threads 1 \
      --interval "${SCRAPE_EVERY}s" --duration "${DURATION}s" --timeout 5s --format kv "${WINDOW_FLAGS[@]}" \
      > "$WORK/$s.window-scrapes.txt" 2>&1 &
    BG+=($!)
  fi
done

ticks() { # pid -> utime+stime in clock ticks, or nothing if gone
  local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  echo $(( ${12} + ${13} ))
}
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }

echo "measuring CPU and RSS for ${DURATION} s in ${WINDOW} s windows" >&2
declare -A T0
t0=$(now)
for s in "${SUBJECTS[@]}"; do T0[$s]=$(ticks "${PID[$s]}") || die "$s exited before the window"; done
printf 'subject\twindow\tseconds\tticks\trss_kb\n' > "$WORK/cpu.tsv"
elapsed=0; w=0
while (( elapsed < DURATION )); do
  step=$(( DURATION - elapsed < WINDOW ? DURATION - elapsed : WINDOW ))
  sleep "$step"
  elapsed=$(( elapsed + step )); w=$(( w + 1 ))
  t1=$(now); dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  for s in "${SUBJECTS[@]}"; do
    t=$(ticks "${PID[$s]}") || die "$s (pid ${PID[$s]}) died during the window; see $WORK/$s.log"
    printf '%s\t%d\t%s\t%d\t%s\n' "$s" "$w" "$dt" $(( t - T0[$s] )) "$(status_kb "${PID[$s]}" VmRSS)" >> "$WORK/cpu.tsv"
    T0[$s]=$t
  done
  t0=$t1
  echo "  window $w: $(awk -v w="$w" -F'\t' -v hz="$CLK_TCK" '$2 == w { printf "%s %.2f%%  ", $1, 100 * $4 / hz / $3 }' "$WORK/cpu.tsv")" >&2
done
printf 'subject\trss_anon_kb\trss_file_kb\tthreads\n' > "$WORK/memory.tsv"
for s in "${SUBJECTS[@]}"; do
  p=${PID[$s]}
  printf '%s\t%s\n' "$s" "$(status_kb "$p" VmHWM)" >> "$WORK/hwm.tsv"
  printf '%s\t%s\t%s\t%s\n' "$s" "$(status_kb "$p" RssAnon)" "$(status_kb "$p" RssFile)" \
    "$(status_kb "$p" Threads)" >> "$WORK/memory.tsv"
  # Resident memory by mapping, largest first: where a subject's RSS above the floor is.
  awk '/^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6) ? $6 : "[anon]"; next }
       /^Rss:/ { rss[name] += $2 }
       END { for (n in rss) if (rss[n] >= 64) printf "%8d KiB  %s\n", rss[n], n }' \
    "/proc/$p/smaps" 2>/dev/null | sort -rn > "$WORK/$s.smaps.txt"
done

echo "latency: ${LAT_REPS} x ${LAT_SECONDS} s per HTTP subject, ${CONCURRENCY} scrapers" >&2
for ((r = 1; r <= LAT_REPS; r++)); do
  for s in "${SUBJECTS[@]}"; do
    [[ -n "${PORT[$s]:-}" ]] || continue
    kill -0 "${PID[$s]}" 2>/dev/null || die "$s died before latency run $r"
    line=$("$SCRAPE_LOAD" --url "http://127.0.0.1:${PORT[$s]}/metrics" --concurrency "$CONCURRENCY" \
      --threads 4 --duration "${LAT_SECONDS}s" --timeout 5s --format kv "${GZIP_FLAG[@]}" 2>&1 | tail -1)
    printf '%s\t%d\t%s\n' "$s" "$r" "$line" >> "$WORK/latency.tsv"
  done
done

{
  cat "$WORK/meta.txt"
  echo
  python3 "$HERE/summarize.py" "$WORK" "$CLK_TCK"
} > "$DEST/bench-table.md" || die "summarize.py failed on $WORK"
cleanup
[[ -s "$WORK/gemm.stdout" ]] && cat "$WORK/gemm.stdout" >> "$DEST/bench-table.md"
tar -C "$WORK" -czf "$DEST/bench-raw.tar.gz" . 2>/dev/null
cat "$DEST/bench-table.md"
echo "full logs: $DEST/bench-raw.tar.gz" >&2
rm -rf "$WORK"
