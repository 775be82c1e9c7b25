#!/usr/bin/env bash
# Where poolprof-exporter's CPU and memory go on a GPU node, in one run:
#  1. the exporter with NVML and the same binary simulating one GPU, side by side
#     for WINDOW seconds at 1 s collection, scraped once a second: CPU per thread
#     (utime + stime from /proc/PID/task/*/stat), resident memory by mapping
#     (/proc/PID/smaps), and each collector's duration;
#  2. nvml_memory_and_gpm.py: NVML's own memory, step by step, and the CPU of a GPM
#     metrics computation by number of metrics.
# Run in the repository root with target/release/{poolprof-exporter,scrape-load} carried.
# Environment: EXPORTER and SCRAPE_LOAD (default the target/release binaries), WINDOW (default
# 60), NVML_ARGS (extra flags of the NVML exporter; "--simulate 2" tries the script
# without a GPU), OUT (default a new temporary folder). Results: cost.log in OUT.
set -uo pipefail

OUT=${OUT:-$(mktemp -d -t poolprof-cost.XXXXXX)}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
SCRAPE_LOAD=${SCRAPE_LOAD:-target/release/scrape-load}
WINDOW=${WINDOW:-60}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
for f in "$EXPORTER" "$SCRAPE_LOAD"; do
  [[ -x "$f" ]] || { echo "$f is missing: build it (see docs/validation/h100-exporter.sh) and carry it" >&2; exit 1; }
done
get() { "$SCRAPE_LOAD" --url "http://127.0.0.1:$1/metrics" --get --timeout 2s; }
[[ "$WINDOW" =~ ^[0-9]+$ ]] || { echo "WINDOW=$WINDOW is not a number of seconds" >&2; exit 2; }
mkdir -p "$OUT"
LOG="$OUT/cost.log"
exec > >(tee -a "$LOG") 2>&1

PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null' EXIT

ticks() { # pid -> "tid comm ticks" per thread
  for t in /proc/"$1"/task/*; do
    [[ -r "$t/stat" ]] || continue
    local stat; stat=$(cat "$t/stat" 2>/dev/null) || continue
    local rest=${stat##*) }
    local comm=${stat#*(}; comm=${comm%)*}
    read -r -a f <<< "$rest"
    echo "${t##*/} $comm $(( f[11] + f[12] ))"
  done
}

smaps_summary() { # pid -> RSS by mapping, largest first
  awk '
    /^[0-9a-f]+-[0-9a-f]+ / { name = (NF >= 6) ? $6 : "[anon]"; next }
    /^Rss:/ { rss[name] += $2; total += $2 }
    /^Anonymous:/ { anon += $2 }
    END {
      printf "total Rss %d KiB, of it anonymous %d KiB, file-backed %d KiB\n", total, anon, total - anon
      for (n in rss) if (rss[n] >= 128) printf "%8d KiB  %s\n", rss[n], n
    }' "/proc/$1/smaps" | sort -k1,1 -rn -s
}

echo "## $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); commit $(git rev-parse --short HEAD 2>/dev/null); $("$EXPORTER" --version 2>&1 | head -1)"
PORT_NVML=19301; PORT_SIM=19302
"$EXPORTER" ${NVML_ARGS:-} --web.listen-address=127.0.0.1:$PORT_NVML --collect-interval=1s > "$OUT/nvml.log" 2>&1 & PIDS+=($!)
"$EXPORTER" --simulate 1 --no-kernels --web.listen-address=127.0.0.1:$PORT_SIM --collect-interval=1s > "$OUT/sim.log" 2>&1 & PIDS+=($!)
sleep 5
for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || { echo "an exporter exited at start"; cat "$OUT"/*.log; exit 1; }; done
( while sleep 1; do
    get $PORT_NVML > /dev/null 2>&1
    get $PORT_SIM > /dev/null 2>&1
  done ) & PIDS+=($!)
HZ=$(getconf CLK_TCK)
declare -A before
for p in "${PIDS[0]}" "${PIDS[1]}"; do before[$p]=$(ticks "$p"); done
sleep "$WINDOW"
for i in 0 1; do
  p=${PIDS[$i]}; label=$([[ $i == 0 ]] && echo nvml || echo "sim (1 GPU)")
  echo
  echo "### $label: CPU per thread over ${WINDOW} s (% of one core)"
  ticks "$p" | while read -r tid comm t1; do
    t0=$(awk -v tid="$tid" '$1 == tid { print $NF }' <<< "${before[$p]}")
    awk -v c="$comm" -v a="${t0:-0}" -v b="$t1" -v hz="$HZ" -v w="$WINDOW" \
      'BEGIN { printf "%-18s %6.3f%%\n", c, (b - a) * 100 / hz / w }'
  done
  echo "### $label: resident memory by mapping (>= 128 KiB)"
  smaps_summary "$p"
  grep -E '^(VmHWM|VmRSS|RssAnon|RssFile|Threads)' "/proc/$p/status"
done
echo
echo "### nvml: collector durations (seconds, last collection)"
get $PORT_NVML | grep -E '^poolprof_exporter_collector_duration_seconds'
kill "${PIDS[@]}" 2>/dev/null; wait "${PIDS[@]}" 2>/dev/null; PIDS=()
echo
echo "### nvml_memory_and_gpm.py"
python3 docs/validation/nvml_memory_and_gpm.py 50
