#!/usr/bin/env python3
"""The program h100-counters.sh profiles, and the table it prints.

`run` loops two kernels of known work for a while: a bf16 GEMM of N×N×N (2·N³ FLOPs
on the tensor cores) and an fp32 add of two 1 GiB tensors into a third (one FLOP and
12 bytes of DRAM traffic per element), and writes steps per second. With
`--profile-after` it then starts torch.profiler for a few steps and counts the CUDA
kernels it recorded (the library must have left CUPTI to it).

`table` reads an exporter's /metrics text and the runs' JSON, prints per profiled
kernel of the workload its FLOPs, DRAM bytes and time against the expected values,
and PASS/FAIL lines; it exits 1 when a check fails.

Usage:
  counters_workload.py run --seconds 20 --out run.json [--profile-after]
  counters_workload.py table --metrics metrics.prom --on on.json --off off.json \
      --workload-on W1 --workload-off W2
"""

import argparse
import json
import re
import sys
import time

N = 4096
ADD_ELEMENTS = (1 << 30) // 4  # 1 GiB of fp32


def run(args):
    import torch

    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
    x = torch.ones(ADD_ELEMENTS, device="cuda", dtype=torch.float32)
    y = torch.ones(ADD_ELEMENTS, device="cuda", dtype=torch.float32)
    z = torch.empty(ADD_ELEMENTS, device="cuda", dtype=torch.float32)

    def step():
        torch.matmul(a, b, out=c)
        torch.add(x, y, out=z)

    step()
    torch.cuda.synchronize()
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        steps += 10
    elapsed = time.perf_counter() - start
    result = {"steps": steps, "seconds": elapsed, "steps_per_second": steps / elapsed}
    if args.profile_after:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                step()
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        result["profiler_kernels"] = len(kernels)
        result["profiler_kernels_expected"] = 40
    with open(args.out, "w") as f:
        json.dump(result, f)
    print(json.dumps(result))


