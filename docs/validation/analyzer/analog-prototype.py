"""The session-50 prototype of the hedge's analogues (forecast-eval-session50.md).

Reads the files `EVAL_SERIES_DIR=DIR poolprof-analyzer-bench forecast-tenants --seed S`
(or `forecast-eval`) writes, one per series: the model, history, future, forecast,
80% and 95% bands, then the step. For each series it puts the analogues' median in
a second median with the forecast and naive, in level form (the futures' values) or
difference form (futures less their analogue, added to the last value), with ties
taken oldest first, most recent first, or all, and a share of 5%, 10% or 20% of the
history; it prints, per class (the file name's prefix), the total MAE over naive's.

    python3 analog-prototype.py DIR...
"""
import glob
import sys

import numpy as np


def load(path):
    lines = open(path).read().split("\n")
    values = lambda s: np.array([float(x) for x in s.split()]) if s.strip() else np.array([])
    return lines[0], values(lines[1]), values(lines[2]), values(lines[3])


def analogues(y, h, share, form, ties):
    n, last = len(y), y[-1]
    t_all = np.arange(0, n - 1)
    dist = np.abs(y[t_all] - last)
    recent = -t_all if ties != "old" else t_all
    order = np.lexsort((recent, dist))
    out = np.empty(h)
    for j in range(1, h + 1):
        t = order[order < n - j]
        k = max(5, int(share * (n - j)))
        if ties == "all" and len(t) > k:
            idx = t[dist[t] <= dist[t[k - 1]]]
        else:
            idx = t[:k]
        if len(idx) == 0:
            out[j - 1] = last
        elif form == "diff":
            out[j - 1] = last + np.median(y[idx + j] - y[idx])
        else:
            out[j - 1] = np.median(y[idx + j])
    return out


def main():
    totals = {}
    for d in sys.argv[1:]:
        for path in sorted(glob.glob(d + "/*.txt")):
            cls = path.split("/")[-1].split("-")[0]
            _, y, future, forecast = load(path)
            h, ok = len(future), np.isfinite(future)
            mae = lambda p: np.mean(np.abs(p[ok] - future[ok]))
            naive = np.full(h, y[-1])
            row = totals.setdefault(cls, {"naive": 0.0, "forecast": 0.0})
            row["naive"] += mae(naive)
            row["forecast"] += mae(forecast)
            for form in ("level", "diff"):
                for ties in ("old", "new", "all"):
                    for share in (0.05, 0.1, 0.2):
                        a = analogues(y, h, share, form, ties)
                        m = np.median(np.vstack([forecast, a, naive]), axis=0)
                        key = f"{form[0]}{ties}{share}"
                        row[key] = row.get(key, 0.0) + mae(m)
    for cls, row in sorted(totals.items()):
        print(cls, " ".join(f"{k}={v / row['naive']:.4f}" for k, v in row.items()))


if __name__ == "__main__":
    main()
