#!/usr/bin/env bash
# The whole poolprof pipeline on this machine, on loopback ports:
#
#   poolprof-exporter  (real GPUs when nvidia-smi lists some, else simulated ones: it says so)
#   Prometheus         (scraping everything, with deploy/prometheus/rules loaded)
#   Pushgateway        (for `poolprof-analyzer run --once --push`, cron style)
#   poolprof-analyzer  serve: analyzes every 30 s, /metrics scraped by Prometheus, REST API
#
#   bash deploy/local/up.sh            # starts it, waits for the analyzer's first results
#                                      # in Prometheus, prints what to open; Ctrl-C stops it
#   bash deploy/local/up.sh --detach   # the same, then returns; stop with deploy/local/down.sh
#
# Without GPUs the exporter simulates deploy/local/scenario.toml (7 GPUs: training,
# memory-bound, inference pairs, idle, MIG), and two hours of its history are backfilled
# into Prometheus first, so that the analyzer has something to find at once.
#
# Environment (all optional):
#   EXPORTER_PORT=19400 PROMETHEUS_PORT=19090 PUSHGATEWAY_PORT=19091
#   ANALYZER_PORT=17071 (analyzer /metrics) API_PORT=17070 (analyzer REST API)
#     clear of Prometheus' 9090, the Pushgateway's 9091 and the analyzer's 7070/7071,
#     so that a stack you already run is left alone; each is checked free first.
#   POOLPROF_LOCAL_DIR   where logs, data and the state file go
#                        (default: ${TMPDIR:-/tmp}/poolprof-local-$UID)
#   POOLPROF_BIN_DIR     directory holding prebuilt poolprof-exporter and poolprof-analyzer
#                        (default: cargo build, then target/debug)
#   FORCE_SIMULATION=1  simulate even when GPUs are present
#   SCENARIO=FILE        the simulated fleet (default deploy/local/scenario.toml)
#   POOLPROF_READY_TIMEOUT=180  seconds to wait for the analyzer's first results
#
# Installs what is missing: Debian's prometheus (with promtool) and
# prometheus-pushgateway, with apt-get as root or password-less sudo.
# deploy/local/down.sh stops exactly the processes this script started (their pids are
# in $POOLPROF_LOCAL_DIR/pids) and nothing else.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

EXPORTER_PORT=${EXPORTER_PORT:-19400}
PROMETHEUS_PORT=${PROMETHEUS_PORT:-19090}
PUSHGATEWAY_PORT=${PUSHGATEWAY_PORT:-19091}
ANALYZER_PORT=${ANALYZER_PORT:-17071}
API_PORT=${API_PORT:-17070}
RUN_DIR=${POOLPROF_LOCAL_DIR:-${TMPDIR:-/tmp}/poolprof-local-$(id -u)}
READY_TIMEOUT=${POOLPROF_READY_TIMEOUT:-180}
SCENARIO=${SCENARIO:-deploy/local/scenario.toml}
HISTORY=2h
# The exporter reads these from its environment; the GPUs are chosen below, not there.
unset POOLPROF_SIMULATE POOLPROF_SCENARIO

detach=0
case "${1:-}" in
  --detach | -d) detach=1 ;;
  "") ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "deploy/local/up.sh: unknown argument '$1' (use --detach, or nothing)" >&2
    exit 2
    ;;
esac

say() { printf '%s\n' "$*"; }
die() {
  echo "deploy/local/up.sh: $*" >&2
  exit 1
}

