"""Tests of cli_hourly.py: python3 -m unittest test_cli_hourly (in bench/analyzer)."""

import unittest

import cli_hourly


class Measures(unittest.TestCase):
    def test_smape_is_symmetric_in_percent_and_both_zero_is_no_error(self):
        self.assertAlmostEqual(cli_hourly.smape([100.0], [50.0]), 200.0 * 50 / 150)
        self.assertAlmostEqual(cli_hourly.smape([50.0], [100.0]), 200.0 * 50 / 150)
        self.assertEqual(cli_hourly.smape([0.0, 0.0], [0.0, 0.0]), 0.0)
        self.assertAlmostEqual(cli_hourly.smape([0.0, 1.0], [0.0, 0.0]), 100.0)

    def test_mase_is_scaled_by_the_historys_daily_difference(self):
        # a history that rises by 2 a day: its difference at 24 steps is 2 everywhere
        history = [2.0 * (i // 24) for i in range(96)]
        self.assertAlmostEqual(cli_hourly.mase(history, [10.0, 10.0], [9.0, 12.0]), 1.5 / 2.0)
        self.assertIsNone(cli_hourly.mase([5.0] * 96, [5.0], [6.0]), "a flat history has no scale")


class Windows(unittest.TestCase):
    @staticmethod
    def hourly(n, missing=()):
        return [(3600.0 * i, float(i)) for i in range(n) if i not in missing]

    def test_windows_end_a_week_apart_from_the_end(self):
        rows = self.hourly(900)
        got = list(cli_hourly.windows(rows, 700, 3))
        self.assertEqual(len(got), 1, "a second window would start before the series")
        history, actual = got[0]
        self.assertEqual((len(history), len(actual)), (700, 48))
        self.assertEqual((history[0], actual[-1]), (152.0, 899.0))
        ends = [a[-1] for _, a in cli_hourly.windows(self.hourly(2000), 700, 4)]
        self.assertEqual(ends, [1999.0, 1831.0, 1663.0, 1495.0])

    def test_a_window_with_a_missing_hour_is_skipped(self):
        rows = self.hourly(1500, missing={1400})
        ends = [a[-1] for _, a in cli_hourly.windows(rows, 700, 3)]
        # the end moved by one row, the window holding the gap is gone
        self.assertEqual(ends, [1330.0, 1162.0])


class Baselines(unittest.TestCase):
    def test_seasonal_naive_repeats_the_last_day_and_week(self):
        history = [float(i) for i in range(336)]
        got = cli_hourly.baselines(history)
        self.assertEqual(got["naive"], [335.0] * 48)
        self.assertEqual(got["snaive(day)"][:2], [312.0, 313.0])
        self.assertEqual(got["snaive(day)"][24:26], [312.0, 313.0])
        self.assertEqual(got["snaive(week)"][:2], [168.0, 169.0])


if __name__ == "__main__":
    unittest.main()
