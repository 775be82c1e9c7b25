#!/usr/bin/env python3
"""A profiler started later in a process the injection library runs in: does the
profiler still get every kernel, and does the library step aside?

Each case is its own process running a loop of small kernels (100 element-wise
launches, then a 5 ms pause, so the profiler's trace stays small). It starts
torch.profiler (CUDA activities) at a chosen point of the library's duty cycle, runs
for long enough that the library reaches its next window edge, stops the profiler and
counts the kernels the profiler recorded against the kernels launched. It then runs on
for a while, to show the process is unharmed, and reports `poolprof_inject_tracing()`
(-1: the library stepped aside). The library's and the profiler's lines on stderr are
collected.

Cases (`--when`):
  window    the profiler starts while the library's records are on (a window);
  detached  it starts while they are off and CUPTI is detached;
  none      no library: the profiler alone, for its own count.

Usage:
  profiler_later.py run --lib NEW.so [--old-lib OLD.so] --out results.json
  profiler_later.py case --when window --out case.json      (one process; run starts it)
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_PER_STEP = 100
KERNEL_NAME = "elementwise"


def case(args):
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.zeros(256, device="cuda")

    def step():
        for _ in range(KERNELS_PER_STEP):
            x.add_(1.0)
        torch.cuda.synchronize()
        time.sleep(0.005)

    def run_for(seconds):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            step()
            n += 1
        return n

    run_for(1.0)
    tracing = None
    if args.when != "none":
        sys.path.insert(0, HERE)
        from kernels_workloads import tracing_probe
        tracing = tracing_probe()
        want = 1 if args.when == "window" else 0
        # Into the wanted phase: out of it first, so "detached" starts after a window
        # ended (plus the drain and the detach), "window" near a window's start.
        while tracing() == want:
            step()
        while tracing() != want:
            step()
        if args.when == "detached":
            run_for(0.6)
    state_at_start = tracing() if tracing else None
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.start()
    steps = run_for(args.profile_seconds)
    prof.stop()
    recorded = sum(1 for e in prof.events() if KERNEL_NAME in e.name and str(e.device_type).endswith("CUDA"))
    after = run_for(args.after_seconds)
    result = {"when": args.when, "library_state_at_profiler_start": state_at_start,
              "profiled_steps": steps, "launched": steps * KERNELS_PER_STEP,
              "profiler_kernels": recorded, "steps_after": after,
              "library_state_at_end": tracing() if tracing else None,
              "libcupti_mapped": sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcupti" in line})}
    with open(args.out, "w") as f:
        json.dump(result, f)


def run(args):
    libs = [("none", None)] + [(name, path) for name, path in (("new", args.lib), ("old", args.old_lib)) if path]
    rows = []
    for name, path in libs:
        for when in (["none"] if path is None else ["window", "detached"]):
            out = f"{args.out}.{name}.{when}.json"
            env = {k: v for k, v in os.environ.items() if not k.startswith("POOLPROF_INJECT") and k != "CUDA_INJECTION64_PATH"}
            if path:
                env["CUDA_INJECTION64_PATH"] = os.path.abspath(path)
                env["POOLPROF_INJECT_SOCKET"] = args.socket
            cmd = [sys.executable, os.path.abspath(__file__), "case", "--when", when, "--out", out,
                   "--profile-seconds", str(args.profile_seconds), "--after-seconds", str(args.after_seconds)]
            t0 = time.monotonic()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            row = {"library": name, "when": when, "rc": p.returncode, "seconds": round(time.monotonic() - t0, 1),
                   "stderr": [line for line in p.stderr.splitlines()
                              if "poolprof-inject" in line or "CUPTI" in line or "Traceback" in line or "Error" in line][:8]}
            if p.returncode == 0:
                with open(out) as f:
                    row.update(json.load(f))
            else:
                row["stderr_tail"] = p.stderr[-2000:]
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)
    print("\n| library | profiler starts | library state then | kernels launched | profiler recorded | "
          "library state at end | steps after | libcupti copies mapped |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['library']} | {r['when']} | {r.get('library_state_at_profiler_start')} | {r.get('launched')} | "
              f"{r.get('profiler_kernels')} | {r.get('library_state_at_end')} | {r.get('steps_after')} | "
              f"{len(r.get('libcupti_mapped', []))} |")
    print("\nstderr lines (library and profiler):\n")
    for r in rows:
        for line in r["stderr"]:
            print(f"- {r['library']}, {r['when']}: `{line}`")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True, help="the library under test")
    r.add_argument("--old-lib", default="", help="an earlier build, for comparison")
    r.add_argument("--socket", default="/tmp/poolprof-profiler-later/none.sock",
                   help="the exporter's socket (none needed: the library backs off)")
    r.add_argument("--out", required=True)
    r.add_argument("--profile-seconds", type=float, default=5.0)
    r.add_argument("--after-seconds", type=float, default=5.0)
    c = sub.add_parser("case")
    c.add_argument("--when", required=True, choices=["window", "detached", "none"])
    c.add_argument("--out", required=True)
    c.add_argument("--profile-seconds", type=float, default=5.0)
    c.add_argument("--after-seconds", type=float, default=5.0)
    args = p.parse_args()
    if not (0.5 <= args.profile_seconds <= 60 and 0 <= args.after_seconds <= 60):
        sys.exit("--profile-seconds 0.5..60, --after-seconds 0..60")
    if args.cmd == "run":
        for path in filter(None, (args.lib, args.old_lib)):
            if not os.path.isfile(path):
                sys.exit(f"run: {path} is not a file; build the library first")
        run(args)
    else:
        case(args)


if __name__ == "__main__":
    main()