# --- What is needed ---------------------------------------------------------------------
bins=(prometheus promtool prometheus-pushgateway)
pkgs=(prometheus prometheus prometheus-pushgateway)
missing=()
for i in "${!bins[@]}"; do
  command -v "${bins[$i]}" >/dev/null 2>&1 && continue
  [[ " ${missing[*]-} " == *" ${pkgs[$i]} "* ]] || missing+=("${pkgs[$i]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    die "missing ${missing[*]}: install them (apt-get install --no-install-recommends ${missing[*]}) or run this as root"
  fi
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get here: install them by hand"
  say "installing ${missing[*]} (apt-get)…"
  "${as_root[@]}" apt-get update -qq || die "apt-get update failed: check the network, then re-run"
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed (above)"
fi

if [ -n "${POOLPROF_BIN_DIR:-}" ]; then
  bin_dir=$POOLPROF_BIN_DIR
else
  command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (https://rustup.rs), or set POOLPROF_BIN_DIR to prebuilt binaries"
  say "building poolprof-exporter and poolprof-analyzer (cargo build)…"
  cargo build --quiet -p poolprof-exporter -p poolprof-analyzer --bins || die "the build failed (above)"
  bin_dir=$repo/target/debug
fi
exporter=$bin_dir/poolprof-exporter
analyzer=$bin_dir/poolprof-analyzer
for bin in "$exporter" "$analyzer"; do
  [ -x "$bin" ] || die "$bin is not an executable: build it (cargo build --bins) or fix POOLPROF_BIN_DIR"
done

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for pair in EXPORTER_PORT:$EXPORTER_PORT PROMETHEUS_PORT:$PROMETHEUS_PORT \
  PUSHGATEWAY_PORT:$PUSHGATEWAY_PORT ANALYZER_PORT:$ANALYZER_PORT API_PORT:$API_PORT; do
  port=${pair#*:}
  if port_in_use "$port"; then
    die "port $port on 127.0.0.1 is in use: stop what listens there, or pick another with ${pair%%:*}=PORT"
  fi
done

# --- The run directory and its state file -------------------------------------------------
state=$RUN_DIR/pids
if [ -s "$state" ]; then
  die "a local stack already runs from $RUN_DIR (state file $state): stop it with bash deploy/local/down.sh (same POOLPROF_LOCAL_DIR)"
fi
mkdir -p "$RUN_DIR"
rm -rf "${RUN_DIR:?}/prometheus-data"
: >"$state"

# Process start time (clock ticks since boot), so that down.sh never signals a pid the
# kernel has given to another process since.
start_time() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20 || true; }

# start NAME COMMAND...: runs it in its own session (a terminal's Ctrl-C or hang-up
# reaches only this script, which then stops it with down.sh), logs to RUN_DIR/NAME.log.
start() {
  local name=$1
  shift
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" </dev/null >"$RUN_DIR/$name.log" 2>&1 &
  else
    "$@" </dev/null >"$RUN_DIR/$name.log" 2>&1 &
  fi
  local pid=$!
  echo "$name $pid $(start_time "$pid")" >>"$state"
}

stop_all() { bash "$repo/deploy/local/down.sh" --quiet "$@" || true; }
failed() {
  echo "deploy/local/up.sh: $*" >&2
  stop_all --keep
  echo "deploy/local/up.sh: stopped what it had started; logs kept in $RUN_DIR" >&2
  exit 1
}
trap 'failed "interrupted while starting"' INT TERM

wait_port() { # name port
  local i
  for i in $(seq 1 150); do
    port_in_use "$2" && return 0
    if ! pid_alive "$1"; then break; fi
    sleep 0.2
  done
  echo "--- $RUN_DIR/$1.log ---" >&2
  tail -n 20 "$RUN_DIR/$1.log" >&2 || true
  failed "$1 did not start listening on 127.0.0.1:$2 (its log above)"
}
pid_alive() { # name
  local pid
  pid=$(awk -v n="$1" '$1 == n { print $2 }' "$state" 2>/dev/null)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# --- GPUs or the simulation ----------------------------------------------------------------
if [ "${FORCE_SIMULATION:-0}" != 1 ] && command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  mode=real
  gpus=()
  say "GPUs found (nvidia-smi -L): the exporter reads them through NVML."
else
  mode=sim
  gpus=(--scenario "$SCENARIO")
  cat <<TEXT

  ##########################################################################
  ##  NO GPU FOUND (or FORCE_SIMULATION=1): THESE GPUS ARE SIMULATED.
  ##  poolprof-exporter runs $SCENARIO, and $HISTORY of its
  ##  history is backfilled into Prometheus first.
  ##########################################################################

TEXT
fi

# --- Prometheus' configuration and, simulated, its history ------------------------------
rules=("$repo"/deploy/prometheus/rules/*.yml)
{
  echo "# Written by deploy/local/up.sh"
  echo "global: {scrape_interval: 5s, evaluation_interval: 5s}"
  echo "rule_files:"
  for file in "${rules[@]}"; do echo "  - \"$file\""; done
  echo "scrape_configs:"
  echo "  - job_name: poolprof-exporter"
  echo "    static_configs: [{targets: [\"127.0.0.1:$EXPORTER_PORT\"]}]"
  echo "  - job_name: pushgateway"
  echo "    honor_labels: true"
  echo "    static_configs: [{targets: [\"127.0.0.1:$PUSHGATEWAY_PORT\"]}]"
  echo "  - job_name: poolprof-analyzer"
  echo "    static_configs: [{targets: [\"127.0.0.1:$ANALYZER_PORT\"]}]"
} >"$RUN_DIR/prometheus.yml"
promtool check config "$RUN_DIR/prometheus.yml" >"$RUN_DIR/promtool.log" 2>&1 ||
  failed "the generated Prometheus configuration does not check ($RUN_DIR/promtool.log):
$(tail -n 5 "$RUN_DIR/promtool.log")"

if [ "$mode" = sim ]; then
  say "backfilling $HISTORY of simulated history into Prometheus…"
  "$exporter" simulate --history "$HISTORY" --step 15s "${gpus[@]}" \
    --output "$RUN_DIR/history.om" >"$RUN_DIR/simulate.log" 2>&1 ||
    failed "poolprof-exporter simulate failed ($RUN_DIR/simulate.log):
$(tail -n 5 "$RUN_DIR/simulate.log")"
  # The labels the live scrape adds, so that history and live samples are one series.
  labels="job=\"poolprof-exporter\",instance=\"127.0.0.1:$EXPORTER_PORT\""
  awk -v l="$labels" '
    /^#/ || /^$/ { print; next }
    { i = index($0, "{"); s = index($0, " ")
      if (i > 0 && i < s) { rest = substr($0, i + 1); sep = (substr(rest, 1, 1) == "}") ? "" : ","
                            print substr($0, 1, i) l sep rest }
      else { print substr($0, 1, s - 1) "{" l "}" substr($0, s) } }' \
    "$RUN_DIR/history.om" >"$RUN_DIR/history-labelled.om"
  rm -f "$RUN_DIR/history.om"
  promtool tsdb create-blocks-from openmetrics "$RUN_DIR/history-labelled.om" \
    "$RUN_DIR/prometheus-data" >"$RUN_DIR/backfill.log" 2>&1 ||
    failed "promtool could not backfill the history ($RUN_DIR/backfill.log):
$(tail -n 5 "$RUN_DIR/backfill.log")"
  rm -f "$RUN_DIR/history-labelled.om"
fi

# --- Start -------------------------------------------------------------------------------
say "starting the exporter, the Pushgateway, Prometheus and the analyzer (logs in $RUN_DIR)…"
start exporter "$exporter" "${gpus[@]}" --web.listen-address="127.0.0.1:$EXPORTER_PORT"
start pushgateway prometheus-pushgateway --web.listen-address="127.0.0.1:$PUSHGATEWAY_PORT"
start prometheus prometheus --config.file="$RUN_DIR/prometheus.yml" \
  --storage.tsdb.path="$RUN_DIR/prometheus-data" --storage.tsdb.retention.time=7d \
  --web.listen-address="127.0.0.1:$PROMETHEUS_PORT"
wait_port exporter "$EXPORTER_PORT"
wait_port pushgateway "$PUSHGATEWAY_PORT"
wait_port prometheus "$PROMETHEUS_PORT"
# After Prometheus, whose history the analyzer's first run (at once) reads.
start analyzer "$analyzer" serve --prometheus "http://127.0.0.1:$PROMETHEUS_PORT" \
  --listen "127.0.0.1:$ANALYZER_PORT" --api "127.0.0.1:$API_PORT" --interval 30s \
  --lookback "$HISTORY" --registry "$RUN_DIR/registry.json"
wait_port analyzer "$ANALYZER_PORT"

# --- Wait for the analyzer's results in Prometheus ---------------------------------------------
http_get() { # port path: the body (HTTP/1.0, the server closes the connection)
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  cat <&3
  exec 3<&-
}
say "waiting for the analyzer's first results to reach Prometheus (at most ${READY_TIMEOUT}s)…"
query='/api/v1/query?query=poolprof_analyzer_last_success_timestamp_seconds%3E0'
deadline=$((SECONDS + READY_TIMEOUT))
until http_get "$PROMETHEUS_PORT" "$query" 2>/dev/null | grep -q '"result":\[{'; do
  for name in exporter pushgateway prometheus analyzer; do
    pid_alive "$name" || failed "$name exited; the end of its log, $RUN_DIR/$name.log:
$(tail -n 20 "$RUN_DIR/$name.log" 2>/dev/null)"
  done
  if [ "$SECONDS" -ge "$deadline" ]; then
    failed "no analyzer results in Prometheus after ${READY_TIMEOUT}s (poolprof_analyzer_last_success_timestamp_seconds > 0 is empty).
The analyzer's log ($RUN_DIR/analyzer.log) ends with:
$(tail -n 15 "$RUN_DIR/analyzer.log" 2>/dev/null)
Raise POOLPROF_READY_TIMEOUT if the machine is just slow."
  fi
  sleep 1
done
trap - INT TERM

if [ "$mode" = sim ]; then what="SIMULATED GPUs ($SCENARIO)"; else what="this machine's GPUs"; fi
cat <<TEXT

poolprof is up, on $what. Open:
  Prometheus         http://127.0.0.1:$PROMETHEUS_PORT/graph
  exporter           http://127.0.0.1:$EXPORTER_PORT/metrics
  analyzer REST API  http://127.0.0.1:$API_PORT/profiles   (also /health, /colocation?a=chat-a&b=chat-b)
  analyzer results   http://127.0.0.1:$ANALYZER_PORT/metrics   (a new run every 30 s)
  Pushgateway        http://127.0.0.1:$PUSHGATEWAY_PORT   (for: $analyzer run --once --prometheus http://127.0.0.1:$PROMETHEUS_PORT --push http://127.0.0.1:$PUSHGATEWAY_PORT)
  Grafana            dashboards/README.md: point a Grafana at dashboards/provisioning with POOLPROF_PROMETHEUS_URL=http://127.0.0.1:$PROMETHEUS_PORT

Paste into Prometheus:
  poolprof_colocation_recommendation == 1                      which pairs can share a GPU, and how
  poolprof_workload_class == 1                                 each workload: compute-, memory- or latency-bound
  poolprof_forecast{signal="memory_used",bound="upper"}        memory each workload may need an hour from now

Logs and data: $RUN_DIR
TEXT
if [ "$mode" = real ]; then
  say "On real GPUs there is no backfilled history: periods, forecasts and co-location"
  say "scores appear as history accumulates (a period needs a few of its cycles)."
fi

if [ "$detach" = 1 ]; then
  say "Stop it with: bash deploy/local/down.sh"
  exit 0
fi
say "Ctrl-C (or bash deploy/local/down.sh) stops it."
trap 'echo; say "stopping…"; stop_all; exit 130' INT TERM
# Until Ctrl-C, or until down.sh (or a crash) ends one of the components.
while pid_alive exporter && pid_alive pushgateway && pid_alive prometheus && pid_alive analyzer; do
  sleep 1
done
say "a component exited (or down.sh ran); stopping the rest"
stop_all
