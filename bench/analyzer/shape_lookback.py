"""Seasonal medians over a fixed number of days, scored by hand on series written by
EVAL_SERIES_DIR.

A development aid (issue 11, session 22): for each series the forecast of the next
`--horizon` steps is the median, at each hour, of the last K days (K = 1 is
seasonal-naive), for K = 1, 2, 3, 4, 5, 7, and the best K per series in hindsight (an
oracle: how much a right choice of days could gain). The validated choice's own error
is printed beside them. Medians of an even count take the upper middle value, as
the seasonal median did before session 22 (`--mean-of-middle`: the mean of the two
middle values, as it does now). Standard library only.

    EVAL_CLASS=5 EVAL_SERIES_DIR=/tmp/sb/1 poolprof-analyzer-bench forecast-fresh --seed 1 --per-class 40
    python3 shape_lookback.py '/tmp/sb/*/*.txt'
"""

import argparse
import glob
import statistics


def smape(actual, forecast):
    terms = []
    for a, f in zip(actual, forecast):
        d = abs(a) + abs(f)
        terms.append(0.0 if d == 0 else 2 * abs(a - f) / d)
    return 100 * statistics.mean(terms)


def upper_median(values):
    values = sorted(values)
    return values[len(values) // 2]


def median_of_days(history, days, period, horizon, median):
    n = len(history)
    return [
        median([history[n - period * k + (j % period)] for k in range(1, days + 1)])
        for j in range(horizon)
    ]


def read(path):
    lines = open(path).read().split("\n")
    numbers = lambda line: [float(x) for x in line.split()]
    return numbers(lines[1]), numbers(lines[2]), numbers(lines[3])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files")
    parser.add_argument("--period", type=int, default=24)
    parser.add_argument("--horizon", type=int, default=48)
    parser.add_argument("--mean-of-middle", action="store_true")
    args = parser.parse_args()
    median = statistics.median if args.mean_of_middle else upper_median
    series = [read(p) for p in sorted(glob.glob(args.files))]
    ks = (1, 2, 3, 4, 5, 7)
    scores = {k: [] for k in ks}
    chosen, oracle = [], []
    for history, future, forecast in series:
        chosen.append(smape(future, forecast))
        for k in ks:
            scores[k].append(smape(future, median_of_days(history, k, args.period, args.horizon, median)))
        oracle.append(min(scores[k][-1] for k in ks))
    print(f"{len(series)} series, mean sMAPE")
    print(f"  validated choice      {statistics.mean(chosen):7.3f}")
    for k in ks:
        name = "seasonal-naive" if k == 1 else f"median of {k} days"
        print(f"  {name:21s} {statistics.mean(scores[k]):7.3f}")
    print(f"  best K in hindsight   {statistics.mean(oracle):7.3f}")


if __name__ == "__main__":
    main()
