#!/usr/bin/env python3
"""Lays out cluster series from real job logs for `poolprof-analyzer-bench forecast-public`.

The GPU-cluster traces the issue names stay held out; the Parallel Workloads Archive's
logs of batch clusters (Standard Workload Format: one job a line, submit time, wait,
run time, processors) are job schedules that real users made, and they give the same
series a scheduler's exporter reports: the share of the machine held by running jobs,
the jobs running, and the jobs started per step. Each log is sampled every STEP
seconds (as a scrape sees it: the jobs running at that instant; the starts since the
last sample) and cut into consecutive pieces of PIECE_DAYS days, each a
`timestamp,value` CSV (unix seconds); even pieces go to OUT/dev/CLASS/, odd ones to
OUT/held/CLASS/. A piece of 21 days is seven one-day horizons after two weeks of
history, as `forecast-public` cuts it. Pieces alternate between 5 and 10 min steps
(two pieces each), so that either half holds both. Standard library only.

    python3 swf_series.py --out /tmp/swf KTH-SP2-1996-2.1-cln.swf.gz LANL-CM5-1994-4.1-cln.swf.gz
"""

import argparse
import gzip
import pathlib
import sys

CLASSES = ("swf-share", "swf-running", "swf-starts")
STEPS = (300, 600)


def header_number(lines, key):
    """The number after `; KEY:` in a log's header, or None."""
    for line in lines:
        if line.startswith(";") and line[1:].strip().startswith(key + ":"):
            try:
                return int(float(line.split(":", 1)[1].split()[0]))
            except (ValueError, IndexError):
                return None
    return None


def read_log(path):
    """(unix start, machine size, [(start, end, processors, user)]) of one SWF log."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        lines = f.read().splitlines()
    start = header_number(lines, "UnixStartTime")
    size = header_number(lines, "MaxProcs") or header_number(lines, "MaxNodes")
    if start is None or not size:
        sys.exit(f"{path}: no UnixStartTime or MaxProcs/MaxNodes in the header; is it SWF?")
    jobs = []
    for number, line in enumerate(lines, 1):
        if line.startswith(";") or not line.strip():
            continue
        fields = line.split()
        if len(fields) < 8:
            sys.exit(f"{path}:{number}: {len(fields)} fields, SWF has 18")
        try:
            submit, wait, run = float(fields[1]), float(fields[2]), float(fields[3])
            procs = int(float(fields[4])) if float(fields[4]) > 0 else int(float(fields[7]))
        except ValueError as e:
            sys.exit(f"{path}:{number}: {e}; SWF fields are numbers")
        if run <= 0 or procs <= 0 or submit < 0:
            continue
        begin = submit + max(wait, 0.0)
        user = int(float(fields[11])) if len(fields) > 11 else -1
        jobs.append((begin, begin + run, min(procs, size), user))
    return start, size, jobs


def sample(jobs, size, step, t_end):
    """Per sample time k*step: (share held, jobs running, jobs started since the last)."""
    n = int(t_end // step) + 1
    held = [0.0] * (n + 1)
    running = [0] * (n + 1)
    starts = [0] * (n + 1)
    for begin, end, procs, _ in jobs:
        # running at sample k when begin <= k*step < end
        first = int(-(-begin // step))
        last = int(-(-end // step))
        if first < last and first <= n:
            held[first] += procs / size
            running[first] += 1
            if last <= n:
                held[last] -= procs / size
                running[last] -= 1
        # started in ((k-1)*step, k*step]
        k = int(-(-begin // step))
        if k <= n:
            starts[k] += 1
    out, h, r = [], 0.0, 0
    for k in range(n):
        h += held[k]
        r += running[k]
        out.append((max(h, 0.0), r, starts[k]))
    return out


def peak(jobs):
    """The most processors the jobs hold at once."""
    events = sorted([(b, p) for b, _, p, _ in jobs] + [(e, -p) for _, e, p, _ in jobs])
    held = top = 0
    for _, change in events:
        held += change
        top = max(top, held)
    return top


def virtual_clusters(jobs, groups):
    """The jobs split by user into `groups` parts, each sized by its own peak: a
    virtual cluster whose quota is what its users held at most."""
    parts = [[j for j in jobs if j[3] % groups == g] for g in range(groups)]
    return [(part, peak(part)) for part in parts if part]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--piece-days", type=int, default=21)
    parser.add_argument("--groups", type=int, default=1,
                        help="split each log's users into this many virtual clusters")
    parser.add_argument("logs", nargs="+", type=pathlib.Path)
    args = parser.parse_args()
    for path in args.logs:
        unix, size, jobs = read_log(path)
        t_end = max(end for _, end, _, _ in jobs)
        parts = [(jobs, size)] if args.groups == 1 else virtual_clusters(jobs, args.groups)
        for g, (part, part_size) in enumerate(parts):
            name = path.name.split(".swf")[0] + (f"-vc{g}" if args.groups > 1 else "")
            write_pieces(args, name, unix, part, part_size, t_end)
        print(f"{path.name}: {len(jobs)} jobs, {int(t_end // (args.piece_days * 86_400))} pieces",
              file=sys.stderr)


def write_pieces(args, name, unix, jobs, size, t_end):
    """Every piece of one (virtual) cluster's series, in each class's folder."""
    piece = args.piece_days * 86_400
    pieces = int(t_end // piece)
    # each step's samples once over the whole log; a piece reads its stretch of them
    rows_at = {step: sample(jobs, size, step, pieces * piece) for step in STEPS}
    for k in range(pieces):
        step = STEPS[(k // 2) % 2]
        half = "dev" if k % 2 == 0 else "held"
        rows = rows_at[step]
        first = k * piece // step
        for c, cls in enumerate(CLASSES):
            folder = args.out / half / cls
            folder.mkdir(parents=True, exist_ok=True)
            with open(folder / f"{name}-{k:02d}.csv", "w") as f:
                f.write("timestamp,value\n")
                for i in range(first, first + piece // step):
                    f.write(f"{unix + i * step},{round(rows[i][c], 6)}\n")


if __name__ == "__main__":
    main()
