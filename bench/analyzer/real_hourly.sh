#!/bin/bash
# Lays out sessions 27-28's real hourly sets and scores a build on them, so that a
# change is checked against them as it is against the generated sets (none of them is
# committed; session 52 found a regression of twelve sessions on Fremont that no
# script had run).
#
#   bench/analyzer/real_hourly.sh RAW OUT [BENCH]
#
# RAW holds the public files as `git show` gives them from the copies named in
# docs/validation/analyzer/forecast-public-session27.md and -session28.md:
# AEP_hourly.csv COMED_hourly.csv DAYTON_hourly.csv DOM_hourly.csv DUQ_hourly.csv
# PJME_hourly.csv hour.csv Metro_Interstate_Traffic_Volume.csv
# Fremont_Bridge_Bicycle_Counter.csv. OUT gets dev/ (PJM and Fremont even pieces,
# bike rentals, I-94 traffic) and held/ (PJM and Fremont odd pieces; look at them
# once, at the end). With BENCH (a poolprof-analyzer-bench binary) the development
# half is scored: `BENCH forecast-public OUT/dev`.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 RAW OUT [BENCH]" >&2
    exit 2
fi
raw=$1 out=$2 bench=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
lay=("python3" "$here/public_series.py" --chunk-days 56)
for f in AEP_hourly.csv COMED_hourly.csv DAYTON_hourly.csv DOM_hourly.csv DUQ_hourly.csv \
    PJME_hourly.csv hour.csv Metro_Interstate_Traffic_Volume.csv \
    Fremont_Bridge_Bicycle_Counter.csv; do
    if [ ! -f "$raw/$f" ]; then
        echo "$0: $raw/$f is missing; see forecast-public-session27.md and -session28.md" >&2
        exit 1
    fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$raw" && "${lay[@]}" --out "$tmp/all" --class PJM AEP_hourly.csv COMED_hourly.csv \
    DAYTON_hourly.csv DOM_hourly.csv DUQ_hourly.csv PJME_hourly.csv) >&2
# this copy of the bike counts writes the day as dd/mm/yy and the hour apart
awk -F, 'NR==1{print "Datetime,casual,registered,cnt"; next}
    {split($2,d,"/"); printf "20%s-%s-%s %02d:00:00,%s,%s,%s\n", d[3], d[2], d[1], $6, $15, $16, $17}' \
    "$raw/hour.csv" > "$tmp/bike.csv"
"${lay[@]}" --out "$out/dev" --class bike "$tmp/bike.csv" >&2
"${lay[@]}" --out "$out/dev" --class traffic --columns traffic_volume \
    "$raw/Metro_Interstate_Traffic_Volume.csv" >&2
(echo "Date,total,west,east"; tail -n +2 "$raw/Fremont_Bridge_Bicycle_Counter.csv") > "$tmp/fremont.csv"
"${lay[@]}" --out "$tmp/all" --class fremont "$tmp/fremont.csv" >&2
# even pieces are the development half, odd ones held out
for class in PJM fremont; do
    mkdir -p "$out/dev/$class" "$out/held/$class"
    for f in "$tmp/all/$class"/*.csv; do
        n=$(basename "$f" .csv)
        i=$((10#${n##*_}))
        if [ $((i % 2)) = 0 ]; then cp "$f" "$out/dev/$class/"; else cp "$f" "$out/held/$class/"; fi
    done
done
if [ -n "$bench" ]; then
    "$bench" forecast-public "$out/dev"
fi
