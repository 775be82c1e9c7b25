"""Counts the series whose daily period `poolprof-analyzer periods` reports (standard library).

Reads the histories the bench writes with `EVAL_SERIES_DIR` (line 2 the history, line 9
the step; the file name's part before the first `-` is the class) and gives each to one
or more builds of `poolprof-analyzer periods`. A day is reported when a period lies
within 2% of 86,400 s. Prints, per class and build, the share of all series, and of
those whose autocorrelation peaks at one day (over 0.2 there and 0.05 above its values
at half a day and a day and a half: a level that only persists has a high
autocorrelation at a day too, without a cycle), that report the day.

    python3 day_counts.py '/tmp/swf-dump/*.txt' ../../target/release/poolprof-analyzer [OTHER_BUILD ...]
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import subprocess
import sys
import tempfile

DAY = 86_400.0
PEAK_HEIGHT = 0.2
PEAK_RISE = 0.05


def history(path):
    """(class, step in seconds, values) of one written series."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if len(lines) < 9:
        raise ValueError(f"{path}: {len(lines)} lines, the bench writes at least 9")
    try:
        values = [float(v) for v in lines[1].split()]
        step = float(lines[8])
    except ValueError as e:
        raise ValueError(f"{path}: line 2 (history) or 9 (step) is not numbers: {e}") from e
    if not step > 0:
        raise ValueError(f"{path}: step {step} on line 9 is not positive")
    return os.path.basename(path).split("-")[0], step, values


def acf_peaks_at_day(values, step):
    """Whether the autocorrelation about the mean is PEAK_HEIGHT or more at one day and
    PEAK_RISE above it at half a day and a day and a half."""
    day = round(DAY / step)
    n = len(values)
    if day < 2 or n <= 3 * day // 2:
        return False
    mean = sum(values) / n
    spread = sum((v - mean) ** 2 for v in values)
    if spread <= 0:
        return False

    def at(lag):
        return sum((values[i] - mean) * (values[i + lag] - mean) for i in range(n - lag)) / spread

    height = at(day)
    return height > PEAK_HEIGHT and height - max(at(day // 2), at(3 * day // 2)) > PEAK_RISE


def reports_day(analyzer, values, step, folder):
    """Whether `analyzer periods` reports a period within 2% of a day for `values`."""
    fd, path = tempfile.mkstemp(suffix=".csv", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(f"{v!r}\n" for v in values))
    run = subprocess.run(
        [analyzer, "periods", "--input", path, "--step", repr(step)],
        capture_output=True,
        text=True,
        check=False,
    )
    os.unlink(path)
    if run.returncode != 0:
        raise RuntimeError(f"{analyzer} periods exited {run.returncode}: {run.stderr.strip()}")
    periods = json.loads(run.stdout).get("periods", [])
    return any(abs(p["period_seconds"] / DAY - 1) <= 0.02 for p in periods)


def table(rows, builds):
    """Markdown lines: per class and build, the day reported in all series and where
    the autocorrelation peaks at a day. `rows` are (class, peaks, [reported per build])."""
    out = ["| class | build | a day reported | where the autocorrelation peaks at a day |",
           "| --- | --- | ---: | ---: |"]
    by_class = collections.defaultdict(list)
    for cls, peaks, reported in rows:
        by_class[cls].append((peaks, reported))
    for cls in sorted(by_class):
        series = by_class[cls]
        peaked = [r for p, r in series if p]
        for i, build in enumerate(builds):
            found = sum(r[i] for _, r in series)
            found_peaked = sum(r[i] for r in peaked)
            out.append(f"| {cls} | {build} | {found} of {len(series)} | {found_peaked} of {len(peaked)} |")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pattern", help="glob of the bench's written series")
    parser.add_argument("analyzers", nargs="+", help="builds of poolprof-analyzer to compare")
    args = parser.parse_args()
    paths = sorted(glob.glob(args.pattern))
    if not paths:
        sys.exit(f"no file matches {args.pattern}: write series with EVAL_SERIES_DIR first")
    folder = tempfile.mkdtemp()

    def one(path):
        cls, step, values = history(path)
        reported = [reports_day(a, values, step, folder) for a in args.analyzers]
        return cls, acf_peaks_at_day(values, step), reported

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        rows = list(pool.map(one, paths))
    print("\n".join(table(rows, args.analyzers)))


if __name__ == "__main__":
    main()
