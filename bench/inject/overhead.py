#!/usr/bin/env python3
"""Overhead of poolprof's CUPTI injection library against a baseline and torch.profiler,
measured by processes that take turns on the GPU.

Why turns: separate runs of the same PyTorch program differ by up to 38% on the H100 VM
(kernels-h100.md, runs 2 and 3), because the machine's speed drifts over seconds. Here
one long-lived, warmed-up process per variant waits on a pipe; the coordinator lets
them run one at a time, each a fixed number of steps (about one second), in a rotating
order: a round is one turn of every variant, back to back, so they share the same
machine state. The overhead of a variant is the median over rounds of its time over the
baseline's time in the same round. The whole is repeated with fresh processes (`--sets`)
so a slow or fast process cannot decide the result.

Variants (each its own process, its main thread pinned to the same CPU, other threads
to a second core; the exporter runs elsewhere):
  base        no library, no profiler;
  lib         the library with its defaults (CUDA_INJECTION64_PATH only);
  lib_cupti   the defaults, with the libcupti --cupti names (POOLPROF_INJECT_CUPTI) rather
              than the copy PyTorch loaded;
  lib_attached the defaults, but CUPTI stays attached while off (POOLPROF_INJECT_DETACH=off);
  lib_kernels the defaults without memcpy and memset records (POOLPROF_INJECT_MEMCPY=off);
  lib_never   loaded, CUPTI started, no record kind ever enabled (POOLPROF_INJECT_DUTY=0/1000);
  lib_always  the library tracing every launch (POOLPROF_INJECT_DUTY=always);
  prof        torch.profiler with CUDA activities, started before the first program's
              turns and never stopped (stopping it processes every record, which takes
              long and is not what is measured; the process exits instead).
The machine's speed drifts within seconds, so turns are short (0.25 s by default) and
many. A short turn of `lib` may or may not hold the 50 ms of the default duty cycle in
which records are on (the phase drifts from round to round), so the figure to read
for the library is the ratio of total times over all rounds (`sum lib / sum base`, with
a bootstrap 95% interval over rounds); the median of per-round ratios is shown too.

Programs: those of kernels_workloads.py (train, infer, tiny).

Usage (the coordinator starts the workers itself):
  bench/inject/overhead.py run --lib PATH --socket PATH --out results.json [--sets 2]
      [--rounds 8] [--turn-seconds 1.0] [--cpus MAIN:HELPERS] [--programs train,infer,tiny]
  bench/inject/overhead.py summary results.json      # markdown tables
  bench/inject/overhead.py run --fake ...             # no GPU: sleeps stand in for steps
On the H100, docs/validation/h100-kernels.sh starts the exporter and runs it.
"""

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The programs and the CPU placement are shared with the H100 validation scripts.
sys.path.insert(0, os.path.join(HERE, "..", "..", "docs", "validation"))

VARIANTS = ["base", "lib", "lib_cupti", "lib_attached", "lib_kernels", "lib_never", "lib_always", "prof"]
LIB_ENV = {"lib": {}, "lib_cupti": {}, "lib_attached": {"POOLPROF_INJECT_DETACH": "off"}, "lib_kernels": {"POOLPROF_INJECT_MEMCPY": "off"},
           "lib_never": {"POOLPROF_INJECT_DUTY": "0/1000"}, "lib_always": {"POOLPROF_INJECT_DUTY": "always"}}
TARGETS = {"train": 1.0, "infer": 3.0, "tiny": 3.0}  # issue 4: overhead in %, library defaults
FAKE_COST = {"base": 1.0, "lib": 1.003, "lib_cupti": 1.003, "lib_attached": 1.1, "lib_kernels": 1.002, "lib_never": 1.0, "lib_always": 1.05, "prof": 1.3}


# --- worker ---------------------------------------------------------------------------

class FakeTorch:
    """Enough of torch for --fake: steps are sleeps, slower per variant."""

    class cuda:  # noqa: N801 - mimics torch.cuda
        @staticmethod
        def synchronize():
            pass

        @staticmethod
        def empty_cache():
            pass


def fake_program(variant):
    cost = FAKE_COST[variant]

    def step():
        time.sleep(0.002 * cost)

    return step


def reply(out, **fields):
    out.write(json.dumps(fields) + "\n")
    out.flush()


