#!/usr/bin/env python3
"""Lays out public real series for `poolprof-analyzer-bench forecast-public`.

Each input CSV has a header row, a first column of `YYYY-MM-DD HH:MM:SS` (UTC) or
unix seconds, and one or more value columns. Every value column becomes its own
`timestamp,value` CSV (unix seconds) under OUT/CLASS/; with --chunk-days, a long
series is cut into consecutive pieces of that many days, each a series of its own,
so that a two-year series is scored at many points of its history and not only at
its end.

    python3 public_series.py --out /tmp/public --class ETTh ETTh1.csv ETTh2.csv --chunk-days 56
"""

import argparse
import csv
import datetime
import pathlib
import sys


def unix_seconds(text):
    """Unix seconds of a timestamp cell, or None."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


def columns(path):
    """The header's value column names and each row's (time, [cells])."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or len(rows[0]) < 2:
        sys.exit(f"{path}: expected a header and a time column and a value column")
    out = []
    for line, row in enumerate(rows[1:], start=2):
        t = unix_seconds(row[0]) if row else None
        if t is None:
            sys.exit(f"{path}:{line}: `{row[0] if row else ''}` is not a time")
        out.append((t, row[1:]))
    return rows[0][1:], out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder of class folders")
    parser.add_argument("--class", dest="cls", required=True, help="class folder name")
    parser.add_argument("--chunk-days", type=float, default=0.0,
                        help="cut series into pieces of this many days (0: whole)")
    parser.add_argument("inputs", nargs="+")
    args = parser.parse_args()
    folder = pathlib.Path(args.out) / args.cls
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for path in args.inputs:
        names, rows = columns(path)
        stem = pathlib.Path(path).stem
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
