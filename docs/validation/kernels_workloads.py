#!/usr/bin/env python3
"""PyTorch programs for validating poolprof's CUPTI injection library on a GPU.

Three programs, built locally (nothing is downloaded):
  train  a small transformer language model, bf16 autocast, AdamW, a few hundred steps;
  infer  a GPT-like decoder generating tokens at batch 1 (no KV cache: launch-bound);
  tiny   a launch-bound loop of tiny element-wise kernels.

Subcommands:
  validate  with the library injected and the exporter running: compares the kernel
            time the exporter reports for a GPU-bound GEMM loop with CUDA-event timing
            of the same loop, then runs the three programs once; writes JSON.
  bench     runs the three programs timed (one variant per process: baseline, with
            the library, or under torch.profiler) and appends one JSON line: wall
            seconds per program and the process's peak RSS.

Only the standard library and torch are needed.
"""

import argparse
import json
import os
import re
import sys
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


def workload_total(url, metric, workload):
    """Sum of `metric` over every series of `workload`."""
    return sum(v for n, l, v in parse_metrics(scrape(url)) if n == metric and l.get("workload") == workload)


def rss_peak_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_now_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


# --- programs -------------------------------------------------------------------------

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

    model = LM().cuda()
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

    return step, 200


def build_infer(torch):
    nn = torch.nn
    vocab, d, layers, prompt, new_tokens = 32000, 768, 6, 32, 48

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

    model = GPT().cuda().to(torch.bfloat16).eval()
    start = torch.randint(0, vocab, (1, prompt), device="cuda")

    def step():
        with torch.inference_mode():
            x = start
            for _ in range(new_tokens):
                nxt = model(x).argmax(-1, keepdim=True)
                x = torch.cat([x, nxt], dim=1)

    return step, 3


def build_tiny(torch):
    x = torch.zeros(256, device="cuda")

    def step():
        for _ in range(1000):
            x.add_(1.0)

    return step, 60


PROGRAMS = {"train": build_train, "infer": build_infer, "tiny": build_tiny}


def timed(torch, step, iterations):
    """Wall seconds of `iterations` steps, GPU work included."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iterations):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def run_programs(torch, profile=False):
    out = {}
    for name, build in PROGRAMS.items():
        step, iterations = build(torch)
        for _ in range(3):  # warm-up: allocator, cuBLAS handles, autotuning
            step()
        torch.cuda.synchronize()
        if profile:
            from torch.profiler import ProfilerActivity, profile as prof
            with prof(activities=[ProfilerActivity.CUDA]) as p:
                out[name] = timed(torch, step, iterations)
            del p
        else:
            out[name] = timed(torch, step, iterations)
    return out


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


def compare_with_exporter(torch, args, label, run):
    """Exporter-reported kernel seconds and launches over `run` vs CUDA-event seconds."""
    metric_s = "poolprof_kernel_duration_seconds_total"
    metric_n = "poolprof_kernel_launches_total"
    time.sleep(args.settle)  # earlier kernels reach the exporter first
    s0 = workload_total(args.metrics_url, metric_s, args.workload)
    n0 = workload_total(args.metrics_url, metric_n, args.workload)
    event_s, launches = run()
    time.sleep(args.settle)
    s1 = workload_total(args.metrics_url, metric_s, args.workload)
    n1 = workload_total(args.metrics_url, metric_n, args.workload)
    reported = s1 - s0
    return {
        "loop": label,
        "event_seconds": event_s,
        "exporter_kernel_seconds": reported,
        "ratio": reported / event_s if event_s > 0 else None,
        "loop_launches": launches,
        "exporter_launches": n1 - n0,
    }


def cmd_validate(args):
    import torch

    rows = []
    run = gemm_loop(torch, args.gemm_iterations)
    rows.append(compare_with_exporter(torch, args, f"bf16 GEMM 8192^3 x{args.gemm_iterations}", run))

    step, iterations = build_train(torch)
    step()
    torch.cuda.synchronize()

    def train_run():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, None

    rows.append(compare_with_exporter(torch, args, f"train x{iterations} (gaps between kernels count in events only)", train_run))
    programs = run_programs(torch)
    time.sleep(args.settle)
    result = {"comparisons": rows, "program_seconds": programs, "device": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "rss_peak_bytes": rss_peak_bytes()}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


def cmd_bench(args):
    import torch

    torch.cuda.init()
    rss_before = rss_now_bytes()
    seconds = run_programs(torch, profile=(args.variant == "prof"))
    line = {"variant": args.variant, "rep": args.rep, "seconds": seconds,
            "rss_peak_bytes": rss_peak_bytes(), "rss_after_init_bytes": rss_before,
            "injected": bool(os.environ.get("CUDA_INJECTION64_PATH"))}
    with open(args.out, "a") as f:
        f.write(json.dumps(line) + "\n")
    print(json.dumps(line))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("--metrics-url", required=True)
    v.add_argument("--workload", required=True, help="the POOLPROF_WORKLOAD this process runs under")
    v.add_argument("--gemm-iterations", type=int, default=300)
    v.add_argument("--settle", type=float, default=3.0, help="seconds for reports to reach /metrics")
    v.add_argument("--out", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--variant", required=True, choices=["base", "lib", "lib_duty", "prof"])
    b.add_argument("--rep", type=int, default=0)
    b.add_argument("--out", required=True)
    args = p.parse_args()
    if args.cmd == "validate":
        if os.environ.get("POOLPROF_WORKLOAD") != args.workload:
            sys.exit("validate: set POOLPROF_WORKLOAD to the --workload value")
        cmd_validate(args)
    else:
        cmd_bench(args)


if __name__ == "__main__":
    main()
