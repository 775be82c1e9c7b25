"""Models of a decomposition's rest, scored by hand on series written by EVAL_SERIES_DIR.

A development aid (issue 11, session 21): each series is decomposed by 24 and 168
steps the way analyzer/src/analysis/forecast/decompose.rs does (two passes, profiles
over the steps whose centred window of the longest season is whole), and its rest is
forecast by simple smoothing or by an AR(1) around a mean or a line; the profiles are
added back and the mean sMAPE over all series is printed per model. Standard library
only.

    EVAL_CLASS=0 EVAL_SERIES_DIR=/tmp/c0/1 poolprof-analyzer-bench forecast-eval --seed 1
    python3 rest_models.py '/tmp/c0/*/*.txt'          # additive
    python3 rest_models.py '/tmp/c7/*/*.txt' --log    # in logarithms
"""

import argparse
import glob
import math

SEASONS = (24, 168)


def moving_average(y, w):
    prefix = [0.0]
    for v in y:
        prefix.append(prefix[-1] + v)
    half, n = w // 2, len(y)
    out = []
    for t in range(n):
        lo, hi = max(0, t - half), min(n, t + w - half)
        out.append((prefix[hi] - prefix[lo]) / (hi - lo))
    return out


def seasonal(y):
    """The summed profiles of SEASONS, as a function of the step."""
    n, longest = len(y), max(SEASONS)
    lo, hi = longest // 2, n - (longest - longest // 2)
    over = range(lo, hi) if hi > lo + longest else range(n)
    profiles = {m: [0.0] * m for m in SEASONS}
    for _ in range(2):
        for m in sorted(SEASONS):
            rest = [y[t] - sum(profiles[k][t % k] for k in SEASONS if k != m) for t in range(n)]
            trend = moving_average(rest, longest)
            sums, counts = [0.0] * m, [0] * m
            for t in over:
                sums[t % m] += rest[t] - trend[t]
                counts[t % m] += 1
            p = [s / max(c, 1) for s, c in zip(sums, counts)]
            mean = sum(p) / m
            profiles[m] = [v - mean for v in p]
    return lambda t: sum(profiles[m][t % m] for m in SEASONS)


def smoothing(a, h):
    """Simple smoothing, alpha on a grid by one-step squared error."""
    best = None
    for alpha in (0.02 * i for i in range(1, 50)):
        level, sse = a[0], 0.0
        for v in a[1:]:
            sse += (v - level) ** 2
            level += alpha * (v - level)
        if best is None or sse < best[0]:
            best = (sse, level)
    return [best[1]] * h


def ar1(a, h, window, line):
    """AR(1) of the deviations from the window's mean (or least-squares line)."""
    x = a[-window:]
    n = len(x)
    t_mean, x_mean = (n - 1) / 2, sum(x) / n
    slope = 0.0
    if line:
        slope = sum((t - t_mean) * (v - x_mean) for t, v in enumerate(x)) / sum(
            (t - t_mean) ** 2 for t in range(n)
        )
    base = lambda t: x_mean + slope * (t - t_mean)
    dev = [v - base(t) for t, v in enumerate(x)]
    spread = sum(d * d for d in dev)
    phi = min(0.99, max(0.0, sum(dev[t] * dev[t - 1] for t in range(1, n)) / spread)) if spread else 0.0
    return [base(n - 1 + j) + dev[-1] * phi**j for j in range(1, h + 1)]


def smape(forecast, actual):
    terms = [2 * abs(f - a) / (abs(f) + abs(a)) if abs(f) + abs(a) else 0.0 for f, a in zip(forecast, actual)]
    return 100 * sum(terms) / len(terms)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pattern", help="glob of EVAL_SERIES_DIR files")
    parser.add_argument("--log", action="store_true", help="decompose the logarithms")
    args = parser.parse_args()
    scores = {}
    for path in sorted(glob.glob(args.pattern)):
        lines = open(path).read().split("\n")
        history, future, chosen = ([float(v) for v in lines[k].split()] for k in (1, 2, 3))
        if args.log and min(history) <= 0:
            continue
        y = [math.log(v) for v in history] if args.log else history
        n, h = len(y), len(future)
        profile = seasonal(y)
        rest = [v - profile(t) for t, v in enumerate(y)]
        ahead = [profile(t) for t in range(n, n + h)]
        back = (lambda p: [math.exp(u + s) for u, s in zip(p, ahead)]) if args.log else (
            lambda p: [u + s for u, s in zip(p, ahead)]
        )
        models = {
            "poolprof's validated choice": chosen,
            "smoothing": back(smoothing(rest, h)),
            "AR(1), mean of the last 168": back(ar1(rest, h, 168, False)),
            "AR(1), mean of the last 336": back(ar1(rest, h, 336, False)),
            "AR(1), line over the last 336": back(ar1(rest, h, 336, True)),
            "AR(1), line over all": back(ar1(rest, h, n, True)),
        }
        for name, forecast in models.items():
            scores.setdefault(name, []).append(smape(forecast, future))
    for name, s in scores.items():
        print(f"{name:32s} {sum(s) / len(s):7.3f}  ({len(s)} series)")


if __name__ == "__main__":
    main()