def worker(args):
    # Replies go to the pipe the coordinator reads; anything else printing to stdout
    # (torch, CUDA) would corrupt it, so stdout becomes stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from kernels_workloads import PROGRAMS, Placement, other_threads_cpu, proc_status, warm_up
    placement = Placement(args.cpus)
    if args.fake:
        torch = FakeTorch
    else:
        placement.before_cuda()
        import torch
        torch.cuda.init()
        torch.zeros(1, device="cuda")  # CUDA's, CUPTI's and the library's threads start here
        placement.after_cuda()
    step, profiler = None, None
    reply(out, ok=True, pid=os.getpid(), rss_bytes=proc_status("VmRSS"))
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "build":
            step = fake_program(args.variant) if args.fake else PROGRAMS[cmd["program"]](torch)
            reply(out, ok=True)
        elif op == "warm":
            warm_up(torch, step, cmd["seconds"])
            t1 = time.perf_counter()
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            reply(out, ok=True, step_seconds=(time.perf_counter() - t1) / 3)
        elif op == "time":
            for _ in range(cmd["pre"]):  # untimed: caches and clocks after waiting
                step()
            placement.sweep()
            torch.cuda.synchronize()
            main0, other0 = time.thread_time(), other_threads_cpu()
            t0 = time.perf_counter()
            for _ in range(cmd["steps"]):
                step()
            torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
            reply(out, ok=True, seconds=seconds, main_cpu_s=time.thread_time() - main0,
                  other_cpu_s=other_threads_cpu() - other0)
        elif op == "prof_start":
            if not args.fake and profiler is None:
                from torch.profiler import ProfilerActivity, profile
                profiler = profile(activities=[ProfilerActivity.CUDA])
                profiler.start()
            reply(out, ok=True)
        elif op == "free":
            step = None
            torch.cuda.empty_cache()
            reply(out, ok=True)
        elif op == "quit":
            reply(out, ok=True, rss_peak_bytes=proc_status("VmHWM"), rss_bytes=proc_status("VmRSS"))
            out.close()
            os._exit(0)  # no profiler teardown, no interpreter shutdown work
        else:
            reply(out, ok=False, error=f"unknown op {op}")


# --- coordinator ----------------------------------------------------------------------

class Worker:
    def __init__(self, variant, args, set_index):
        env = dict(os.environ)
        for key in ("CUDA_INJECTION64_PATH", "POOLPROF_INJECT_DUTY", "POOLPROF_INJECT_MEMCPY",
                    "POOLPROF_INJECT_DETACH", "POOLPROF_INJECT_WINDOW_LOG", "POOLPROF_INJECT_CUPTI"):
            env.pop(key, None)
        if variant in LIB_ENV:
            env["CUDA_INJECTION64_PATH"] = args.lib
            env["POOLPROF_INJECT_SOCKET"] = args.socket
            env["POOLPROF_WORKLOAD"] = f"overhead-{variant}"
            env.update(LIB_ENV[variant])
        if variant == "lib_cupti":  # the path is an argument, not a constant
            env["POOLPROF_INJECT_CUPTI"] = args.cupti
        cmd = [sys.executable, os.path.abspath(__file__), "worker", "--variant", variant, "--cpus", args.cpus]
        if args.fake:
            cmd.append("--fake")
        self.variant = variant
        self.log = open(f"{args.out}.{variant}.{set_index}.log", "w")
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)
        self.hello = None

    def ready(self):
        """Waits for the worker's CUDA start (workers start in parallel: not timed)."""
        self.hello = self.read()

    def read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.variant} exited (rc {self.proc.poll()}); see {self.log.name}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"worker {self.variant}: {answer}")
        return answer

    def ask(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self):
        try:
            return self.ask(op="quit")
        finally:
            self.proc.wait(timeout=60)
            self.log.close()


def run_program(workers, program, args, set_index, turns, note):
    for w in workers.values():
        w.ask(op="build", program=program)
    step_s = {}
    for v, w in workers.items():  # warm up one at a time: each has the GPU to itself
        step_s[v] = w.ask(op="warm", seconds=args.warm)["step_seconds"]
    steps = max(3, round(args.turn_seconds / step_s["base"]))
    note(f"set {set_index} {program}: base step {step_s['base'] * 1e3:.2f} ms, {steps} steps a turn")
    if "prof" in workers:  # CUPTI starts (first program) and instruments kernels: not timed
        workers["prof"].ask(op="prof_start")
        workers["prof"].ask(op="warm", seconds=args.warm / 2)
    order = list(workers)
    for r in range(args.rounds):
        k = r % len(order)
        for v in order[k:] + order[:k]:
            a = workers[v].ask(op="time", steps=steps, pre=args.pre)
            turns.append({"set": set_index, "program": program, "round": r, "variant": v, "steps": steps,
                          "seconds": a["seconds"], "main_cpu_s": a["main_cpu_s"], "other_cpu_s": a["other_cpu_s"]})
    for w in workers.values():
        w.ask(op="free")


