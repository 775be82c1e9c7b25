"""Tests of public_series.py: python3 -m unittest test_public_series (in bench/analyzer)."""

import pathlib
import sys
import tempfile
import unittest

import public_series


class UnixSeconds(unittest.TestCase):
    def test_dates_are_read_as_unix_seconds(self):
        self.assertEqual(public_series.unix_seconds("1970-01-01 00:00:00"), 0.0)
        self.assertEqual(public_series.unix_seconds("2014-02-14 14:30:00"), 1_392_388_200.0)
        self.assertEqual(public_series.unix_seconds("2000-03-01 00:00:01"), 951_868_801.0)
        self.assertEqual(public_series.unix_seconds("1392388200"), 1_392_388_200.0)
        self.assertIsNone(public_series.unix_seconds("14:30"))

    def test_the_date_layouts_of_public_exports_are_read(self):
        moment = 1_392_388_200.0  # 2014-02-14 14:30 UTC
        for text in ("2014-02-14 14:30", "2/14/2014 14:30", "02/14/14 14:30", "14-02-2014 14:30"):
            self.assertEqual(public_series.unix_seconds(text), moment, text)
        self.assertIsNone(public_series.unix_seconds("14/02/2014 14:30"))

    def test_a_twelve_hour_clock_is_read(self):
        # open-data portals write 02:30:00 PM; 12 AM is midnight, 12 PM noon
        self.assertEqual(public_series.unix_seconds("02/14/2014 02:30:00 PM"), 1_392_388_200.0)
        self.assertEqual(public_series.unix_seconds("02/14/2014 12:30:00 AM"), 1_392_337_800.0)
        self.assertEqual(public_series.unix_seconds("02/14/2014 12:30:00 PM"), 1_392_381_000.0)


class Layout(unittest.TestCase):
    def test_each_column_is_a_series_and_long_ones_are_cut_by_days(self):
        with tempfile.TemporaryDirectory() as d:
            src = pathlib.Path(d) / "load.csv"
            rows = [f"2016-07-{1 + h // 24:02d} {h % 24:02d}:00:00,{h},{2 * h}" for h in range(72)]
            src.write_text("date,A,B\n" + "\n".join(rows) + "\n")
            sys.argv = ["public_series.py", "--out", d, "--class", "c", "--chunk-days", "2", str(src)]
            public_series.main()
            names = sorted(p.name for p in (pathlib.Path(d) / "c").iterdir())
            self.assertEqual(names, ["load_A_000.csv", "load_A_001.csv", "load_B_000.csv", "load_B_001.csv"])
            first = (pathlib.Path(d) / "c" / "load_B_001.csv").read_text().splitlines()
            self.assertEqual(first[0], "timestamp,value")
            self.assertEqual(first[1], f"{1_467_331_200 + 48 * 3600},96")
            self.assertEqual(len(first), 1 + 24)

    def test_rows_are_sorted_blank_rows_skipped_and_columns_picked(self):
        with tempfile.TemporaryDirectory() as d:
            src = pathlib.Path(d) / "grid.csv"
            src.write_text("Datetime,MW,weather\n1/1/2012 1:00,20,rain\n"
                           "12/31/2011 23:00,5,sun\n1/1/2012 0:00,10,sun\n ,\n")
            sys.argv = ["public_series.py", "--out", d, "--class", "c", "--columns", "MW", str(src)]
            public_series.main()
            names = sorted(p.name for p in (pathlib.Path(d) / "c").iterdir())
            self.assertEqual(names, ["grid_MW.csv"])
            lines = (pathlib.Path(d) / "c" / "grid_MW.csv").read_text().splitlines()
            self.assertEqual(lines[1:], ["1325372400,5", "1325376000,10", "1325379600,20"])

    def test_a_column_that_is_not_there_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            src = pathlib.Path(d) / "grid.csv"
            src.write_text("Datetime,MW\n1/1/2012 1:00,20\n")
            sys.argv = ["public_series.py", "--out", d, "--class", "c", "--columns", "GW", str(src)]
            with self.assertRaises(SystemExit) as stop:
                public_series.main()
            self.assertIn("no column GW (it has MW)", str(stop.exception.code))


if __name__ == "__main__":
    unittest.main()
