"""Measures the suite alone and two at a time on one GPU, in long-lived workers.

    python3 corun.py --out runs.jsonl [--profile-seconds 12] [--seconds 3] [--reps 2]

Each program runs in its own worker process (worker.py), started once with this
process's environment (so CUDA_INJECTION64_PATH, or the MPS pipe directory, reach
them all) and `POOLPROF_WORKLOAD=<program>`. The schedule, every run written as one
JSON line as soon as it ends (a cut-off run keeps what it measured):

1. `profile` (when --profile-seconds > 0): each program alone for that long, so the
   exporter and Prometheus see it alone; the windows are written for the analyzer.
2. `alone` round 1, every pair (`pair`, rep 1), `alone` round 2, every pair again in
   the reverse order (rep 2), `alone` round 3: alone runs before, between and after.

A pair's two programs are told the same start time; both step for --warm seconds
before it and until --seconds after it, so each measures its rate while the other
runs. Normalized progress = rate beside the peer / median of the program's alone rates.
"""

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON lines, one per run")
    p.add_argument("--programs", default="", help="comma-separated (default: all of programs.py)")
    p.add_argument("--profile-seconds", type=float, default=0.0)
    p.add_argument("--gap", type=float, default=0.0, help="idle seconds after each profile window")
    p.add_argument("--only-profile", action="store_true", help="profile windows only, no pairs")
    p.add_argument("--alone-only", action="store_true", help="alone runs only (--reps + 1 rounds), no pairs")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--warm", type=float, default=0.5)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--budget", type=float, default=540.0, help="start nothing that would end later (s)")
    p.add_argument("--label", default="", help="recorded in every line (e.g. the sharing mode)")
    a = p.parse_args()
    if not (0.5 <= a.seconds <= 60 and 0 <= a.warm <= 5 and 1 <= a.reps <= 5):
        p.error("--seconds 0.5-60, --warm 0-5, --reps 1-5")
    return a


class Worker:
    def __init__(self, name, cpus):
        env = dict(os.environ, POOLPROF_WORKLOAD=name, PYTHONUNBUFFERED="1")
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "worker.py"), name],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )
        self.info = None

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} exited (code {self.proc.poll()})")
        return json.loads(line)

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()


def cpu_sets(n):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2 * n:
        return [None] * n
    return [{cpus[2 * i], cpus[2 * i + 1]} for i in range(n)]


class Session:
    def __init__(self, args, workers):
        self.args, self.workers = args, workers
        self.started = time.time()
        self.out = open(args.out, "a")

    def left(self):
        return self.args.budget - (time.time() - self.started)

    def run(self, kind, names, seconds, rep=0):
        if self.left() < seconds + self.args.warm + 2:
            print(f"budget: skipping {kind} {names}", file=sys.stderr)
            return None
        t0 = time.time() + self.args.warm + 0.3
        for n in names:
            self.workers[n].send(f"run {t0:.6f} {seconds} {self.args.warm}")
        results = {n: self.workers[n].read() for n in names}
        line = {"kind": kind, "label": self.args.label, "rep": rep, "programs": names,
                "t0": t0, "seconds": seconds, "results": results}
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()
        time.sleep(0.3)  # let the GPU drain and clocks settle between runs
        return line


def summarize(lines, names):
    alone = {n: [l["results"][n]["rate"] for l in lines if l["kind"] == "alone" and n in l["results"]] for n in names}
    ref = {n: statistics.median(v) for n, v in alone.items() if v}
    spread = {n: (max(v) - min(v)) / ref[n] for n, v in alone.items() if v and ref[n] > 0}
    print("| program | alone steps/s (median) | alone spread (max-min)/median | runs |")
    print("| --- | ---: | ---: | ---: |")
    for n in names:
        if n in ref:
            print(f"| {n} | {ref[n]:.2f} | {spread.get(n, 0):.3f} | {len(alone[n])} |")
    print()
    print("| pair | rep | progress a | progress b | score |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for l in lines:
        if l["kind"] != "pair":
            continue
        a, b = l["programs"]
        pa = l["results"][a]["rate"] / ref[a]
        pb = l["results"][b]["rate"] / ref[b]
        print(f"| {a} + {b} | {l['rep']} | {pa:.3f} | {pb:.3f} | {(pa + pb) / 2:.3f} |")


def main():
    args = parse()
    sys.path.insert(0, HERE)
    from programs import PROGRAMS  # noqa: E402 (torch-free import is not possible; cheap here)

    names = [n for n in (args.programs.split(",") if args.programs else PROGRAMS) if n]
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        sys.exit(f"unknown programs {unknown}; known: {sorted(PROGRAMS)}")
    sets = cpu_sets(len(names))
    workers = {n: Worker(n, c) for n, c in zip(names, sets)}
    for w in workers.values():
        w.info = w.read()
        print(f"ready {w.info}", file=sys.stderr)
    s = Session(args, workers)
    lines = []
    keep = lambda l: l and lines.append(l)  # noqa: E731
    ready = {"kind": "ready", "label": args.label, "workers": {n: w.info for n, w in workers.items()}}
    s.out.write(json.dumps(ready) + "\n")
    if args.profile_seconds > 0:
        for n in names:
            keep(s.run("profile", [n], args.profile_seconds))
            # the injection library reports a sampled window seconds after it ran: let
            # it arrive while no other program is busy
            time.sleep(args.gap)
    if args.only_profile:
        for w in workers.values():
            w.send("quit")
        return
    pairs = list(itertools.combinations(names, 2))
    for rep in range(1, args.reps + 1):
        for n in names:
            keep(s.run("alone", [n], args.seconds, rep))
        order = pairs if rep % 2 else list(reversed(pairs))
        for a, b in [] if args.alone_only else order:
            keep(s.run("pair", [a, b], args.seconds, rep))
    for n in names:
        keep(s.run("alone", [n], args.seconds, args.reps + 1))
    for w in workers.values():
        w.send("quit")
    for w in workers.values():
        w.proc.wait(timeout=60)
    summarize(lines, names)


if __name__ == "__main__":
    main()
