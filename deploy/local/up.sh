#!/usr/bin/env bash
# A local poolprof stack on loopback, for trying things out without a GPU:
# poolprof-exporter with simulated GPUs, Prometheus scraping it (and the Pushgateway,
# where `poolprof-analyzer run --once --push` sends its results) every 5 s.
#
#   bash deploy/local/up.sh            # 6 simulated GPUs; Ctrl-C stops everything
#   SCENARIO=exporter/scenarios/demo.toml bash deploy/local/up.sh
#
# Ports (override by environment): EXPORTER_PORT=19400 PROMETHEUS_PORT=19090
# PUSHGATEWAY_PORT=19091; POOLPROF_EXPORTER=path runs that binary instead of building
# target/debug/poolprof-exporter. Data lives in a temporary directory removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

EXPORTER_PORT=${EXPORTER_PORT:-19400}
PROMETHEUS_PORT=${PROMETHEUS_PORT:-19090}
PUSHGATEWAY_PORT=${PUSHGATEWAY_PORT:-19091}
SIMULATE=${SIMULATE:-6}

die() {
  echo "deploy/local/up.sh: $*" >&2
  exit 1
}

for bin in prometheus prometheus-pushgateway; do
  command -v "$bin" >/dev/null 2>&1 ||
    die "$bin not found: apt-get install --no-install-recommends prometheus prometheus-pushgateway"
done
for port in "$EXPORTER_PORT" "$PROMETHEUS_PORT" "$PUSHGATEWAY_PORT"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "port $port on 127.0.0.1 is in use: stop what listens there or set another port (see the header of this script)"
  fi
done

exporter=${POOLPROF_EXPORTER:-}
if [ -z "$exporter" ]; then
  echo "building poolprof-exporter…"
  cargo build --quiet -p poolprof-exporter --bins || die "the build failed (above)"
  exporter=target/debug/poolprof-exporter
fi
[ -x "$exporter" ] || die "$exporter is not an executable"

work=$(mktemp -d -t poolprof-local-XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

if [ -n "${SCENARIO:-}" ]; then
  gpus=(--scenario "$SCENARIO")
else
  gpus=(--simulate "$SIMULATE")
fi
"$exporter" "${gpus[@]}" --web.listen-address="127.0.0.1:$EXPORTER_PORT" \
  >"$work/exporter.log" 2>&1 &
pids+=($!)

prometheus-pushgateway --web.listen-address="127.0.0.1:$PUSHGATEWAY_PORT" \
  >"$work/pushgateway.log" 2>&1 &
pids+=($!)

cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 5s
  evaluation_interval: 5s
scrape_configs:
  - job_name: poolprof
    static_configs: [{targets: ["127.0.0.1:$EXPORTER_PORT"]}]
  - job_name: pushgateway
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:$PUSHGATEWAY_PORT"]}]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" >"$work/prometheus.log" 2>&1 &
pids+=($!)

wait_ready() { # name url log
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${2##*:}") 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "--- $3 ---" >&2
  tail -n 20 "$3" >&2
  die "$1 did not start (log above)"
}
wait_ready poolprof-exporter "127.0.0.1:$EXPORTER_PORT" "$work/exporter.log"
wait_ready pushgateway "127.0.0.1:$PUSHGATEWAY_PORT" "$work/pushgateway.log"
wait_ready prometheus "127.0.0.1:$PROMETHEUS_PORT" "$work/prometheus.log"

cat <<TEXT

poolprof local stack is up (logs in $work):
  exporter     http://127.0.0.1:$EXPORTER_PORT/metrics   (${gpus[*]})
  prometheus   http://127.0.0.1:$PROMETHEUS_PORT          try: poolprof_gpu_sm_active_ratio
  pushgateway  http://127.0.0.1:$PUSHGATEWAY_PORT
analyzer, e.g.:
  cargo run -p poolprof-analyzer -- run --once --prometheus http://127.0.0.1:$PROMETHEUS_PORT --push http://127.0.0.1:$PUSHGATEWAY_PORT
Ctrl-C stops everything.
TEXT

# Stop everything as soon as any one of them exits.
wait -n "${pids[@]}" || true
echo "a component exited; stopping the stack" >&2
