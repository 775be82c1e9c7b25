#!/usr/bin/env python3
"""Scores `poolprof-analyzer forecast` as a hidden hourly check calls it (standard library).

Each series is one `timestamp,value` CSV under ROOT/CLASS/ (as `public_series.py` lays
them out). From each, up to --windows windows of HISTORY + 48 hourly values without a
gap, ending 0, 1, 2, ... weeks before the series' end, are cut; the analyzer gets the
history as a CSV of values only (no timestamps, as competition series come) and
`--step 3600 --horizon 48`. Scored per class against naive and seasonal-naive of a
day and of a week: sMAPE (%) and MASE scaled by the history's mean absolute
difference at 24 steps, each the mean over forecasts, and the coverage of the 80% and
95% intervals.

    python3 cli_hourly.py ../../target/release/poolprof-analyzer /tmp/hourly --history 700
"""

import argparse
import csv
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HORIZON = 48
DAY, WEEK = 24, 168
METHODS = ("poolprof", "naive", "snaive(day)", "snaive(week)")


def smape(actual, forecast):
    """Symmetric MAPE in percent; a step where both are 0 counts as no error."""
    terms = [abs(a - f) / (abs(a) + abs(f)) if abs(a) + abs(f) > 0 else 0.0
             for a, f in zip(actual, forecast)]
    return 200.0 * statistics.fmean(terms)


def mase(history, actual, forecast, m=DAY):
    """MAE over the history's mean absolute difference at `m` steps; None when that is 0."""
    scale = statistics.fmean(abs(history[i] - history[i - m]) for i in range(m, len(history)))
    if scale == 0:
        return None
    return statistics.fmean(abs(a - f) for a, f in zip(actual, forecast)) / scale


def windows(rows, history, count):
    """(history, actual) pairs: `history` + HORIZON consecutive hourly values, ending
    0, 1, ... `count` - 1 weeks before the end of `rows` ((unix seconds, value) by time);
    a window with a missing hour is skipped."""
    length = history + HORIZON
    for back in range(count):
        end = len(rows) - WEEK * back
        if end < length:
            return
        window = rows[end - length:end]
        if window[-1][0] - window[0][0] == 3600 * (length - 1):
            values = [v for _, v in window]
            yield values[:history], values[history:]


def baselines(history):
    """Naive and seasonal-naive forecasts of HORIZON steps after `history`."""
    return {
        "naive": [history[-1]] * HORIZON,
        "snaive(day)": [history[-DAY + i % DAY] for i in range(HORIZON)],
        "snaive(week)": [history[-WEEK + i % WEEK] for i in range(HORIZON)],
    }


def forecast(analyzer, history, scratch):
    """The analyzer's JSON answer for `history`, given as values only."""
    scratch.write_text("".join(f"{v!r}\n" for v in history))
    run = subprocess.run(
        [analyzer, "forecast", "--input", str(scratch), "--step", "3600",
         "--horizon", str(HORIZON)],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{analyzer} exited {run.returncode} on a history of {len(history)} values: "
                 f"{run.stderr.strip()}")
    return json.loads(run.stdout)


class Scores:
    """Per-method sMAPE and MASE lists and the interval hits of one class."""

    def __init__(self):
        self.smape = {m: [] for m in METHODS}
        self.mase = {m: [] for m in METHODS}
        self.cover80, self.cover95 = [], []

    def add(self, history, actual, answer):
        forecasts = {"poolprof": answer["forecast"], **baselines(history)}
        for method, values in forecasts.items():
            self.smape[method].append(smape(actual, values))
            scaled = mase(history, actual, values)
            if scaled is not None:
                self.mase[method].append(scaled)
        self.cover80 += [lo <= a <= hi for lo, a, hi in
                         zip(answer["lower_80"], actual, answer["upper_80"])]
        self.cover95 += [lo <= a <= hi for lo, a, hi in
                         zip(answer["lower"], actual, answer["upper"])]

    def row(self, name):
        cells = [f"{statistics.fmean(self.smape[m]):.2f} / {statistics.fmean(self.mase[m]):.3f}"
                 for m in METHODS]
        cover = f"{100 * statistics.fmean(self.cover80):.1f}% / {100 * statistics.fmean(self.cover95):.1f}%"
        return f"| {name} | {len(self.smape['naive'])} | " + " | ".join(cells) + f" | {cover} |"


def read_series(path):
    with open(path, newline="") as f:
        return [(float(r["timestamp"]), float(r["value"])) for r in csv.DictReader(f)]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("analyzer", help="the poolprof-analyzer binary")
    parser.add_argument("root", help="folder of class folders of timestamp,value CSVs")
    parser.add_argument("--history", type=int, default=700, help="values of history (M4: 700)")
    parser.add_argument("--windows", type=int, default=4, help="windows per series, a week apart")
    args = parser.parse_args(argv)
    classes, pooled = {}, Scores()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = pathlib.Path(tmp) / "history.csv"
        for cls in sorted(os.listdir(args.root)):
            for path in sorted(pathlib.Path(args.root, cls).glob("*.csv")):
                for history, actual in windows(read_series(path), args.history, args.windows):
                    answer = forecast(args.analyzer, history, scratch)
                    classes.setdefault(cls, Scores()).add(history, actual, answer)
                    pooled.add(history, actual, answer)
    if not classes:
        sys.exit(f"{args.root}: no window of {args.history + HORIZON} hourly values without a gap")
    print("| class | forecasts | " + " | ".join(METHODS) + " | 80% / 95% cover |")
    print("| --- | ---: |" + " --- |" * len(METHODS) + " --- |")
    for cls, scores in classes.items():
        print(scores.row(cls))
    print(pooled.row("all classes"))


if __name__ == "__main__":
    main(sys.argv[1:])
