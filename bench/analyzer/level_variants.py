"""Forecasts near the last value, scored by hand on series written by EVAL_SERIES_DIR.

A development aid (issue 11, session 36): on a GPU cluster's share held or nodes busy,
is there a simple forecast that beats holding the last value? Each file's poolprof
forecast is scored beside naive and beside variants built from it and the history:
the mean with naive, the median of three (poolprof's forecast, the current level, that
level reverting to the history's median with a half-life of 1/4, 1/2 or all of the
horizon), and naive plus the median or mean change from the same phase over the days
before (alone, or as the middle of three); and, far from the last value, the median
of the last 1, 3, 7 or 14 horizons, held (session 37: on counts of jobs started, the
constant that errs least). Prints, per class (the number before the
series index in the file name), the MAE over naive's pooled over the series and the
mean sMAPE. The horizon is taken for one day. Standard library only.

    EVAL_SERIES_DIR=/tmp/t1 poolprof-analyzer-bench forecast-tenants --seed 1
    python3 level_variants.py '/tmp/t1/*.txt'
"""

import argparse
import collections
import glob
import os


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def smape(truth, point):
    terms = [
        0.0 if a == b == 0 else 2 * abs(a - b) / (abs(a) + abs(b))
        for a, b in zip(truth, point)
    ]
    return 100 * sum(terms) / len(terms)


def middle(a, b, c):
    return sorted((a, b, c))[1]


def variants(history, point):
    """{name: forecast} for a history and poolprof's forecast of one day."""
    h, n, last = len(point), len(history), history[-1]
    level = median(history[-max(h // 48, 3):])
    centre = median(history)
    out = {"poolprof": point, "naive": [last] * h}
    out["mean(poolprof, naive)"] = [(p + last) / 2 for p in point]
    for share in (4, 2, 1):
        half = max(h // share, 1)
        back = [centre + (level - centre) * 0.5 ** ((j + 1) / half) for j in range(h)]
        out[f"middle(poolprof, level, reversion h/{share})"] = [
            middle(p, level, r) for p, r in zip(point, back)
        ]
    for k in (1, 3, 7, 14):
        out[f"median of the last {k} horizons"] = [median(history[-k * h :])] * h
    days = n // h
    for name, agg in (("median", median), ("mean", lambda v: sum(v) / len(v))):
        change = []
        for j in range(h):
            before = [
                history[n - d * h + j] - history[n - 1 - d * h]
                for d in range(1, days)
                if n - d * h + j < n
            ]
            change.append(agg(before) if before else 0.0)
        for w in (0.5, 1.0):
            moved = [last + w * c for c in change]
            out[f"naive + {w} x {name} change"] = moved
            out[f"middle(poolprof, naive + {w} x {name} change, level)"] = [
                middle(p, m, level) for p, m in zip(point, moved)
            ]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pattern", help="glob of EVAL_SERIES_DIR files")
    args = parser.parse_args()
    # class -> variant -> [abs error, naive's abs error, sMAPE sum, series]
    scores = collections.defaultdict(lambda: collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0]))
    for path in sorted(glob.glob(args.pattern)):
        cls = os.path.basename(path).rsplit("-", 2)[-2]
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        history, future, point = ([float(v) for v in lines[i].split()] for i in (1, 2, 3))
        naive_error = sum(abs(a - history[-1]) for a in future)
        for name, forecast in variants(history, point).items():
            s = scores[cls][name]
            s[0] += sum(abs(a - p) for a, p in zip(future, forecast))
            s[1] += naive_error
            s[2] += smape(future, forecast)
            s[3] += 1
    for cls in sorted(scores):
        print(f"class {cls}")
        for name, (err, naive, total, count) in scores[cls].items():
            ratio = err / naive if naive else float("nan")
            print(f"  {name:52s} MAE / naive {ratio:.3f}  sMAPE {total / count:.2f}")


if __name__ == "__main__":
    main()
