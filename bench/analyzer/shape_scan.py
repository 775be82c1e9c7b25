"""Periods reported for random repeating shapes: are they the shape's own?

Draws shapes of 3 to 12 steps (values from 0, 1, 5, 10 and uniform draws), repeats
each over 300, 600 or 997 steps of 15 s with noise 0, 0.01 or 0.3, and runs
`poolprof-analyzer periods` on it. An answer is bad when its first period is not the
shape's (its shortest repeat, within 2%) or when any period is not a whole multiple of
it. Shapes that repeat every one or two steps are skipped (below the 2.5 searched).

    python3 bench/analyzer/shape_scan.py target/release/poolprof-analyzer [SEED]
"""
import json
import random
import subprocess
import sys
import tempfile

analyzer = sys.argv[1]
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
bad = total = 0
with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
    for _ in range(300):
        length = random.randint(3, 12)
        shape = [random.choice([0, 0, 1, 5, 10, random.random() * 10]) for _ in range(length)]
        own = next(d for d in range(1, length + 1)
                   if length % d == 0 and all(shape[i] == shape[i % d] for i in range(length)))
        if own < 3:
            continue
        noise = random.choice([0, 0.01, 0.3])
        n = random.choice([300, 600, 997])
        f.seek(0)
        f.truncate()
        f.write("timestamp,value\n")
        for i in range(n):
            f.write(f"{1700000000 + 15 * i},{shape[i % length] + noise * random.gauss(0, 1)}\n")
        f.flush()
        out = json.loads(subprocess.run([analyzer, "periods", "--input", f.name],
                                        capture_output=True, text=True, check=True).stdout)
        steps = [p["period_seconds"] / 15 for p in out["periods"]]
        total += 1
        ok = steps and abs(steps[0] - own) < 0.02 * own and all(
            round(s / own) >= 1 and abs(s / own - round(s / own)) < 0.02 for s in steps)
        if not ok:
            bad += 1
            print("bad", [round(v, 2) for v in shape], "own", own, "noise", noise, "n", n,
                  "got", [round(s, 3) for s in steps], out.get("reason", ""))
print(f"bad {bad} of {total}")
