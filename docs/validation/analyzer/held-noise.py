#!/usr/bin/env python3
"""Held noise: how many of 200 series of readings held for several steps get a period.

Each series is 500 steps; a value is drawn afresh every `hold` steps (5, 10 or 15, at
random): half from {0, 0, 0, 0.01, 0.01, 0.02, 0.03} (a process idle at 0-3%), half
normal(0.5, 0.1). Every series is written as a CSV and given to
`poolprof-analyzer periods`; the count of series with any period is printed.

Usage: python3 docs/validation/analyzer/held-noise.py [ANALYZER]
       (default target/release/poolprof-analyzer)
"""
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

analyzer = sys.argv[1] if len(sys.argv) > 1 else "target/release/poolprof-analyzer"
random.seed(5)
found = 0
with tempfile.TemporaryDirectory() as tmp:
    for k in range(200):
        hold = random.choice([5, 10, 15])
        values = []
        while len(values) < 500:
            if k % 2 == 0:
                x = random.choice([0, 0, 0, 0.01, 0.01, 0.02, 0.03])
            else:
                x = random.gauss(0.5, 0.1)
            values += [x] * hold
        path = Path(tmp) / f"s{k}.csv"
        rows = [f"{1700000000 + i},{v}" for i, v in enumerate(values[:500])]
        path.write_text("timestamp,value\n" + "\n".join(rows) + "\n")
        out = subprocess.run([analyzer, "periods", "--input", str(path)],
                             capture_output=True, text=True, check=True).stdout
        found += bool(json.loads(out).get("periods"))
print(f"{found} of 200 held-noise series get a period")
