"""Tests of swf_series.py: python3 -m unittest test_swf_series (in bench/analyzer)."""

import gzip
import pathlib
import sys
import tempfile
import unittest

import swf_series

HEADER = "; UnixStartTime: 1000000\n; MaxNodes: 10\n; MaxProcs: 10\n"


def job(number, submit, wait, run, procs, user):
    """One SWF line: the 18 fields, unknown ones -1."""
    fields = [number, submit, wait, run, procs, -1, -1, procs, -1, -1, 1, user] + [-1] * 6
    return " ".join(str(f) for f in fields)


class Sampling(unittest.TestCase):
    def test_a_scrape_sees_the_jobs_running_at_its_instant_and_the_starts_since_the_last(self):
        # a job of 5 processors from 100 s to 700 s, one of 2 from 600 s to 610 s
        jobs = [(100.0, 700.0, 5, 1), (600.0, 610.0, 2, 2)]
        rows = swf_series.sample(jobs, 10, 300, 1200)
        self.assertEqual([r[0] for r in rows], [0.0, 0.5, 0.7, 0.0, 0.0])
        self.assertEqual([r[1] for r in rows], [0, 1, 2, 0, 0])
        # started in (0, 300] and (300, 600]
        self.assertEqual([r[2] for r in rows], [0, 1, 1, 0, 0])

    def test_a_job_shorter_than_a_step_between_scrapes_is_never_seen_running(self):
        rows = swf_series.sample([(310.0, 590.0, 4, 1)], 10, 300, 900)
        self.assertEqual([r[1] for r in rows], [0, 0, 0, 0])
        self.assertEqual([r[2] for r in rows], [0, 0, 1, 0])


class Logs(unittest.TestCase):
    def write(self, d, body, name="T-1.swf.gz"):
        path = pathlib.Path(d) / name
        with gzip.open(path, "wt") as f:
            f.write(body)
        return path

    def test_a_log_is_read_with_its_start_and_size_and_bad_jobs_are_skipped(self):
        with tempfile.TemporaryDirectory() as d:
            lines = [job(1, 0, 10, 100, 4, 7), job(2, 5, -1, 50, 20, 8), job(3, 9, 0, -1, 2, 9)]
            path = self.write(d, HEADER + "\n".join(lines) + "\n")
            start, size, jobs = swf_series.read_log(path)
        self.assertEqual((start, size), (1_000_000, 10))
        # an unknown wait is none; a job wider than the machine is the machine; one
        # without a run time is skipped
        self.assertEqual(jobs, [(10.0, 110.0, 4, 7), (5.0, 55.0, 10, 8)])

    def test_a_file_without_the_header_is_refused_by_name(self):
        with tempfile.TemporaryDirectory() as d:
            path = self.write(d, job(1, 0, 0, 10, 1, 1) + "\n")
            with self.assertRaises(SystemExit) as stop:
                swf_series.read_log(path)
        self.assertIn("T-1.swf.gz", str(stop.exception))
        self.assertIn("UnixStartTime", str(stop.exception))

    def test_a_field_that_is_no_number_is_refused_with_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            bad = job(2, "x", 0, 10, 1, 1)
            path = self.write(d, HEADER + job(1, 0, 0, 10, 1, 1) + "\n" + bad + "\n")
            with self.assertRaises(SystemExit) as stop:
                swf_series.read_log(path)
        # three header lines, a good job, then the bad one
        self.assertIn("T-1.swf.gz:5", str(stop.exception))
        self.assertIn("'x'", str(stop.exception))

    def test_users_are_split_into_virtual_clusters_sized_by_their_peak(self):
        jobs = [(0.0, 10.0, 3, 1), (5.0, 20.0, 4, 3), (0.0, 50.0, 2, 2)]
        parts = swf_series.virtual_clusters(jobs, 2)
        # users 1 and 3 share a cluster; their jobs overlap from 5 to 10 s
        self.assertEqual(parts, [([(0.0, 50.0, 2, 2)], 2), ([jobs[0], jobs[1]], 7)])

    def test_pieces_alternate_halves_and_steps(self):
        with tempfile.TemporaryDirectory() as d:
            # one job a day for 9 days; pieces of 2 days
            lines = [job(i, i * 86_400, 0, 3_600, 5, 1) for i in range(9)]
            path = self.write(d, HEADER + "\n".join(lines) + "\n")
            out = pathlib.Path(d) / "out"
            sys.argv = ["swf_series.py", "--out", str(out), "--piece-days", "2", str(path)]
            swf_series.main()
            dev = sorted(p.name for p in (out / "dev" / "swf-share").iterdir())
            held = sorted(p.name for p in (out / "held" / "swf-starts").iterdir())
            self.assertEqual(dev, ["T-1-00.csv", "T-1-02.csv"])
            self.assertEqual(held, ["T-1-01.csv", "T-1-03.csv"])
            first = (out / "dev" / "swf-share" / "T-1-00.csv").read_text().splitlines()
            third = (out / "dev" / "swf-share" / "T-1-02.csv").read_text().splitlines()
        # two days at 5 min, then two days at 10 min, on the log's clock
        self.assertEqual(len(first), 1 + 576)
        self.assertEqual(len(third), 1 + 288)
        # the hour's job is seen from its start to the scrape before its end
        self.assertEqual(first[1], "1000000,0.5")
        self.assertEqual(first[12], "1003300,0.5")
        self.assertEqual(first[13], "1003600,0.0")
        self.assertEqual(third[1], f"{1_000_000 + 4 * 86_400},0.5")
        self.assertEqual(third[7], f"{1_000_000 + 4 * 86_400 + 3_600},0.0")


if __name__ == "__main__":
    unittest.main()
