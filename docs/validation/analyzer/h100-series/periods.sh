#!/usr/bin/env bash
# Periods poolprof-analyzer finds in the series recorded on the H100 (h100-series.sh),
# against each run's designed evaluation cycle: one markdown row per series.
# Run in the repository root after `cargo build -p poolprof-analyzer` (or set ANALYZER).
set -euo pipefail
ANALYZER=${ANALYZER:-target/debug/poolprof-analyzer}
DIR=docs/validation/analyzer/h100-series
echo "| run | series | designed cycle (s) | periods found (s, confidence) |"
echo "| --- | --- | ---: | --- |"
for run in "$DIR"/run*/; do
  cycle=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["train"]["evaluation_every_s"])' "$run/truth.json")
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
