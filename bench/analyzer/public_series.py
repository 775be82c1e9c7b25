#!/usr/bin/env python3
"""Lays out public real series for `poolprof-analyzer-bench forecast-public`.

Each input CSV has a header row, a first column of dates (one of DATE_FORMATS, read
as UTC) or unix seconds, and one or more value columns (all, or those --columns
names). Rows are sorted by time and rows without a time are skipped (some exports
end in a blank row or list the year's days out of order). Every value column becomes
its own `timestamp,value` CSV (unix seconds) under OUT/CLASS/; with --chunk-days, a
long series is cut into consecutive pieces of that many days, each a series of its
own, so that a two-year series is scored at many points of its history and not only
at its end.

    python3 public_series.py --out /tmp/public --class ETTh ETTh1.csv ETTh2.csv --chunk-days 56
"""

import argparse
import csv
import datetime
import pathlib
import sys


# Dates as public exports write them; a day-first date with slashes is not read (it
# would be taken for a month-first one).
DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%m/%d/%Y %H:%M", "%m/%d/%y %H:%M",
                "%d-%m-%Y %H:%M", "%m/%d/%Y %I:%M:%S %p")


def unix_seconds(text):
    """Unix seconds of a timestamp cell, or None."""
    try:
        return float(text)
    except ValueError:
        pass
    for layout in DATE_FORMATS:
        try:
            moment = datetime.datetime.strptime(text.strip(), layout)
        except ValueError:
            continue
        return moment.replace(tzinfo=datetime.timezone.utc).timestamp()
    return None


def columns(path, wanted=None):
    """The value column names (all, or `wanted`) and each row's (time, [cells]), by time."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or len(rows[0]) < 2:
        sys.exit(f"{path}: expected a header and a time column and a value column")
    names = rows[0][1:]
    picks = list(range(len(names)))
    if wanted:
        missing = [w for w in wanted if w not in names]
        if missing:
            sys.exit(f"{path}: no column {', '.join(missing)} (it has {', '.join(names)})")
        picks = [names.index(w) for w in wanted]
    out = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or not row[0].strip():
            continue
        t = unix_seconds(row[0])
        if t is None:
            sys.exit(f"{path}:{line}: `{row[0]}` is not a time ({' or '.join(DATE_FORMATS)})")
        cells = row[1:]
        out.append((t, [cells[j] if j < len(cells) else "" for j in picks]))
    out.sort(key=lambda r: r[0])
    return [names[j] for j in picks], out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder of class folders")
    parser.add_argument("--class", dest="cls", required=True, help="class folder name")
    parser.add_argument("--chunk-days", type=float, default=0.0,
                        help="cut series into pieces of this many days (0: whole)")
    parser.add_argument("--columns", default="",
                        help="comma-separated value columns to keep (default: all)")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    folder = pathlib.Path(args.out) / args.cls
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for path in args.inputs:
        names, rows = columns(path, [c for c in args.columns.split(",") if c])
        stem = pathlib.Path(path).stem
        if not rows:
            sys.exit(f"{path}: no rows with a time")
        start = rows[0][0]
        span = args.chunk_days * 86400.0
        for j, name in enumerate(names):
            pieces = {}
            for t, cells in rows:
                if j >= len(cells) or cells[j].strip() == "":
                    continue
                piece = int((t - start) // span) if span > 0 else 0
                pieces.setdefault(piece, []).append((t, cells[j].strip()))
            for piece, points in sorted(pieces.items()):
                suffix = f"_{piece:03d}" if span > 0 else ""
                target = folder / f"{stem}_{name}{suffix}.csv"
                with open(target, "w") as f:
                    f.write("timestamp,value\n")
                    f.writelines(f"{t:.0f},{v}\n" for t, v in points)
                written += 1
    print(f"{written} series in {folder}")


if __name__ == "__main__":
    main()
