#!/usr/bin/env bash
# poolprof-exporter's cost against the restated targets of issue 13, in one command
# on a GPU node: bench/exporter/run.sh with every subject side by side in the same
# run — poolprof-exporter (NVML), nvml-floor (nvmlInit and a handle per GPU, then
# idle: what any NVML client costs a bare process), `nvidia-smi dmon -d 1` and the
# Python exporter on nvidia-ml-py — while a bf16 GEMM loop keeps GPU 0 busy.
# Prints the table, whether the targets are met (CPU at most 0.2% of one core at
# 1 s collection; peak RSS at most 6 MiB above the floor), and where each
# subject's resident memory is.
#
# Run in the repository root. Binaries to carry (built on the development machine):
#   target/release/poolprof-exporter   cargo build --release -p poolprof-exporter
#   target/release/scrape-load         cd bench/exporter && CARGO_TARGET_DIR=../../target cargo build --release
#   target/release/nvml-floor          (the same command builds both)
# Needs nothing installed: python3 with torch for the GEMM, nvidia-ml-py and
# prometheus_client for the Python peer; a peer or the GEMM that cannot run is left
# out, and the script says so. Without a GPU it runs the simulated backend with
# no peers, to try the script (NVML_ARGS="--simulate 1").
#
# Environment: DURATION (default 240 s), WINDOW (30 s), LAT_REPS (3), PEERS (default:
# "floor dmon python", less what cannot run), GEMM (default 1 where torch sees a
# GPU), NVML_ARGS (extra exporter flags), BASELINE (another poolprof-exporter binary,
# e.g. an earlier build, run beside it as subject `baseline` with the same flags; it
# cannot take the kernel socket the first one holds), OUT (results; default a new
# folder). Window scrapes are Prometheus-like (OpenMetrics, gzip, kept connection).
# Defaults take about 5.5 minutes.
set -uo pipefail

cd "$(dirname "$0")/../.." || { echo "h100-cost.sh: cannot enter the repository root" >&2; exit 1; }
DURATION=${DURATION:-240}
WINDOW=${WINDOW:-30}
LAT_REPS=${LAT_REPS:-3}
OUT=${OUT:-$(mktemp -d -t poolprof-cost.XXXXXX)}
note() { echo "h100-cost.sh: $*" >&2; }

missing=()
for f in target/release/poolprof-exporter target/release/scrape-load; do
  [[ -x "$f" ]] || missing+=("$f")
done
if (( ${#missing[@]} )); then
  note "missing ${missing[*]}: build them (see the top of this script) and carry them"
  exit 2
fi

HAVE_GPU=0
nvidia-smi -L > /dev/null 2>&1 && HAVE_GPU=1
if (( HAVE_GPU )); then
  NVML_ARGS=${NVML_ARGS:-}
  want=${PEERS:-floor dmon python}
else
  NVML_ARGS=${NVML_ARGS:---simulate 1}
  want=${PEERS:-}
  note "no GPU here (nvidia-smi -L failed): simulated backend ($NVML_ARGS), no NVML peers, no GEMM"
fi

peers=""
for p in $want; do
  case $p in
    floor)
      if [[ -x target/release/nvml-floor ]]; then peers="$peers floor"
      else note "floor left out: target/release/nvml-floor was not carried"; fi ;;
    dmon)
      if (( HAVE_GPU )); then peers="$peers dmon"; else note "dmon left out: no GPU"; fi ;;
    python)
      if (( HAVE_GPU )) && python3 -c "import pynvml, prometheus_client" 2> /dev/null; then peers="$peers python"
      else note "python peer left out: needs a GPU, nvidia-ml-py and prometheus_client"; fi ;;
    *) note "PEERS: unknown peer '$p' (floor, dmon, python)"; exit 2 ;;
  esac
done

if [[ -z "${GEMM:-}" ]]; then
  GEMM=0
  if (( HAVE_GPU )); then
    if python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then GEMM=1
    else note "GEMM left out: python3 cannot import torch with CUDA; the CPU target asks for one GPU busy"; fi
  fi
fi

BASELINE=${BASELINE:-}
if [[ -n "$BASELINE" ]]; then
  [[ -x "$BASELINE" ]] || { note "BASELINE=$BASELINE is not an executable"; exit 2; }
  peers="$peers baseline"
  export BASELINE_CMD="$BASELINE $NVML_ARGS --web.listen-address=127.0.0.1:{port} --collect-interval=1s"
fi

note "$(date -u +%FT%TZ) DURATION=$DURATION WINDOW=$WINDOW LAT_REPS=$LAT_REPS PEERS='${peers# }' GEMM=$GEMM exporter flags '$NVML_ARGS'; results in $OUT"
mkdir -p "$OUT"
# Latency is measured too (the bench always does), with fewer runs than the default.
EXPORTER_ARGS="$NVML_ARGS" PEERS="${peers:-none}" GEMM="$GEMM" DURATION="$DURATION" WINDOW="$WINDOW" \
  LAT_REPS="$LAT_REPS" LAT_SECONDS=5 BENCH_OUT="$OUT" bash bench/exporter/run.sh
rc=$?
if (( rc != 0 )); then
  note "bench/exporter/run.sh failed (exit $rc); its message is above"
  exit "$rc"
fi

echo
echo "### resident memory by mapping at the end of the window (KiB, largest first)"
RAW=$(mktemp -d -t poolprof-cost-raw.XXXXXX) && tar -C "$RAW" -xzf "$OUT/bench-raw.tar.gz" 2> /dev/null
for s in poolprof baseline floor dmon python; do
  f="$RAW/$s.smaps.txt"
  [[ -s "$f" ]] || continue
  echo "#### $s"
  head -8 "$f"
done
rm -rf "$RAW"
