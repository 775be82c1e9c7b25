#!/bin/bash
# Writes every development output a forecaster change is checked against, one file per
# run, so that two builds compare with compare_runs.py (the sets named in
# docs/benchmarks.md: forecast-eval's 24 development seeds, forecast-fresh's 28, the
# H100 recordings, the tenants set's seeds 1-6; and, where their folders are given as
# laid out by real_hourly.sh, public_series.py and swf_series.py, the real ones'
# development halves). Two runs at a time; 8-9 minutes on 2 cores (session 53).
#
#   bench/analyzer/dev_outputs.sh BENCH OUT [REAL_DEV_DIR...]
#   python3 bench/analyzer/compare_runs.py OUT_BEFORE OUT_AFTER
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BENCH OUT [REAL_DEV_DIR...]" >&2
    exit 2
fi
bench=$(realpath "$1") out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
recordings=$here/../../docs/validation/analyzer/h100-series
mkdir -p "$out"
{
    for s in 1 3 5 7 11 13 17 19 $(seq 21 36); do
        echo "forecast-eval --seed $s --per-class 50 --threads 1 > $out/eval-$s.md"
    done
    for s in 1 2 9 10 $(seq 12 35); do
        echo "forecast-fresh --seed $s --per-class 40 --threads 1 > $out/fresh-$s.md"
    done
    echo "forecast-recorded $recordings/run1 $recordings/run2 $recordings/run3 --threads 1 > $out/recorded.md"
    for s in 1 2 3 4 5 6; do
        echo "forecast-tenants --seed $s --threads 1 > $out/tenants-$s.md"
    done
    for dir in "$@"; do
        name=$(echo "$dir" | tr -c 'A-Za-z0-9\n' '_')
        echo "forecast-public $(realpath "$dir") --threads 1 > $out/public-$name.md"
    done
} | xargs -P 2 -I{} sh -c "\"$bench\" {} 2>/dev/null"
echo "$(ls "$out" | wc -l) outputs in $out" >&2
