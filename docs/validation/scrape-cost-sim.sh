#!/usr/bin/env bash
# CPU per collection interval of exporter builds on the simulated backend, idle and
# scraped like Prometheus (OpenMetrics, gzip, a kept connection), to compare what a
# scrape costs between builds without a GPU. Each build runs alone: 1 simulated GPU,
# 100 ms collection, scraped every 100 ms (each scrape meets a new snapshot); CPU
# from /proc/PID/task/*/schedstat over DURATION (default 20), ROUNDS rounds (default 2).
#
# usage: docs/validation/scrape-cost-sim.sh NAME=BINARY [NAME=BINARY ...]
# Needs target/release/scrape-load (cd bench/exporter && CARGO_TARGET_DIR=../../target cargo build --release).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
SECONDS_RUN=${DURATION:-20}; ROUNDS=${ROUNDS:-2}; PORT=${PORT:-19779}
LOAD=target/release/scrape-load
[[ -x $LOAD ]] || { echo "scrape-cost-sim.sh: build $LOAD first" >&2; exit 2; }
(( $# )) || { echo "usage: $0 NAME=BINARY ..." >&2; exit 2; }
ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
intervals=$((SECONDS_RUN * 10))
echo "| build | round | idle µs per interval | scraped µs per interval | a scrape costs µs |"
echo "| --- | ---: | ---: | ---: | ---: |"
for round in $(seq "$ROUNDS"); do
  for pair in "$@"; do
    name=${pair%%=*} bin=${pair#*=}
    [[ -x $bin ]] || { echo "scrape-cost-sim.sh: $bin is not an executable" >&2; exit 2; }
    "$bin" --simulate 1 --no-kernels --web.listen-address="127.0.0.1:$PORT" --collect-interval=100ms > /dev/null 2>&1 &
    pid=$!; sleep 2
    ns() { cat /proc/"$pid"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }
    a=$(ns); sleep "$SECONDS_RUN"; b=$(ns)
    "$LOAD" --url "http://127.0.0.1:$PORT/metrics" --concurrency 1 --threads 1 --interval 100ms \
      --duration "${SECONDS_RUN}s" --gzip --accept "$ACCEPT" --format kv > /dev/null 2>&1
    c=$(ns)
    kill "$pid"; wait "$pid" 2> /dev/null
    idle=$(( (b - a) / intervals / 1000 )); scraped=$(( (c - b) / intervals / 1000 ))
    echo "| $name | $round | $idle | $scraped | $((scraped - idle)) |"
  done
done