def cmd_run(args):
    variants = [v for v in args.variants.split(",") if v]
    if "base" not in variants or any(v not in VARIANTS for v in variants):
        sys.exit(f"--variants must include base and be among {VARIANTS}")
    if "lib_cupti" in variants and not os.path.isabs(args.cupti):
        sys.exit("--variants lib_cupti needs --cupti, an absolute path to a libcupti")
    programs = [p for p in args.programs.split(",") if p]
    if any(p not in TARGETS for p in programs):
        sys.exit(f"--programs must be among {list(TARGETS)}")
    results = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "args": vars(args),
               "turns": [], "memory": [], "notes": []}

    def note(text):
        print(text, flush=True)
        results["notes"].append(text)

    def save():
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)

    deadline = time.monotonic() + args.budget
    for s in range(args.sets):
        if s > 0 and time.monotonic() + results.get("set_seconds", 0) > deadline:
            note(f"stopping after {s} sets: another would pass the {args.budget:.0f} s budget")
            break
        t0 = time.monotonic()
        workers = {}
        try:
            for v in variants:
                workers[v] = Worker(v, args, s)
            for w in workers.values():
                w.ready()
            for program in programs:
                run_program(workers, program, args, s, results["turns"], note)
                save()
        finally:
            for v, w in workers.items():
                try:
                    bye = w.close()
                    results["memory"].append({"set": s, "variant": v, "rss_peak_bytes": bye["rss_peak_bytes"],
                                              "rss_after_init_bytes": (w.hello or {}).get("rss_bytes", 0)})
                except Exception as e:  # noqa: BLE001 - one worker's end must not lose the rest
                    note(f"worker {v} of set {s} did not quit cleanly: {e}")
                    w.proc.kill()
        results["set_seconds"] = time.monotonic() - t0
        note(f"set {s} took {results['set_seconds']:.0f} s")
        save()
    save()


# --- summary --------------------------------------------------------------------------

def pct(x):
    return f"{(x - 1) * 100:+.2f}%"


def quantile(xs, q):
    xs = sorted(xs)
    i = (len(xs) - 1) * q
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def round_pairs(turns, program, variant):
    """(time per step of `variant`, of the baseline) for every round and set having both."""
    by = {}
    for t in turns:
        if t["program"] == program:
            by.setdefault((t["set"], t["round"]), {})[t["variant"]] = t["seconds"] / t["steps"]
    return [(r[variant], r["base"]) for r in by.values() if variant in r and "base" in r]


def sum_ratio(pairs):
    """Total time of the variant over the baseline's."""
    return sum(a for a, _ in pairs) / sum(b for _, b in pairs)


def bootstrap(pairs, n=2000, seed=1):
    """95% interval of sum(a) / sum(b), resampling rounds."""
    import random
    rng = random.Random(seed)
    stats = []
    for _ in range(n):
        sample = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        stats.append(sum_ratio(sample))
    stats.sort()
    return stats[int(0.025 * n)], stats[int(0.975 * n) - 1]


def step_ms(ts):
    """Median [min-max] of the time per step over turns `ts`."""
    ms = [t["seconds"] / t["steps"] * 1e3 for t in ts]
    return f"{st.median(ms):.3f} [{min(ms):.3f}-{max(ms):.3f}]"


def cpu_ms(ts):
    """Median CPU per step of the main thread / the other threads over turns `ts`."""
    main = st.median(t["main_cpu_s"] / t["steps"] * 1e3 for t in ts)
    other = st.median(t["other_cpu_s"] / t["steps"] * 1e3 for t in ts)
    return f"{main:.3f} / {other:.3f}"


def variant_table(turns, programs, variants, cell):
    """A markdown table, a row per program and a column per variant: `cell` of the
    turns of each pair, or n/a where there are none."""
    print("| program | " + " | ".join(variants) + " |")
    print("| --- |" + " ---: |" * len(variants))
    for p in programs:
        cells = []
        for v in variants:
            ts = [t for t in turns if t["program"] == p and t["variant"] == v]
            cells.append(cell(ts) if ts else "n/a")
        print(f"| {p} | " + " | ".join(cells) + " |")


