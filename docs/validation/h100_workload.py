#!/usr/bin/env python3
"""GPU phases for validating poolprof-exporter on a real GPU (h100-exporter.sh).

Runs idle, a bf16 GEMM loop (tensor cores busy) and an elementwise loop (DRAM
busy) on GPU 0 while a thread scrapes the exporter every second, then prints a
markdown table of the medians per phase and whether tensor activity was high in
the GEMM and DRAM activity high in the elementwise loop.

usage: h100_workload.py --url http://127.0.0.1:PORT/metrics --scrapes FILE --table FILE
"""

import argparse
import os
import re
import statistics
import sys
import threading
import time
import urllib.request

LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# Rows of the short table: (title, metric name, required labels).
KEY_ROWS = [
    ("tensor active (any)", "poolprof_gpu_tensor_any_active_ratio", {}),
    ("tensor active (hmma)", "poolprof_gpu_tensor_active_ratio", {"kind": "hmma"}),
    ("DRAM active", "poolprof_gpu_dram_active_ratio", {}),
    ("SM active", "poolprof_gpu_sm_active_ratio", {}),
    ("SM occupancy", "poolprof_gpu_sm_occupancy_ratio", {}),
    ("graphics engine active", "poolprof_gpu_graphics_engine_active_ratio", {}),
    ("GPU utilization", "poolprof_gpu_utilization_ratio", {}),
    ("memory controller utilization", "poolprof_gpu_memory_controller_utilization_ratio", {}),
]
SKIP_LABELS = {"gpu", "uuid", "pci_bus_id", "name"}


