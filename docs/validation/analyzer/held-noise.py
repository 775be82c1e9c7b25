#!/usr/bin/env python3
"""Held noise: how many series of readings held for several steps get a period.

Default: 200 series of 500 steps; a value is drawn afresh every `hold` steps (5, 10 or
15, at random): half from {0, 0, 0, 0.01, 0.01, 0.02, 0.03} (a process idle at 0-3%),
half normal(0.5, 0.1). With --grid: for each hold of 2, 3, 5, 10 and 15 steps (a reading
every 2-15 s scraped every second) and each length
of 120, 150, 200, 300, 500 and 1,000 steps, 400 series of uniform readings. Every series
is written as a CSV and given to `poolprof-analyzer periods`; the count of series with
any period is printed.

Usage: python3 docs/validation/analyzer/held-noise.py [--grid] [ANALYZER]
       (default target/release/poolprof-analyzer)
"""
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path


def periodic(analyzer, tmp, k, values):
    """Whether the analyzer reports a period for `values`, one a second."""
    path = Path(tmp) / f"s{k}.csv"
    rows = [f"{1700000000 + i},{v}" for i, v in enumerate(values)]
    path.write_text("timestamp,value\n" + "\n".join(rows) + "\n")
    out = subprocess.run([analyzer, "periods", "--input", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return bool(json.loads(out).get("periods"))


def held(draw, hold, n):
    """`n` steps of readings from `draw`, each held `hold` steps."""
    values = []
    while len(values) < n:
        values += [draw()] * hold
    return values[:n]


def main():
    args = sys.argv[1:]
    grid = "--grid" in args
    args = [a for a in args if a != "--grid"]
    analyzer = args[0] if args else "target/release/poolprof-analyzer"
    random.seed(5)
    with tempfile.TemporaryDirectory() as tmp:
        if not grid:
            found = 0
            for k in range(200):
                hold = random.choice([5, 10, 15])
                idle = lambda: random.choice([0, 0, 0, 0.01, 0.01, 0.02, 0.03])
                busy = lambda: random.gauss(0.5, 0.1)
                found += periodic(analyzer, tmp, k, held(idle if k % 2 == 0 else busy, hold, 500))
            print(f"{found} of 200 held-noise series get a period")
            return
        for hold in (2, 3, 5, 10, 15):
            for n in (120, 150, 200, 300, 500, 1000):
                found = sum(periodic(analyzer, tmp, k, held(random.random, hold, n)) for k in range(400))
                print(f"hold {hold:2d} steps, {n:4d} steps: {found} of 400 get a period")


if __name__ == "__main__":
    main()