def summary(path):
    with open(path) as f:
        results = json.load(f)
    turns = results["turns"]
    programs = [p for p in TARGETS if any(t["program"] == p for t in turns)]
    variants = [v for v in VARIANTS if any(t["variant"] == v for t in turns)]
    sets = sorted({t["set"] for t in turns})
    rounds = {p: len(round_pairs(turns, p, "base")) for p in programs}
    print(f"Turns of about {results['args']['turn_seconds']} s, {len(sets)} set(s) of fresh processes, "
          f"rounds per program: {', '.join(f'{p} {n}' for p, n in rounds.items())}.\n")
    print("### Time per step (ms): median [min-max] over turns\n")
    variant_table(turns, programs, variants, step_ms)
    print("\n### Overhead against the baseline: total time over all rounds (bootstrap 95% over rounds), "
          "and the median [IQR] of per-round ratios\n")
    others = [v for v in variants if v != "base"]
    print("| program | variant | rounds | sum / sum base | 95% interval | per-round median [IQR] | target | met |")
    print("| --- | --- | ---: | ---: | --- | --- | ---: | --- |")
    for p in programs:
        for v in others:
            pairs = round_pairs(turns, p, v)
            if not pairs:
                continue
            total = sum_ratio(pairs)
            lo, hi = bootstrap(pairs)
            rs = [a / b for a, b in pairs]
            target, met = "", ""
            if v == "lib":
                target = f"< {TARGETS[p]:.0f}%"
                met = "yes" if hi < 1 + TARGETS[p] / 100 else ("no" if lo >= 1 + TARGETS[p] / 100 else "not shown")
            print(f"| {p} | {v} | {len(pairs)} | **{pct(total)}** | {pct(lo)} .. {pct(hi)} | {pct(st.median(rs))} "
                  f"[{pct(quantile(rs, 0.25))}, {pct(quantile(rs, 0.75))}] | {target} | {met} |")
    print("\n`met`: yes when the whole interval is under the target, no when it is all above, "
          "otherwise not shown by this run.")
    if len(sets) > 1:
        print("\n### Per set of processes: total time over the baseline's\n")
        print("| program | set | " + " | ".join(others) + " |")
        print("| --- | ---: |" + " ---: |" * len(others))
        for p in programs:
            for s in sets:
                sub = [t for t in turns if t["set"] == s]
                cells = [pct(sum_ratio(round_pairs(sub, p, v))) if round_pairs(sub, p, v) else "n/a" for v in others]
                print(f"| {p} | {s} | " + " | ".join(cells) + " |")
    print("\n### CPU per step of the benchmarked process (ms, median over turns): main thread / other threads\n")
    variant_table(turns, programs, variants, cpu_ms)
    if results["memory"]:
        print("\n### Memory of each process (MiB, median over sets)\n")
        print("| variant | RSS after CUDA init | peak RSS | peak vs base |")
        print("| --- | ---: | ---: | ---: |")
        peak = {}
        for v in variants:
            ms = [m for m in results["memory"] if m["variant"] == v]
            if ms:
                peak[v] = st.median(m["rss_peak_bytes"] for m in ms) / 2**20
                init = st.median(m["rss_after_init_bytes"] for m in ms) / 2**20
                delta = f"{peak[v] - peak['base']:+.1f}" if "base" in peak and v != "base" else ""
                print(f"| {v} | {init:.1f} | {peak[v]:.1f} | {delta} |")
    for n in results["notes"]:
        if "stopping" in n or "did not quit" in n:
            print(f"\nNote: {n}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--lib", default="")
    r.add_argument("--socket", default="")
    r.add_argument("--cupti", default="", help="the libcupti of the lib_cupti variant (absolute path)")
    r.add_argument("--out", required=True)
    r.add_argument("--sets", type=int, default=2)
    r.add_argument("--rounds", type=int, default=8)
    r.add_argument("--turn-seconds", type=float, default=0.25)
    r.add_argument("--pre", type=int, default=1, help="untimed steps at the start of each turn")
    r.add_argument("--warm", type=float, default=1.0, help="warm-up seconds per program and process")
    r.add_argument("--cpus", default="", help="MAIN:HELPERS cpu lists (empty: no pinning)")
    r.add_argument("--programs", default="train,infer,tiny")
    r.add_argument("--variants", default="base,lib,lib_always,prof")
    r.add_argument("--budget", type=float, default=420, help="no new set starts if it would end after this")
    r.add_argument("--fake", action="store_true", help="no GPU: sleeps stand in for steps")
    w = sub.add_parser("worker")
    w.add_argument("--variant", required=True, choices=VARIANTS)
    w.add_argument("--cpus", default="")
    w.add_argument("--fake", action="store_true")
    s = sub.add_parser("summary")
    s.add_argument("path")
    args = p.parse_args()
    if args.cmd == "run":
        if not (1 <= args.sets <= 10 and 1 <= args.rounds <= 1000 and 0.05 <= args.turn_seconds <= 10
                and 0 <= args.pre <= 100):
            sys.exit("run: --sets 1..10, --rounds 1..1000, --turn-seconds 0.05..10, --pre 0..100")
        if not args.fake and not (args.lib and os.path.isfile(args.lib) and args.socket):
            sys.exit("run: --lib must name the built libpoolprof_inject.so and --socket the exporter's socket")
        args.lib = os.path.abspath(args.lib) if args.lib else ""
        cmd_run(args)
    elif args.cmd == "worker":
        worker(args)
    else:
        summary(args.path)


if __name__ == "__main__":
    main()
