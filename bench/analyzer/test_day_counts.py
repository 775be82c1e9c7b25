"""Tests of day_counts.py: python3 -m unittest test_day_counts"""

import math
import os
import random
import tempfile
import unittest

import day_counts

FIVE_MIN = 300.0
WEEK = 7 * 288


def written(name, values, step):
    """A file as the bench's EVAL_SERIES_DIR writes it (only lines 2 and 9 matter)."""
    path = os.path.join(tempfile.mkdtemp(), name)
    lines = ["naive", " ".join(map(repr, values)), "", "", "", "", "", "", repr(step)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


class History(unittest.TestCase):
    def test_reads_class_step_and_values(self):
        path = written("1-7.txt", [1.0, 2.5, 3.0], FIVE_MIN)
        self.assertEqual(day_counts.history(path), ("1", FIVE_MIN, [1.0, 2.5, 3.0]))

    def test_refuses_short_files_and_bad_numbers_naming_the_file(self):
        short = os.path.join(tempfile.mkdtemp(), "0-0.txt")
        with open(short, "w", encoding="utf-8") as f:
            f.write("naive\n1 2 3\n")
        with self.assertRaisesRegex(ValueError, "0-0.txt: 3 lines"):
            day_counts.history(short)
        with self.assertRaisesRegex(ValueError, "line 2 .* or 9"):
            day_counts.history(written("0-1.txt", ["x"], FIVE_MIN))
        with self.assertRaisesRegex(ValueError, "not positive"):
            day_counts.history(written("0-2.txt", [1.0], 0.0))


class Peak(unittest.TestCase):
    def test_a_daily_rhythm_on_steps_peaks(self):
        rng = random.Random(1)
        level, values = 0.5, []
        for i in range(WEEK):
            if rng.random() < 0.005:
                level = rng.uniform(0.2, 0.8)
            values.append(level + 0.3 * math.sin(2 * math.pi * i / 288) + 0.05 * rng.gauss(0, 1))
        self.assertTrue(day_counts.acf_peaks_at_day(values, FIVE_MIN))

    def test_a_walk_a_step_and_a_constant_do_not(self):
        rng = random.Random(2)
        walk = [0.0]
        for _ in range(WEEK - 1):
            walk.append(walk[-1] + rng.gauss(0, 1))
        step = [0.0] * (WEEK // 2) + [1.0] * (WEEK - WEEK // 2)
        for values in (walk, step, [3.0] * WEEK):
            self.assertFalse(day_counts.acf_peaks_at_day(values, FIVE_MIN))

    def test_too_short_for_a_day_and_a_half(self):
        values = [math.sin(2 * math.pi * i / 288) for i in range(400)]
        self.assertFalse(day_counts.acf_peaks_at_day(values, FIVE_MIN))


class Table(unittest.TestCase):
    def test_counts_per_class_and_build(self):
        rows = [
            ("0", True, [False, True]),
            ("0", False, [True, True]),
            ("0", True, [True, True]),
            ("1", False, [False, False]),
        ]
        lines = day_counts.table(rows, ["old", "new"])
        self.assertEqual(
            lines[2:],
            [
                "| 0 | old | 2 of 3 | 1 of 2 |",
                "| 0 | new | 3 of 3 | 2 of 2 |",
                "| 1 | old | 0 of 1 | 0 of 0 |",
                "| 1 | new | 0 of 1 | 0 of 0 |",
            ],
        )


if __name__ == "__main__":
    unittest.main()
