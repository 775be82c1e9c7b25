#!/usr/bin/env bash
# Stops the local stack deploy/local/up.sh started, and nothing else:
#
#   bash deploy/local/down.sh            # uses the same POOLPROF_LOCAL_DIR as up.sh
#   bash deploy/local/down.sh --keep     # keeps the logs and Prometheus' data
#
# It signals only the pids up.sh wrote to $POOLPROF_LOCAL_DIR/pids, and only while each
# is still the process up.sh started (same start time), so a pid the kernel has reused
# since is left alone. SIGTERM first, SIGKILL after 10 s. Exits 0 when nothing is left
# running, also when nothing ran; 1 if a process would not stop.
set -uo pipefail

RUN_DIR=${POOLPROF_LOCAL_DIR:-${TMPDIR:-/tmp}/poolprof-local-$(id -u)}
state=$RUN_DIR/pids
keep=0
quiet=0
for arg in "$@"; do
  case "$arg" in
    --keep) keep=1 ;;
    --quiet) quiet=1 ;;
    *)
      echo "deploy/local/down.sh: unknown argument '$arg' (use --keep)" >&2
      exit 2
      ;;
  esac
done
say() { [ "$quiet" = 1 ] || printf '%s\n' "$*"; }

if [ ! -f "$state" ]; then
  say "no local stack runs from $RUN_DIR (no $state): nothing to stop"
  exit 0
fi

# Fields of /proc/PID/stat after the command name: 1 the state, 20 the start time.
stat_field() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f"$2"; }
# ours NAME PID STARTED: whether PID is still the process up.sh started as NAME, and
# running (an exited process its parent has not reaped yet is a zombie, not running).
ours() {
  kill -0 "$2" 2>/dev/null || return 1
  # Without /proc (not Linux), the pid alone has to do.
  [ -d /proc ] || return 0
  [ "$(stat_field "$2" 1)" != Z ] || return 1
  [ -z "$3" ] || [ "$(stat_field "$2" 20)" = "$3" ]
}

# Reverse start order: the analyzer before the Prometheus it reads.
mapfile -t entries < <(tac "$state" 2>/dev/null || sed -n '1!G;h;$p' "$state")
running=()
for entry in "${entries[@]}"; do
  read -r name pid started <<<"$entry"
  [ -n "${pid:-}" ] || continue
  if ours "$name" "$pid" "${started:-}"; then
    kill -TERM "$pid" 2>/dev/null && running+=("$name:$pid:${started:-}")
  fi
done

left=()
for _ in $(seq 1 50); do
  left=()
  for item in "${running[@]}"; do
    IFS=: read -r name pid started <<<"$item"
    ours "$name" "$pid" "$started" && left+=("$item")
  done
  [ ${#left[@]} -eq 0 ] && break
  sleep 0.2
done
for item in "${left[@]}"; do
  IFS=: read -r name pid started <<<"$item"
  say "$name (pid $pid) did not stop on SIGTERM within 10 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null
done
sleep 0.2
for item in "${left[@]}"; do
  IFS=: read -r name pid started <<<"$item"
  if ours "$name" "$pid" "$started"; then
    echo "deploy/local/down.sh: $name (pid $pid) is still running" >&2
    exit 1
  fi
done

rm -f "$state"
if [ "$keep" = 1 ]; then
  say "stopped ${#running[@]} processes; logs and data kept in $RUN_DIR"
else
  rm -rf "${RUN_DIR:?}/prometheus-data" "$RUN_DIR"/*.log "$RUN_DIR"/prometheus.yml "$RUN_DIR"/registry.json
  rmdir "$RUN_DIR" 2>/dev/null || true
  say "stopped ${#running[@]} processes; removed $RUN_DIR"
fi
