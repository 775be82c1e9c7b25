#!/usr/bin/env python3
"""Python peer for the speed benchmark: numpy/scipy periods + statsmodels forecast.

Reads the raw little-endian f64 series written by `poolprof-analyzer-bench dump FILE`
(10,080 points each) and, for each series, does what poolprof-analyzer does:
linear detrend, Hann-tapered periodogram (scipy), Fisher's g-test on the strongest
peak, an autocorrelation check at its lag (numpy FFT), then a statsmodels
Holt-Winters forecast (additive damped trend, additive season when a period was found
and fits twice, else no season) of 60 steps. Prints wall time, per-series time and
peak RSS. Usage: peer.py FILE [--workers 2] [--points 10080]
"""

import argparse
import resource
import time
import warnings
from multiprocessing import Pool

import numpy as np
from scipy import signal
from statsmodels.tsa.holtwinters import ExponentialSmoothing

HORIZON = 60


def periods(y):
    """Strongest significant period in steps, or None."""
    n = len(y)
    x = signal.detrend(y)
    freqs, power = signal.periodogram(x, window="hann", detrend=False)
    k_min = 3  # at least three cycles
    band = power[k_min : n // 2]
    if band.size == 0 or band.sum() <= 0:
        return None
    i = int(np.argmax(band))
    g = band[i] / band.sum()
    m = band.size
    p = min(1.0, m * (1.0 - g) ** (m - 1))
    if p > 0.01:
        return None
    period = 1.0 / freqs[k_min + i]
    spec = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(spec * np.conj(spec))[:n]
    acf /= acf[0]
    lag = int(round(period))
    half = max(2, int(1.5 * period * period / n))
    lo, hi = max(2, lag - half), min(n - 2, lag + half)
    top = lo + int(np.argmax(acf[lo : hi + 1]))
    if acf[top] < 0.1 or not (acf[top] >= acf[top - 1] and acf[top] >= acf[top + 1]):
        return None
    return period


def forecast(y, period):
    m = int(round(period)) if period else 0
    seasonal = "add" if m >= 2 and len(y) >= 2 * m + 2 else None
    model = ExponentialSmoothing(
        y,
        trend="add",
        damped_trend=True,
        seasonal=seasonal,
        seasonal_periods=m if seasonal else None,
        initialization_method="estimated" if not seasonal or m <= 200 else "heuristic",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit()
    return fit.forecast(HORIZON)


def analyse(y):
    p = periods(y)
    f = forecast(y, p)
    assert len(f) == HORIZON
    return p is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--points", type=int, default=10080)
    a = ap.parse_args()
    data = np.fromfile(a.file, dtype="<f8").reshape(-1, a.points)
    start = time.perf_counter()
    with Pool(a.workers) as pool:
        found = pool.map(analyse, list(data), chunksize=4)
    wall = time.perf_counter() - start
    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    print(
        f"engine=python series={len(data)} points={a.points} workers={a.workers} "
        f"wall_s={wall:.2f} per_series_ms={wall * 1000 / len(data):.1f} "
        f"peak_rss_mib={rss / 1024:.0f} with_period={sum(found)}"
    )


if __name__ == "__main__":
    main()