SAMPLE = re.compile(r'^(\w+)\{([^}]*)\}\s+(\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text):
    for line in text.splitlines():
        m = SAMPLE.match(line.strip())
        if m:
            yield m.group(1), dict(LABEL.findall(m.group(2))), float(m.group(3))


def kernels_of(text, workload):
    out = {}
    for name, labels, value in samples(text):
        if labels.get("workload") != workload or "kernel" not in labels:
            continue
        k = out.setdefault(labels["kernel"], {"flops": {}, "dram": {}, "seconds": None, "launches": 0.0})
        if name == "poolprof_kernel_flops":
            k["flops"][labels["precision"]] = value
        elif name == "poolprof_kernel_dram_bytes":
            k["dram"][labels["direction"]] = value
        elif name == "poolprof_kernel_profiled_duration_seconds":
            k["seconds"] = value
        elif name == "poolprof_kernel_launches_total":
            k["launches"] += value
    return out


def ratio(got, want):
    return got / want if want else float("nan")


def table(args):
    text = open(args.metrics).read()
    on = json.load(open(args.on))
    off = json.load(open(args.off))
    kernels = kernels_of(text, args.workload_on)
    profiled = {n: k for n, k in kernels.items() if k["flops"] or k["dram"]}
    gemm_flops = 2 * N**3
    add_bytes = 12 * ADD_ELEMENTS
    print("## Kernels profiled once (POOLPROF_KERNEL_COUNTERS=1)\n")
    print("| kernel | tensor | fp32 | fp16 | fp64 | DRAM read | DRAM write | time (us) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, k in sorted(profiled.items()):
        f, d = k["flops"], k["dram"]
        cell = lambda v: "-" if v is None else f"{v:.4g}"
        us = None if k["seconds"] is None else k["seconds"] * 1e6
        print(f"| {name[:60]} | {cell(f.get('tensor'))} | {cell(f.get('fp32'))} | {cell(f.get('fp16'))} "
              f"| {cell(f.get('fp64'))} | {cell(d.get('read'))} | {cell(d.get('write'))} | {cell(us)} |")
    print(f"\nexpected: GEMM {N}x{N}x{N} bf16 = {gemm_flops:.4g} FLOPs (2*M*N*K); "
          f"add of {ADD_ELEMENTS} fp32 = {ADD_ELEMENTS:.4g} FLOPs and {add_bytes:.4g} DRAM bytes (3x4 per element)\n")
    failed = 0

    def check(ok, what):
        nonlocal failed
        print(("PASS " if ok else "FAIL ") + what)
        failed += 0 if ok else 1

    check(bool(profiled), f"counters published for {len(profiled)} kernel(s) of {args.workload_on}")
    gemm = max(profiled.items(), key=lambda kv: kv[1]["flops"].get("tensor", 0), default=None)
    if gemm and gemm[1]["flops"].get("tensor"):
        r = ratio(gemm[1]["flops"]["tensor"], gemm_flops)
        check(0.9 <= r <= 1.1, f"GEMM tensor FLOPs {gemm[1]['flops']['tensor']:.4g} = {r:.3f} x 2MNK ({gemm[0][:50]})"
              + ("" if 0.9 <= r <= 1.1 else "; a factor of 2 means tensor ops count FMAs once: weigh them by 2"))
    else:
        check(False, "a kernel with tensor FLOPs (the GEMM)")
    # The add is the kernel that moved about 12 bytes per element. PyTorch computes
    # a + alpha*b, which the compiler may emit as one FMA (2 FLOPs) per element.
    dram_of = lambda k: sum(k["dram"].values()) if len(k["dram"]) == 2 else 0
    add = min(profiled.items(), key=lambda kv: abs(ratio(dram_of(kv[1]), add_bytes) - 1), default=None)
    if add and dram_of(add[1]):
        r = ratio(dram_of(add[1]), add_bytes)
        check(0.9 <= r <= 1.1, f"add DRAM bytes {dram_of(add[1]):.4g} = {r:.3f} x 12 per element ({add[0][:50]})")
        # CUDA-core FLOPs are an upper bound (warp instructions of the FMA pipe, 64
        # each, index arithmetic included): at least the 1 or 2 per element it does.
        fp32 = add[1]["flops"].get("fp32")
        r = ratio(fp32 or 0, ADD_ELEMENTS)
        check(r >= 0.95, f"add fp32 FLOPs {fp32 or 0:.4g} = {r:.3f} per element (an upper bound of the 1 or 2 it does)")
        secs = add[1]["seconds"]
        if secs:
            print(f"INFO add profiled time {secs * 1e6:.0f} us = {add_bytes / secs / 1e9:.0f} GB/s")
    else:
        check(False, "a kernel with DRAM bytes read and written (the add)")
    speed = ratio(on["steps_per_second"], off["steps_per_second"])
    check(speed >= 0.95, f"steps/s with counters {on['steps_per_second']:.2f} vs without {off['steps_per_second']:.2f} "
          f"({(1 - speed) * 100:+.1f}% cost over {on['seconds']:.0f} s)")
    others = kernels_of(text, args.workload_off)
    per_step = lambda ks, run: sum(k["launches"] for k in ks.values()) / max(run["steps"], 1)
    r = ratio(per_step(kernels, on), per_step(others, off))
    check(0.9 <= r <= 1.1, f"launches per step counted with counters vs without: {r:.3f} (kernel replay must not add launches)")
    if "profiler_kernels" in on:
        got = on["profiler_kernels"]
        check(got >= on["profiler_kernels_expected"],
              f"torch.profiler started afterwards recorded {got} of {on['profiler_kernels_expected']} kernels")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seconds", type=float, default=20)
    r.add_argument("--out", required=True)
    r.add_argument("--profile-after", action="store_true")
    t = sub.add_parser("table")
    for a in ("--metrics", "--on", "--off", "--workload-on", "--workload-off"):
        t.add_argument(a, required=True)
    args = p.parse_args()
    if args.cmd == "run":
        run(args)
        return 0
    return table(args)


if __name__ == "__main__":
    sys.exit(main())
