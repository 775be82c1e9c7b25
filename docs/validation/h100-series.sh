#!/usr/bin/env bash
# Records real GPU series for the forecast and period evaluations (issue 11):
# poolprof-exporter (NVML, 1 s) on the GPU, scraped every second by Prometheus, while
# jobs share GPU 0 (series_workloads.py; by default three: training with evaluation
# passes and checkpoints, inference on a compressed daily rate, a memory cache growing
# and freed; ROLES picks others, such as the impulsive spikes, dips, bursts and ramps);
# then every recorded series is written as CSV (series_dump.py).
#
# Run in the repository root. Needs target/release/poolprof-exporter, python3 with
# torch, and a Debian prometheus_*.deb in .carry/.
# Environment: RECORD_S (seconds recorded, default 480), SEED (jobs' randomness, default 8), CYCLES (arguments for every
# job, e.g. "--eval-every 30 --checkpoint-every 100 --day 90"; default the jobs'),
# ROLES (the jobs, default "train infer mem"; series_workloads.py lists the others:
# spikes, dips, bursts, ramps), ACTIVE_<role> (FROM-TO,... seconds in which that job
# works; default all the time), EXPORTER_ARGS (more exporter flags, e.g.
# "--collector.process.sample-interval=5s"), OUT (results; default a new
# temporary folder). Results: series.tar.gz (series/*.csv), truth.json, roles.json, record.log.
set -uo pipefail

OUT=${OUT:-$(mktemp -d -t poolprof-series.XXXXXX)}
RECORD_S=${RECORD_S:-480}
CYCLES=${CYCLES:-}
EXPORTER=${EXPORTER:-target/release/poolprof-exporter}
EXPORTER_ARGS=${EXPORTER_ARGS:-}
cd "$(dirname "$0")/../.." || { echo "cannot enter the repository root" >&2; exit 1; }
mkdir -p "$OUT"
LOG="$OUT/record.log"
: > "$LOG"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
die() { log "FAILED: $*"; exit 1; }
[[ "$RECORD_S" =~ ^[0-9]+$ ]] || die "RECORD_S=$RECORD_S is not a number of seconds"
[[ -x "$EXPORTER" ]] || die "$EXPORTER is missing: cargo build --release -p poolprof-exporter, and carry it"
deb=$(ls .carry/prometheus_*.deb 2>/dev/null | head -1)
[[ -n "$deb" ]] || die "no .carry/prometheus_*.deb: apt-get download prometheus into .carry/ and carry it"

cleanup() {
  jobs -p | xargs -r kill 2>/dev/null
  sleep 0.5
  jobs -p | xargs -r kill -9 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM

nvidia-smi -L >> "$LOG" 2>&1
pick_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
PORT=$(pick_port) || die "cannot pick a port"
PPORT=$(pick_port) || die "cannot pick a port"
RUNDIR=$(mktemp -d -t poolprof-series-run.XXXXXX)
log "exporter flags: --collect-interval=1s ${EXPORTER_ARGS:-(no others)}"
# shellcheck disable=SC2086 # EXPORTER_ARGS is a list of flags
"$EXPORTER" --web.listen-address="127.0.0.1:$PORT" --collect-interval=1s \
  --kernels.socket-path="$RUNDIR/inject.sock" $EXPORTER_ARGS >> "$OUT/exporter.log" 2>&1 &
dpkg -x "$deb" "$RUNDIR/prom" >> "$LOG" 2>&1 || die "cannot unpack $deb"
cat > "$RUNDIR/prometheus.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: poolprof-exporter
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
YML
"$RUNDIR/prom/usr/bin/prometheus" --config.file="$RUNDIR/prometheus.yml" \
  --storage.tsdb.path="$RUNDIR/data" --web.listen-address="127.0.0.1:$PPORT" \
  >> "$OUT/prometheus.log" 2>&1 &
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$PPORT/-/ready" > /dev/null && curl -sf "http://127.0.0.1:$PORT/metrics" > /dev/null && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$PPORT/-/ready" > /dev/null || die "Prometheus did not start (see prometheus.log)"
log "exporter on $PORT, prometheus on $PPORT; recording $RECORD_S s"
ROLES=${ROLES:-train infer mem}
windows=""
for role in $ROLES; do
  active_var="ACTIVE_$role"
  windows="${windows:+$windows, }$role ${!active_var:-all}"
done
log "jobs work in (s): $windows; cycles: ${CYCLES:-defaults}"

START=$(date +%s)
declare -A ROLE
for role in $ROLES; do
  active_var="ACTIVE_$role"
  active=${!active_var:+--active ${!active_var}}
  # shellcheck disable=SC2086 # CYCLES is a list of arguments, $active a flag and its value
  python3 docs/validation/series_workloads.py "$role" --seconds "$RECORD_S" --seed "${SEED:-8}" $CYCLES $active \
    --truth "$OUT/truth.json" >> "$OUT/workload-$role.log" 2>&1 &
  ROLE[$!]=$role
done
{
  echo -n "{"
  sep=""
  for pid in "${!ROLE[@]}"; do echo -n "$sep\"$pid\": \"${ROLE[$pid]}\""; sep=", "; done
  echo "}"
} > "$OUT/roles.json"
fails=0
for pid in "${!ROLE[@]}"; do
  wait "$pid" || { fails=$((fails + 1)); log "workload ${ROLE[$pid]} failed: $(tail -3 "$OUT/workload-${ROLE[$pid]}.log")"; }
done
sleep 3
END=$(date +%s)
log "recorded $START..$END ($fails workload failures)"
log "exporter CPU by collector over the run (s): $(curl -sf "http://127.0.0.1:$PORT/metrics" \
  | awk '/^poolprof_exporter_collector_cpu_seconds_total/ {sub(/.*collector="/, ""); sub(/"}/, ""); printf "%s ", $0}')"
python3 docs/validation/series_dump.py --prometheus "http://127.0.0.1:$PPORT" \
  --start "$START" --end "$END" --roles "$OUT/roles.json" --out "$OUT/series" 2>&1 | tee -a "$LOG" | tail -3
log "$(ls "$OUT/series" | wc -l) series; packed as series.tar.gz"
tar -C "$OUT" -czf "$OUT/series.tar.gz" series && rm -r "$OUT/series"
