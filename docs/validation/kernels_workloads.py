#!/usr/bin/env python3
"""PyTorch programs for validating poolprof's CUPTI injection library on a GPU.

Three programs, built locally on the GPU (nothing is downloaded):
  train  a small transformer language model, bf16 autocast, AdamW;
  infer  a GPT-like decoder generating tokens at batch 1 (no KV cache: launch-bound);
  tiny   a launch-bound loop of tiny element-wise kernels.

Subcommands:
  validate  with the library injected and the exporter running: compares the kernel
            time the exporter reports for a GPU-bound GEMM loop (and a training loop)
            with CUDA-event timing of the same loop; writes JSON. With --sampled it
            only runs the training loop, for the sampling accuracy of a duty cycle.
  memcpy    host-to-device copies of a known size: the exporter's (scaled-up)
            memcpy bytes against the bytes copied; writes JSON.
  cpus      prints the CPU plan benchmarks pin processes to (see pick_cpus).

The programs and the CPU placement are shared with the overhead benchmarks
(bench/inject/overhead.py across processes, inject_ab.py within one). Launch-bound loops run
at the speed of one CPU thread, so a benchmarked process has its main thread pinned to a
core of the GPU's NUMA node whose hyperthread sibling stays idle, every other thread
(driver, CUPTI, the library, torch) on a second core, and the exporter on the rest.

Only the standard library and torch are needed (pynvml optional, for clocks).
"""

import argparse
import ctypes
import json
import os
import re
import sys
import threading
import time
import urllib.request

SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>.*)\})?\s+(?P<value>\S+)')
LABEL = re.compile(r'(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """[(name, {label: value}, float)] for every sample of a text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        labels = {l.group("key"): l.group("value") for l in LABEL.finditer(m.group("labels") or "")}
        try:
            out.append((m.group("name"), labels, float(m.group("value"))))
        except ValueError:
            pass
    return out


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def workload_total(url, metric, workload, **labels):
    """Sum of `metric` over every series of `workload` (and `labels`, when given)."""
    return sum(v for n, l, v in parse_metrics(scrape(url))
               if n == metric and l.get("workload") == workload and all(l.get(k) == x for k, x in labels.items()))


def kernel_totals(url, workload):
    """(kernel seconds, launches) of `workload`, from one scrape."""
    totals = {"poolprof_kernel_duration_seconds_total": 0.0, "poolprof_kernel_launches_total": 0.0}
    for name, labels, value in parse_metrics(scrape(url)):
        if name in totals and labels.get("workload") == workload:
            totals[name] += value
    return totals["poolprof_kernel_duration_seconds_total"], totals["poolprof_kernel_launches_total"]


def tracing_probe():
    """`poolprof_inject_tracing` of the library CUDA loaded (dlopen of the same path
    returns the same object), or exit when it is missing."""
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        sys.exit("CUDA_INJECTION64_PATH is not set; run with the library injected")
    fn = ctypes.CDLL(path).poolprof_inject_tracing
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


def proc_status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


# --- CPU placement --------------------------------------------------------------------

def cpu_list(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    out = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def pick_cpus(pci_bus_id=""):
    """(main, helpers, exporter) CPU lists, or None when there are too few CPUs.

    main: one CPU of a physical core near the GPU, its siblings left idle; helpers: the
    CPUs of a second such core; exporter: every other allowed CPU."""
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 4:
        return None
    local = []
    if pci_bus_id:
        bus = pci_bus_id.lower()
        bus = bus[4:] if len(bus) == 16 else bus  # 00000000:19:00.0 -> 0000:19:00.0
        local = [c for c in cpu_list(read(f"/sys/bus/pci/devices/{bus}/local_cpulist")) if c in allowed]
    pool = local if len(local) >= 4 else allowed

    def core(cpu):
        sib = cpu_list(read(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", str(cpu)))
        return [c for c in sib if c in allowed] or [cpu]

    # Highest-numbered first: CPU 0 usually takes more interrupts.
    cores, seen = [], set()
    for cpu in reversed(pool):
        if cpu in seen:
            continue
        c = core(cpu)
        seen.update(c)
        cores.append(c)
    if len(cores) < 2:
        return None
    main, helpers = [cores[0][0]], cores[1]
    used = set(cores[0]) | set(helpers)
    exporter = [c for c in allowed if c not in used] or helpers
    return main, helpers, exporter


def fmt(cpus):
    return ",".join(map(str, cpus))


def thread_cpu_seconds(tid):
    """CPU time of one thread of this process (schedstat: ns; stat: clock ticks)."""
    s = read(f"/proc/self/task/{tid}/schedstat")
    if s:
        return int(s.split()[0]) / 1e9
    fields = read(f"/proc/self/task/{tid}/stat").rsplit(")", 1)[-1].split()
    if len(fields) > 12:
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def other_threads():
    me = threading.get_native_id()
    try:
        return [int(t) for t in os.listdir("/proc/self/task") if int(t) != me]
    except OSError:
        return []


def other_threads_cpu():
    return sum(thread_cpu_seconds(t) for t in other_threads())


class Placement:
    """Pins the main thread to `main` and every other thread to `helpers`."""

    def __init__(self, spec):
        self.main = self.helpers = None
        if spec:
            m, _, h = spec.partition(":")
            self.main, self.helpers = set(cpu_list(m)), set(cpu_list(h))

    def before_cuda(self):
        # Threads inherit the affinity of the thread that creates them: the driver's,
        # CUPTI's and the library's threads are created during CUDA's start.
        if self.helpers:
            os.sched_setaffinity(0, self.helpers)

    def after_cuda(self):
        if self.main:
            os.sched_setaffinity(0, self.main)
        self.sweep()

    def sweep(self):
        """Moves threads created since (by the main thread, so on `main`) to `helpers`."""
        if not self.helpers:
            return
        for tid in other_threads():
            try:
                os.sched_setaffinity(tid, self.helpers)
            except OSError:
                pass  # the thread ended


def gpu_clocks():
    """(SM MHz, memory MHz) of device 0 now, or None."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or 0))
        return (pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM))
    except Exception:  # noqa: BLE001 - clocks are informative only
        return None


# --- programs -------------------------------------------------------------------------
# Each builder returns one step of its program (on an H100: train about 12 ms, infer
# about 100-140 ms, tiny about 9 ms).

def build_train(torch):
    nn = torch.nn
    vocab, d, layers, seq, batch = 8192, 512, 4, 256, 32

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, x, mask):
            return self.head(self.body(self.emb(x), mask=mask, is_causal=True))

    with torch.device("cuda"):
        model = LM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(0)
    data = torch.randint(0, vocab, (batch, seq + 1), device="cuda", generator=gen)
    mask = nn.Transformer.generate_square_subsequent_mask(seq, device="cuda")
    loss_fn = nn.CrossEntropyLoss()

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(data[:, :-1], mask)
            loss = loss_fn(logits.reshape(-1, vocab).float(), data[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def build_infer(torch, new_tokens=48):
    """Batch-1 GPT-like decoding of `new_tokens` tokens per step, with no downloads."""
    nn = torch.nn
    vocab, d, layers, prompt = 32000, 768, 6, 32

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(prompt + new_tokens, d)
            layer = nn.TransformerEncoderLayer(d, 12, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, x):
            n = x.shape[1]
            h = self.emb(x) + self.pos(torch.arange(n, device=x.device))
            mask = nn.Transformer.generate_square_subsequent_mask(n, device=x.device, dtype=h.dtype)
            return self.head(self.body(h, mask=mask, is_causal=True)[:, -1])

    with torch.device("cuda"):
        model = GPT().to(torch.bfloat16).eval()
    start = torch.randint(0, vocab, (1, prompt), device="cuda")

    def step():
        with torch.inference_mode():
            x = start
            for _ in range(new_tokens):
                nxt = model(x).argmax(-1, keepdim=True)
                x = torch.cat([x, nxt], dim=1)

    return step


def build_tiny(torch):
    x = torch.zeros(256, device="cuda")

    def step():
        for _ in range(1000):
            x.add_(1.0)

    return step


PROGRAMS = {"train": build_train, "infer": build_infer, "tiny": build_tiny}


def warm_up(torch, step, seconds):
    """At least 3 steps and `seconds` of them: allocator, cuBLAS, lazy kernel loading,
    CUPTI instrumentation and GPU clock ramp-up all happen here, not in the timing."""
    t0 = time.perf_counter()
    n = 0
    while n < 3 or time.perf_counter() - t0 < seconds:
        step()
        n += 1
        if n % 5 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()


# --- subcommands ----------------------------------------------------------------------

def gemm_loop(torch, iterations):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()

    def run():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            torch.matmul(a, b, out=c)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, iterations

    return run


def compare_with_exporter(args, label, iterations, run):
    """Exporter-reported kernel seconds and launches over `run` vs CUDA-event seconds."""
    time.sleep(args.settle)  # earlier kernels reach the exporter first
    s0, n0 = kernel_totals(args.metrics_url, args.workload)
    event_s, launches = run()
    time.sleep(args.settle)
    s1, n1 = kernel_totals(args.metrics_url, args.workload)
    reported = s1 - s0
    return {
        "loop": label,
        "iterations": iterations,
        "event_seconds": event_s,
        "exporter_kernel_seconds": reported,
        "ratio": reported / event_s if event_s > 0 else None,
        "loop_launches": launches,
        "exporter_launches": n1 - n0,
    }


def program_loop(torch, name, iterations, warm_steps=None):
    """`run` times `iterations` steps of program `name` with CUDA events, after a
    warm-up of `warm_steps` steps (a fixed launch count) or else of about a second."""
    step = PROGRAMS[name](torch)
    if warm_steps is None:
        warm_up(torch, step, 1.0)
    else:
        for _ in range(warm_steps):
            step()
        torch.cuda.synchronize()

    def run():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, None

    return run, step


def end_in_window(torch, step):
    """Steps on until the library's next tracing window has begun, then one step in
    it, and returns how many steps that took. A sampled window's period ends at the
    process's first launch in a later window, so ending just inside one leaves only
    that step's few records to be estimated at the exit."""
    tracing = tracing_probe()
    steps = 0
    for want in (False, True):  # out of any window, then into the next one
        while (tracing() == 1) != want:
            step()
            torch.cuda.synchronize()
            steps += 1
    step()
    torch.cuda.synchronize()
    return steps + 1


def parse_steps(text):
    """"train=200,infer=20" -> {"train": 200, "infer": 20}; programs from PROGRAMS."""
    steps = {}
    for item in filter(None, text.split(",")):
        name, _, count = item.partition("=")
        if name not in PROGRAMS or not count.isdigit() or not 1 <= int(count) <= 100000:
            raise ValueError(f"{item!r} is not PROGRAM=STEPS with PROGRAM in {sorted(PROGRAMS)}, STEPS 1..100000")
        steps[name] = int(count)
    return steps


def sampling_ratio(url, workload):
    """The exporter's poolprof_inject_kernel_sampling_ratio for `workload`, or None."""
    try:
        for name, labels, value in parse_metrics(scrape(url)):
            if name == "poolprof_inject_kernel_sampling_ratio" and labels.get("workload") == workload:
                return value
    except OSError:
        pass
    return None


def cmd_validate(args):
    import torch

    rows = []
    if not args.sampled:
        run = gemm_loop(torch, args.gemm_iterations)
        rows.append(compare_with_exporter(args, f"bf16 GEMM 8192^3 x{args.gemm_iterations}",
                                          args.gemm_iterations, run))
    for name, iterations in args.steps.items():
        run, step = program_loop(torch, name, iterations, args.warm_steps)
        row = compare_with_exporter(args, f"{name} x{iterations}", iterations, run)
        extra = end_in_window(torch, step) if args.end_in_window else 0
        rows.append({"program": name, "warm_steps": args.warm_steps, "extra_steps": extra, **row})
    result = {"comparisons": rows, "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "duty": os.environ.get("POOLPROF_INJECT_DUTY", "default"), "sampled": args.sampled,
              "sampling_ratio": sampling_ratio(args.metrics_url, args.workload),
              "rss_peak_bytes": proc_status("VmHWM")}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


def cmd_totals(args):
    """A workload's whole kernel launches and kernel seconds, read after its process
    exited (the library sends everything at exit; the exporter keeps the series)."""
    time.sleep(args.settle)
    seconds, launches = kernel_totals(args.metrics_url, args.workload)
    result = {"workload": args.workload, "launches": launches, "kernel_seconds": seconds}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


def cmd_memcpy(args):
    """Host-to-device copies of a known size under the library's settings (sampled by
    default): the exporter's scaled-up htod bytes against the bytes really copied."""
    import torch

    size = args.mib << 20
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    metric = "poolprof_memcpy_bytes_total"
    time.sleep(args.settle)
    b0 = workload_total(args.metrics_url, metric, args.workload, direction="htod")
    copies, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds:
        dev.copy_(host, non_blocking=True)
        copies += 1
        if copies % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    time.sleep(args.settle)
    reported = workload_total(args.metrics_url, metric, args.workload, direction="htod") - b0
    result = {"copies": copies, "bytes_per_copy": size, "seconds": seconds, "true_bytes": copies * size,
              "exporter_bytes": reported, "ratio": reported / (copies * size),
              "duty": os.environ.get("POOLPROF_INJECT_DUTY", "default"),
              "memcpy": os.environ.get("POOLPROF_INJECT_MEMCPY", "default")}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


def cmd_cpus(args):
    plan = pick_cpus(args.pci_bus_id)
    print("" if plan is None else " ".join(fmt(p) for p in plan))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("--metrics-url", required=True)
    v.add_argument("--workload", required=True, help="the POOLPROF_WORKLOAD this process runs under")
    v.add_argument("--gemm-iterations", type=int, default=300)
    v.add_argument("--steps", default="train=200", help="PROGRAM=STEPS,... run after the GEMM loop")
    v.add_argument("--sampled", action="store_true", help="no GEMM loop (duty-cycle accuracy of --steps)")
    v.add_argument("--warm-steps", type=int, default=None,
                   help="warm up with this many steps (a fixed launch count) instead of about a second")
    v.add_argument("--settle", type=float, default=2.5, help="seconds for reports to reach /metrics")
    v.add_argument("--end-in-window", action="store_true",
                   help="after the timed steps, step on into the library's next tracing window")
    v.add_argument("--out", required=True)
    t = sub.add_parser("totals")
    t.add_argument("--metrics-url", required=True)
    t.add_argument("--workload", required=True)
    t.add_argument("--settle", type=float, default=2.0, help="seconds for the exit report to reach /metrics")
    t.add_argument("--out", required=True)
    m = sub.add_parser("memcpy")
    m.add_argument("--metrics-url", required=True)
    m.add_argument("--workload", required=True, help="the POOLPROF_WORKLOAD this process runs under")
    m.add_argument("--mib", type=int, default=64, help="size of one copy")
    m.add_argument("--seconds", type=float, default=10.0)
    m.add_argument("--settle", type=float, default=2.5, help="seconds for reports to reach /metrics")
    m.add_argument("--out", required=True)
    c = sub.add_parser("cpus")
    c.add_argument("--pci-bus-id", default="")
    args = p.parse_args()
    if args.cmd in ("validate", "memcpy") and os.environ.get("POOLPROF_WORKLOAD") != args.workload:
        sys.exit(f"{args.cmd}: set POOLPROF_WORKLOAD to the --workload value")
    if args.cmd == "validate":
        try:
            args.steps = parse_steps(args.steps)
        except ValueError as e:
            sys.exit(f"validate: --steps {e}")
        cmd_validate(args)
    elif args.cmd == "totals":
        cmd_totals(args)
    elif args.cmd == "memcpy":
        if not (1 <= args.mib <= 4096 and 1 <= args.seconds <= 120):
            sys.exit("memcpy: --mib 1..4096, --seconds 1..120")
        cmd_memcpy(args)
    else:
        cmd_cpus(args)


if __name__ == "__main__":
    main()
