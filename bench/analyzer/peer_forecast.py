#!/usr/bin/env python3
"""statsmodels peer for the forecast evaluation (`forecast-eval --peer`).

Reads the set written by `poolprof-analyzer-bench forecast-dump FILE` (one series a
line: class id step horizon seasons values...) and writes one line per series and
method: `class id method v1 ... vh`. Methods, both given the generator's true seasons
(an advantage poolprof does not get):
  sm-ets       ExponentialSmoothing, additive damped trend, additive season of the
               first true season when it fits twice (estimated initial states up to
               200 steps of season, heuristic beyond), else no season;
  sm-mstl-ets  MSTL with every true season that fits twice, then ETS (additive damped
               trend) on the seasonally adjusted series; each season's last cycle
               repeated. Series without a season get sm-ets only.
Usage: peer_forecast.py IN OUT [--workers 2]
"""

import argparse
import time
import warnings
from multiprocessing import Pool

import numpy as np
from statsmodels.tsa.holtwinters import ExponentialSmoothing
from statsmodels.tsa.seasonal import MSTL


def ets(y, h, m):
    seasonal = "add" if m and len(y) >= 2 * m + 2 else None
    model = ExponentialSmoothing(
        y,
        trend="add",
        damped_trend=True,
        seasonal=seasonal,
        seasonal_periods=m if seasonal else None,
        initialization_method="estimated" if not seasonal or m <= 200 else "heuristic",
    )
    return model.fit().forecast(h)


def mstl_ets(y, h, seasons):
    fit = MSTL(y, periods=seasons).fit()
    seasonal = np.asarray(fit.seasonal).reshape(len(y), -1)
    adjusted = y - seasonal.sum(axis=1)
    f = ExponentialSmoothing(adjusted, trend="add", damped_trend=True).fit().forecast(h)
    for k, m in enumerate(seasons):
        last = seasonal[-m:, k]
        f = f + np.array([last[j % m] for j in range(h)])
    return f


def run(line):
    w = line.split()
    c, i, h = w[0], w[1], int(w[3])
    seasons = [] if w[4] == "-" else [int(s) for s in w[4].split(",")]
    y = np.array([float(v) for v in w[5:]])
    fits = [m for m in seasons if len(y) >= 2 * m + 2]
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out.append(("sm-ets", ets(y, h, fits[0] if fits else 0)))
        except Exception as e:  # noqa: BLE001 - a failed fit is reported, not fatal
            print(f"sm-ets failed on {c} {i}: {e}")
        if fits:
            try:
                out.append(("sm-mstl-ets", mstl_ets(y, h, fits)))
            except Exception as e:  # noqa: BLE001
                print(f"sm-mstl-ets failed on {c} {i}: {e}")
    return "".join(f"{c} {i} {m} " + " ".join(repr(float(v)) for v in f) + "\n" for m, f in out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    lines = open(a.input).read().splitlines()
    start = time.perf_counter()
    with Pool(a.workers) as pool:
        results = pool.map(run, lines, chunksize=1)
    with open(a.output, "w") as f:
        f.writelines(results)
    print(f"{len(lines)} series in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
