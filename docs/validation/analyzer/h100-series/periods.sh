#!/usr/bin/env bash
# Periods poolprof-analyzer finds in the series recorded on the H100 (h100-series.sh),
# against each run's designed cycles: one markdown row per series.
# Run in the repository root after `cargo build -p poolprof-analyzer` (or set ANALYZER).
set -euo pipefail
ANALYZER=${ANALYZER:-target/debug/poolprof-analyzer}
DIR=docs/validation/analyzer/h100-series
echo "| run | series | designed cycle (s) | periods found (s, confidence) |"
echo "| --- | --- | ---: | --- |"
for run in "$DIR"/run*/; do
  # the designed cycle of every job that ran: the training job's evaluation pass, or
  # an impulsive job's period (run13 on), each alone on the GPU in its own stretch
  cycle=$(python3 -c '
import json, sys
truth, roles = json.load(open(sys.argv[1])), set(json.load(open(sys.argv[2])).values())
cycles = [str(truth[r].get("evaluation_every_s", truth[r].get("period_s"))) for r in truth
          if r in roles and ("evaluation_every_s" in truth[r] or "period_s" in truth[r])]
print(" / ".join(cycles))' "$run/truth.json" "$run/roles.json")
  for csv in "$run"*.csv; do
    found=$("$ANALYZER" periods --input "$csv" | python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = d if isinstance(d, list) else d.get("series", [d])
ps = ["%.1f (%.2f)" % (p["period_seconds"], p["confidence"]) for s in rows for p in s.get("periods", [])]
print(", ".join(ps) or "none")')
    echo "| $(basename "$run") | $(basename "$csv" .csv) | $cycle | $found |"
  done
done
