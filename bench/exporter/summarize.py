#!/usr/bin/env python3
"""Turns the raw files of bench/exporter/run.sh into a markdown table.

usage: summarize.py WORK_DIR CLK_TCK

Reads cpu.tsv (per-window CPU ticks and RSS), hwm.tsv (peak RSS), latency.tsv
(scrape-load key=value lines per run), exposition.tsv (size of one scrape) and
meta.txt (settings). When the run had the `floor` subject (nvml-floor: nvmlInit and
the GPU handles, then idle), it also prints each subject's peak RSS above it and
whether poolprof meets the cost targets of issue 13.
"""

import re
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


# Cost targets (issue 13): CPU of one core at 1 s collection with one GPU busy, and
# peak RSS above what nvmlInit plus the device handles cost a bare process.
CPU_TARGET_PCT = 0.2
RSS_ABOVE_FLOOR_TARGET_MIB = 6.0


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

    floor = hwm.get("floor")
    print("| subject | CPU % of one core, median (min–max) of windows | CPU % over the whole window "
          "| peak RSS MiB (VmHWM) | above the NVML floor MiB | scrape p50 ms | scrape p99 ms | max ms | scrapes/s | failed | "
          "exposition |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    whole = {}
    for subject in cpu:
        windows = cpu[subject]
        per_window = [100.0 * t / hz / s for s, t in windows if s > 0]
        total_s = sum(s for s, _ in windows)
        total_pct = 100.0 * sum(t for _, t in windows) / hz / total_s if total_s else float("nan")
        whole[subject] = (per_window, total_pct)
        peak = hwm.get(subject, float("nan"))
        above = f"{peak - floor:+.1f}" if floor is not None and subject != "floor" else "–"
        runs = lat.get(subject, [])

        def col(key):
            return [float(r[key]) for r in runs if key in r]

        failed = sum(int(r.get("errors", 0)) + int(r.get("non_ok", 0)) for r in runs)
        total = sum(int(r.get("requests", 0)) for r in runs)
        size = expo.get(subject)
        print(
            f"| {subject} | {spread(per_window, '{:.2f}')} | {total_pct:.3f} "
            f"| {peak:.1f} | {above} "
            f"| {spread(col('p50_ms'), '{:.3f}')} | {spread(col('p99_ms'), '{:.3f}')} "
            f"| {spread(col('max_ms'), '{:.1f}')} | {spread(col('rps'), '{:.0f}')} "
            f"| {f'{failed}/{total}' if runs else 'n/a'} "
            f"| {f'{size[0]} B, {size[1]} samples' if size else 'n/a'} |"
        )
    print()
    windows = {len(v) for v in cpu.values()}
    reps = {len(v) for v in lat.values()}
    like = read_meta(work).get("SCRAPE_LIKE_PROMETHEUS", "0") == "1"
    how = ("with Prometheus's Accept (OpenMetrics first) and gzip over a kept connection"
           if like else "in plain text without gzip over a kept connection")
    print(f"CPU: utime+stime from /proc/PID/stat over {', '.join(map(str, sorted(windows)))} windows; "
          f"all subjects ran at once, each scraped once a second {how} "
          "(dmon and floor are not scraped). Latency: median over "
          f"{', '.join(map(str, sorted(reps))) or 0} interleaved runs of scrape-load, (min–max) across runs; "
          "latency includes connecting when the server closes connections (HTTP/1.0).")
    memory = read_tsv(work / "memory.tsv")[1:]
    if memory:
        print()
        print("| subject | anonymous RSS MiB | file-backed RSS MiB | threads |")
        print("| --- | ---: | ---: | ---: |")
        for subject, anon, file_kb, threads in memory:
            mib = lambda kb: f"{int(kb) / 1024:.1f}" if kb else "n/a"  # noqa: E731
            print(f"| {subject} | {mib(anon)} | {mib(file_kb)} | {threads or 'n/a'} |")
        print()
        print("Memory at the end of the CPU window (/proc/PID/status).")
    if "poolprof" in whole:
        print()
        targets(whole["poolprof"], hwm.get("poolprof"), floor, read_meta(work))
    return 0


def read_meta(work):
    """The settings line of meta.txt as a dict, and whether a GEMM kept a GPU busy."""
    path = work / "meta.txt"
    text = path.read_text() if path.exists() else ""
    settings = {}
    for line in text.splitlines():
        if line.startswith("settings:"):
            settings = dict(re.findall(r"(\w+)=(\S+)", line))
    settings["gemm_running"] = any(line.startswith("gemm:") for line in text.splitlines())
    return settings


def met(ok):
    return "met" if ok else "not met"


def targets(cpu, peak, floor, settings):
    """The issue 13 targets for poolprof, judged on this run's numbers."""
    per_window, total_pct = cpu
    busy = "one GPU busy (GEMM loop)" if settings.get("gemm_running") else "no GPU load in this run"
    print("| target (issue 13) | measured | result |")
    print("| --- | --- | --- |")
    med = statistics.median(per_window) if per_window else float("nan")
    print(f"| CPU at most {CPU_TARGET_PCT}% of one core at 1 s collection, {busy} "
          f"| {total_pct:.3f}% over the whole window (median of windows {med:.2f}%) "
          f"| {met(total_pct <= CPU_TARGET_PCT)} |")
    if peak is None:
        print("| peak RSS at most 6 MiB above the NVML floor | no peak RSS read | n/a |")
    elif floor is None:
        print(f"| peak RSS at most {RSS_ABOVE_FLOOR_TARGET_MIB:g} MiB above the NVML floor "
              f"| {peak:.1f} MiB; no floor subject in this run (PEERS without floor, or no GPU) | n/a |")
    else:
        above = peak - floor
        print(f"| peak RSS at most {RSS_ABOVE_FLOOR_TARGET_MIB:g} MiB above the NVML floor "
              f"(nvml-floor: nvmlInit + a handle per GPU, same run) "
              f"| {peak:.1f} − {floor:.1f} = {above:.1f} MiB "
              f"| {met(above <= RSS_ABOVE_FLOOR_TARGET_MIB)} |")


if __name__ == "__main__":
    sys.exit(main())
