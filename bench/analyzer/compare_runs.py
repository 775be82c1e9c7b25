"""Compares two folders of the bench's forecast outputs, file by file (standard library).

Each folder holds what `forecast-eval`, `forecast-fresh`, `forecast-tenants`,
`forecast-recorded` or `forecast-public` printed, one file per run, named alike in both
(`e1.txt` for `forecast-eval --seed 1`, say). Prints, per class, how many files'
poolprof row changed and the mean over files of its sMAPE, MASE and MAE over naive's,
before -> after; then the runs where poolprof lost to a baseline (naive or any
seasonal-naive, on sMAPE or MASE) in either folder, and which of them are new or gone.

    python3 compare_runs.py /tmp/before /tmp/after
"""

import argparse
import collections
import os
import sys

BASELINES = ("naive", "snaive")


def rows(path):
    """{class: {method: (sMAPE, MASE, MAE over naive or None)}} of one output file."""
    out = collections.defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 7:
                continue
            try:
                smape, mase = float(cells[2]), float(cells[3])
            except ValueError:
                continue  # a header or a separator
            mae = None if cells[4] in ("–", "-") else float(cells[4])
            out[cells[0]][cells[1]] = (smape, mase, mae)
    return out


def losses(name, table):
    """(file, class, baseline) where poolprof did worse than the baseline on either
    measure."""
    found = set()
    for cls, methods in table.items():
        ours = methods.get("poolprof")
        if ours is None:
            continue
        for method, theirs in methods.items():
            if method.startswith(BASELINES) and (ours[0] > theirs[0] or ours[1] > theirs[1]):
                found.add((name, cls, method))
    return found


def compare(before, after):
    """Per-class means (before, after, files changed) and the losses of each folder."""
    classes = {}
    lost_before, lost_after = set(), set()
    for name in sorted(os.listdir(before)):
        if not os.path.isfile(os.path.join(after, name)):
            continue
        a, b = rows(os.path.join(before, name)), rows(os.path.join(after, name))
        lost_before |= losses(name, a)
        lost_after |= losses(name, b)
        for cls in a:
            if "poolprof" not in a[cls] or "poolprof" not in b.get(cls, {}):
                continue
            entry = classes.setdefault(cls, {"before": [], "after": [], "changed": 0})
            entry["before"].append(a[cls]["poolprof"])
            entry["after"].append(b[cls]["poolprof"])
            entry["changed"] += a[cls]["poolprof"] != b[cls]["poolprof"]
    return classes, lost_before, lost_after


def mean(values, i):
    present = [v[i] for v in values if v[i] is not None]
    return sum(present) / len(present) if present else float("nan")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args(argv)
    classes, lost_before, lost_after = compare(args.before, args.after)
    print("| class | files changed | sMAPE | MASE | MAE / naive |")
    print("| --- | ---: | --- | --- | --- |")
    for cls, e in classes.items():
        cells = [
            f"{mean(e['before'], i):.{p}f} -> {mean(e['after'], i):.{p}f}"
            for i, p in ((0, 3), (1, 4), (2, 4))
        ]
        print(f"| {cls} | {e['changed']}/{len(e['before'])} | " + " | ".join(cells) + " |")
    print(f"\nlosses to a baseline: {len(lost_before)} -> {len(lost_after)}")
    for loss in sorted(lost_after - lost_before):
        print("  new", *loss)
    for loss in sorted(lost_before - lost_after):
        print("  gone", *loss)


if __name__ == "__main__":
    main(sys.argv[1:])
