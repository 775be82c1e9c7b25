"""Tests of compare_runs.py: python3 -m unittest test_compare_runs"""

import os
import tempfile
import unittest

import compare_runs

HEADER = "| class | method | sMAPE % | MASE | MAE / naive | 80% cover | 95% cover |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n"


def table(poolprof):
    return HEADER + (
        "| hourly | naive | 20.00 | 1.000 | 1.000 | – | – |\n"
        f"| hourly | poolprof | {poolprof[0]:.2f} | {poolprof[1]:.3f} | {poolprof[2]:.3f} | 80.0% | 95.0% |\n"
        "| hourly | snaive(day) | 10.00 | 0.800 | 0.700 | – | – |\n"
    )


class CompareRuns(unittest.TestCase):
    def folders(self, before, after):
        root = tempfile.mkdtemp()
        dirs = []
        for side, runs in (("a", before), ("b", after)):
            d = os.path.join(root, side)
            os.mkdir(d)
            for name, text in runs.items():
                with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                    f.write(text)
            dirs.append(d)
        return dirs

    def test_means_changes_and_losses(self):
        a, b = self.folders(
            {"e1.txt": table((12.0, 0.9, 0.6)), "e2.txt": table((8.0, 0.7, 0.5))},
            {"e1.txt": table((9.0, 0.75, 0.6)), "e2.txt": table((8.0, 0.7, 0.5))},
        )
        classes, lost_a, lost_b = compare_runs.compare(a, b)
        e = classes["hourly"]
        self.assertEqual(e["changed"], 1)
        self.assertAlmostEqual(compare_runs.mean(e["before"], 0), 10.0)
        self.assertAlmostEqual(compare_runs.mean(e["after"], 1), 0.725)
        # e1 lost to seasonal-naive (12 > 10 sMAPE) before, not after
        self.assertEqual(lost_a, {("e1.txt", "hourly", "snaive(day)")})
        self.assertEqual(lost_b, set())

    def test_a_file_missing_on_one_side_is_skipped(self):
        a, b = self.folders({"e1.txt": table((8.0, 0.7, 0.5))}, {})
        classes, lost_a, lost_b = compare_runs.compare(a, b)
        self.assertEqual(dict(classes), {})


if __name__ == "__main__":
    unittest.main()