def parse(text):
    """(name, labels dict, value) of each sample line."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        yield m.group(1), dict(LABEL.findall(m.group(2) or "")), value


class Scraper(threading.Thread):
    """Scrapes every second, tagging each scrape with the current phase."""

    def __init__(self, url, out):
        super().__init__(daemon=True)
        self.url, self.out = url, out
        self.phase = "start"
        self.scrapes = []  # (phase, seconds since start, text)
        self.failures = 0
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self):
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=2) as resp:
                    text = resp.read().decode()
                self.scrapes.append((self.phase, started - self.t0, text))
                self.out.write(f"### phase={self.phase} t={started - self.t0:.2f}\n{text}")
            except OSError as e:
                self.failures += 1
                self.out.write(f"### phase={self.phase} t={started - self.t0:.2f} failed: {e}\n")
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))


def gemm(torch, seconds):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    done, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        for _ in range(20):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        done += 20
    elapsed = time.monotonic() - t0
    return f"{done} GEMMs {n}^3 bf16, {2 * n**3 * done / elapsed / 1e12:.0f} TFLOP/s"


def elementwise(torch, seconds):
    numel = 1 << 30  # 4 GiB of fp32: far beyond L2, so every pass goes to DRAM
    x = torch.ones(numel, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    passes, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        for _ in range(10):
            x.mul_(1.0001).add_(1.0)
        torch.cuda.synchronize()
        passes += 20
    elapsed = time.monotonic() - t0
    return f"{passes} elementwise passes over {numel * 4 >> 30} GiB, {passes * 8 * numel / elapsed / 1e9:.0f} GB/s"


def medians(scrapes, phase, skip, gpu):
    """Median of every GPU-0 series over a phase."""
    values = {}
    taken = [s for s in scrapes if s[0] == phase][skip:]
    for _, _, text in taken:
        for name, labels, value in parse(text):
            if labels.get("gpu", gpu) != gpu:
                continue
            key = (name, tuple(sorted((k, v) for k, v in labels.items() if k not in SKIP_LABELS)))
            values.setdefault(key, []).append(value)
    return {k: statistics.median(v) for k, v in values.items()}, len(taken)


def fmt(v):
    if v is None:
        return "absent"
    return f"{v:.3f}" if abs(v) < 1000 else f"{v:.4g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--scrapes", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--idle-seconds", type=float, default=5)
    ap.add_argument("--gemm-seconds", type=float, default=20)
    ap.add_argument("--elementwise-seconds", type=float, default=20)
    ap.add_argument("--skip", type=int, default=3, help="scrapes dropped at each phase start")
    args = ap.parse_args()
    if not args.url.startswith(("http://127.0.0.1:", "http://localhost:")):
        ap.error("--url must be a loopback http URL")

    import torch  # imported late so argument errors show at once

    if not torch.cuda.is_available():
        print("h100_workload: torch sees no CUDA device", file=sys.stderr)
        return 1
    torch.cuda.init()
    device = torch.cuda.get_device_name(0)
    notes = []
    with open(args.scrapes, "w") as out:
        scraper = Scraper(args.url, out)
        scraper.start()
        for phase, seconds, work in (("idle", args.idle_seconds, None),
                                     ("gemm", args.gemm_seconds, gemm),
                                     ("elementwise", args.elementwise_seconds, elementwise)):
            scraper.phase = phase
            print(f"phase {phase}: {seconds:.0f} s", file=sys.stderr, flush=True)
            if work is None:
                time.sleep(seconds)
            else:
                notes.append(f"{phase}: {work(torch, seconds)}")
                torch.cuda.empty_cache()
            time.sleep(1.5)  # let the last collection of the phase land
        scraper.stop.set()
        scraper.join(timeout=5)

    gpu, pid = "0", str(os.getpid())
    phases = ["idle", "gemm", "elementwise"]
    per_phase = {}
    counts = {}
    for p in phases:
        per_phase[p], counts[p] = medians(scraper.scrapes, p, args.skip, gpu)

    def value(p, name, want):
        for (n, labels), v in per_phase[p].items():
            if n == name and all(dict(labels).get(k) == w for k, w in want.items()):
                return v
        if "pid" in want:  # in a container NVML reports host pids: take any process
            return value(p, name, {k: w for k, w in want.items() if k != "pid"})
        return None

    lines = [f"device: {device}; scrapes per phase after dropping {args.skip}: "
             + ", ".join(f"{p} {counts[p]}" for p in phases)
             + f"; failed scrapes: {scraper.failures}", ""]
    lines += ["| metric (GPU 0, median) | idle | gemm | elementwise |", "| --- | ---: | ---: | ---: |"]
    power = next((n for (n, _) in per_phase["gemm"] if n.startswith("poolprof_gpu_power") and n.endswith("_watts")
                  and "limit" not in n), None)
    rows = KEY_ROWS + ([("power W", power, {})] if power else [])
    rows += [("workload process: SM util", "poolprof_process_sm_utilization_ratio", {"pid": pid}),
             ("workload process: memory B", "poolprof_process_gpu_memory_bytes", {"pid": pid})]
    for title, name, want in rows:
        lines.append(f"| {title} | " + " | ".join(fmt(value(p, name, want)) for p in phases) + " |")
    tensor = {p: value(p, "poolprof_gpu_tensor_any_active_ratio", {}) for p in phases}
    dram = {p: value(p, "poolprof_gpu_dram_active_ratio", {}) for p in phases}
    ok_tensor = None not in (tensor["gemm"], tensor["elementwise"]) and tensor["gemm"] > 0.3 \
        and tensor["gemm"] > 2 * tensor["elementwise"]
    ok_dram = None not in (dram["gemm"], dram["elementwise"]) and dram["elementwise"] > 0.4 \
        and dram["elementwise"] > dram["gemm"]
    lines += ["", *notes, "",
              f"tensor activity high in GEMM, low in elementwise: {'PASS' if ok_tensor else 'FAIL'}",
              f"DRAM activity high in elementwise, above GEMM: {'PASS' if ok_dram else 'FAIL'}"]
    short = "\n".join(lines)

    full = ["", "## every GPU-0 series with a changing unit (median per phase)", "",
            "| series | idle | gemm | elementwise |", "| --- | ---: | ---: | ---: |"]
    keys = sorted({k for p in phases for k in per_phase[p]})
    for name, labels in keys:
        if not name.endswith(("_ratio", "_watts", "_hz", "_celsius", "_bytes", "_per_second")):
            continue
        shown = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else "")
        full.append(f"| {shown} | " + " | ".join(fmt(per_phase[p].get((name, labels))) for p in phases) + " |")
    with open(args.table, "w") as f:
        f.write(short + "\n" + "\n".join(full) + "\n")
    print(short)
    return 0 if ok_tensor and ok_dram else 1


if __name__ == "__main__":
    sys.exit(main())
