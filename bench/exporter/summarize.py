#!/usr/bin/env python3
"""Turns the raw files of bench/exporter/run.sh into a markdown table.

usage: summarize.py WORK_DIR CLK_TCK

Reads cpu.tsv (per-window CPU ticks and RSS), hwm.tsv (peak RSS), latency.tsv
(scrape-load key=value lines per run) and exposition.tsv (size of one scrape).
"""

import statistics
import sys
from pathlib import Path


def read_tsv(path):
    if not path.exists():
        return []
    return [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line.strip()]


def spread(values, fmt):
    """median (min–max) of a list, or n/a."""
    if not values:
        return "n/a"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def parse_kv(line):
    out = {}
    for part in line.split():
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    work = Path(sys.argv[1])
    hz = float(sys.argv[2])
    cpu = {}
    rss = {}
    for row in read_tsv(work / "cpu.tsv")[1:]:
        subject, _, seconds, ticks, rss_kb = row
        cpu.setdefault(subject, []).append((float(seconds), int(ticks)))
        if rss_kb:
            rss.setdefault(subject, []).append(int(rss_kb) / 1024)
    hwm = {s: int(kb) / 1024 for s, kb in read_tsv(work / "hwm.tsv") if kb}
    lat = {}
    for subject, _, line in read_tsv(work / "latency.tsv"):
        lat.setdefault(subject, []).append(parse_kv(line))
    expo = {s: (int(b), int(n)) for s, b, n in read_tsv(work / "exposition.tsv")}

    print("| subject | CPU % of one core, median (min–max) of windows | CPU % over the whole window "
          "| peak RSS MiB (VmHWM) | scrape p50 ms | scrape p99 ms | max ms | scrapes/s | failed | "
          "exposition |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for subject in cpu:
        windows = cpu[subject]
        per_window = [100.0 * t / hz / s for s, t in windows if s > 0]
        total_s = sum(s for s, _ in windows)
        total_pct = 100.0 * sum(t for _, t in windows) / hz / total_s if total_s else float("nan")
        runs = lat.get(subject, [])

        def col(key):
            return [float(r[key]) for r in runs if key in r]

        failed = sum(int(r.get("errors", 0)) + int(r.get("non_ok", 0)) for r in runs)
        total = sum(int(r.get("requests", 0)) for r in runs)
        size = expo.get(subject)
        print(
            f"| {subject} | {spread(per_window, '{:.2f}')} | {total_pct:.3f} "
            f"| {hwm.get(subject, float('nan')):.1f} "
            f"| {spread(col('p50_ms'), '{:.3f}')} | {spread(col('p99_ms'), '{:.3f}')} "
            f"| {spread(col('max_ms'), '{:.1f}')} | {spread(col('rps'), '{:.0f}')} "
            f"| {f'{failed}/{total}' if runs else 'n/a'} "
            f"| {f'{size[0]} B, {size[1]} samples' if size else 'n/a'} |"
        )
    print()
    windows = {len(v) for v in cpu.values()}
    reps = {len(v) for v in lat.values()}
    print(f"CPU: utime+stime from /proc/PID/stat over {', '.join(map(str, sorted(windows)))} windows; "
          "all subjects ran at once, each scraped once a second as a Prometheus would "
          "(dmon is not scraped). Latency: median over "
          f"{', '.join(map(str, sorted(reps))) or 0} interleaved runs of scrape-load, (min–max) across runs; "
          "latency includes connecting when the server closes connections (HTTP/1.0).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
