#!/usr/bin/env python3
"""How near an hour off the days before a moved clock are (`forecast/clock_shift.rs`).

Reads the series that `EVAL_SERIES_DIR=dir poolprof-analyzer-bench forecast-fresh ...`
writes (line 2 of each file: the history), runs the same search for an hourly day
(24 steps, an hour of 1) as `clock_shift::moved` without its last test, and prints,
for the series where a boundary is found, the distribution of that test's measure: the
mean distance of the days before the boundary, an hour off, from the last three days,
over the last three days' distance from each other. Standard library only.

    python3 bench/analyzer/clock_fit.py '/tmp/dst/*/*.txt'
"""
import glob
import sys

SINCE, MIN_BEFORE, MAX_DAYS, AGREE, NEARER, DAY, HOUR = 3, 3, 35, 0.8, 1.5, 24, 1


def shape(day):
    mean = sum(day) / len(day)
    swing = sum(abs(v - mean) for v in day) / len(day)
    scale = swing if swing > 0 else 1.0
    return [(v - mean) / scale for v in day]


def distance(a, b):
    return sum(abs(x - y) for x, y in zip(a, b)) / len(a)


def fit(y):
    count = min((len(y) - HOUR) // DAY, MAX_DAYS)
    if count < SINCE + MIN_BEFORE + 1:
        return None
    start = lambda i: len(y) - (i + 1) * DAY
    day_shape = lambda i, by: shape(y[start(i) + by:start(i) + by + DAY])
    refs = [day_shape(i, 0) for i in range(SINCE)]

    def near(i, by):
        s = day_shape(i, by)
        others = [distance(s, refs[r]) for r in range(SINCE) if r != i]
        return sum(others) / len(others)

    if not all(near(i, 0) <= near(i, by) for i in range(1, SINCE) for by in (HOUR, -HOUR)):
        return None
    best = None
    for by in (HOUR, -HOUR):
        ratios = [near(i, 0) / max(near(i, by), 5e-324) for i in range(SINCE, count)]
        for after in range(len(ratios)):
            if len(ratios) - after < MIN_BEFORE or any(r > 1.0 for r in ratios[:after]):
                continue
            before = ratios[after:]
            agree = sum(r > 1.0 for r in before) / len(before)
            mean = sum(before) / len(before)
            if agree >= AGREE and mean >= NEARER and (best is None or mean > best[2]):
                best = (by, after, mean)
    if best is None:
        return None
    by, after, _ = best
    pairs = [distance(refs[a], refs[b]) for a in range(SINCE) for b in range(a + 1, SINCE)]
    within = sum(pairs) / len(pairs)
    off = [near(i, by) for i in range(SINCE + after, count)]
    return sum(off) / len(off) / max(within, 5e-324)


def main():
    files = sorted(f for pattern in sys.argv[1:] for f in glob.glob(pattern))
    fits = []
    for f in files:
        lines = open(f).read().split("\n")
        found = fit([float(v) for v in lines[1].split()])
        if found is not None:
            fits.append(found)
    fits.sort()
    q = lambda p: fits[min(int(len(fits) * p), len(fits) - 1)]
    print(f"{len(files)} series, a boundary in {len(fits)}, "
          f"{sum(v <= 1.5 for v in fits)} of them within 1.5 (clock_shift::MATCH)")
    if fits:
        print("measure: p10 %.2f  p25 %.2f  median %.2f  p75 %.2f  p90 %.2f"
              % (q(0.1), q(0.25), q(0.5), q(0.75), q(0.9)))


if __name__ == "__main__":
    main()
