#!/usr/bin/env python3
"""GPU jobs with the shapes poolprof forecasts, for recording real series (h100-series.sh).

One role per process, all on GPU 0 at once (a pooled GPU), for `--seconds`:

  train  bf16 GEMM training steps; every TRAIN_EVAL_S an evaluation pass (smaller
         matmuls, CPU-side pauses) of EVAL_S; every CHECKPOINT_S a checkpoint (the
         weights copied to host memory, the GPU idle) of CHECKPOINT_S_LONG.
  infer  requests arriving at random (Poisson), at a rate that follows a compressed
         "day" of INFER_DAY_S: each request a few fp16 matmuls, batched as they queue.
  mem    a cache that grows by MEM_GROW_BYTES a second to a random size, is freed, and
         after a pause grows again (memory sawtooth); a little compute.

The cycles are the workload's design, written to `--truth` as JSON for the evaluation
(seasonal-naive's seasons); nothing is read back from the GPU here.

usage: series_workloads.py ROLE --seconds S [--seed N] [--truth FILE]
       [--eval-every S] [--checkpoint-every S] [--day S] [--active FROM-TO,...]
"""

import argparse
import json
import math
import random
import sys
import time

TRAIN_EVAL_S = 45.0
EVAL_S = 8.0
CHECKPOINT_S = 150.0
CHECKPOINT_S_LONG = 5.0
INFER_DAY_S = 120.0
INFER_RATE_PER_S = 12.0
MEM_GROW_BYTES = 384 << 20
# (from, to) seconds since the start in which the role works; empty: all the time.
ACTIVE = []


def active(t):
    """Whether the role works at `t` seconds; outside its windows it idles, as a job
    waiting in a queue or gone would (the process stays, as its memory does)."""
    return not ACTIVE or any(a <= t < b for a, b in ACTIVE)


def truth():
    """The cycles each role was built with, in seconds."""
    return {
        "train": {"evaluation_every_s": TRAIN_EVAL_S, "checkpoint_every_s": CHECKPOINT_S},
        "infer": {"day_s": INFER_DAY_S},
        "mem": {"grows_bytes_per_s": MEM_GROW_BYTES},
    }


def set_cycles(args):
    """The cycles given on the command line replace the defaults (a second scenario)."""
    global TRAIN_EVAL_S, EVAL_S, CHECKPOINT_S, INFER_DAY_S
    for window in filter(None, (args.active or "").split(",")):
        a, b = window.split("-")
        ACTIVE.append((float(a), float(b)))
    TRAIN_EVAL_S = args.eval_every or TRAIN_EVAL_S
    EVAL_S = min(EVAL_S, TRAIN_EVAL_S / 5)
    CHECKPOINT_S = args.checkpoint_every or CHECKPOINT_S
    INFER_DAY_S = args.day or INFER_DAY_S


def train(torch, seconds, rng):
    dev = torch.device("cuda:0")
    w = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) for _ in range(4)]
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    small = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    host = [torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for t in w]
    start = time.monotonic()
    while (now := time.monotonic() - start) < seconds:
        if not active(now):
            time.sleep(0.2)
            continue
        in_checkpoint = now % CHECKPOINT_S >= CHECKPOINT_S - CHECKPOINT_S_LONG
        in_eval = now % TRAIN_EVAL_S >= TRAIN_EVAL_S - EVAL_S
        if in_checkpoint:
            for h, t in zip(host, w):
                h.copy_(t, non_blocking=True)
            torch.cuda.synchronize()
            time.sleep(0.5)
        elif in_eval:
            for _ in range(20):
                small = torch.tanh(small @ small) * 0.5
            torch.cuda.synchronize()
            time.sleep(0.02 + 0.02 * rng.random())
        else:
            y = x
            for t in w:
                y = torch.relu(y @ t) * 1e-2
            for t in reversed(w):
                y = (y @ t.T) * 1e-2
            torch.cuda.synchronize()
            time.sleep(0.004 * rng.random())  # the data loader


def infer(torch, seconds, rng):
    dev = torch.device("cuda:0")
    w = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    start = time.monotonic()
    pending = 0
    last = start
    while (now := time.monotonic()) - start < seconds:
        t = now - start
        if not active(t):
            time.sleep(0.2)
            last = time.monotonic()
            continue
        rate = INFER_RATE_PER_S * (0.15 + 0.85 * (0.5 + 0.5 * math.sin(2 * math.pi * t / INFER_DAY_S)))
        dt = now - last
        last = now
        pending += sum(1 for _ in range(64) if rng.random() < rate * dt / 64)
        if pending == 0:
            time.sleep(0.01)
            continue
        batch = min(pending, 16)
        pending -= batch
        x = torch.randn(256 * batch, 4096, device=dev, dtype=torch.float16)
        for _ in range(6):
            x = torch.nn.functional.gelu(x @ w)
        torch.cuda.synchronize()


def mem(torch, seconds, rng):
    dev = torch.device("cuda:0")
    cache = []
    target = rng.uniform(6, 14) * (1 << 30)
    start = time.monotonic()
    a = torch.randn(1024, 1024, device=dev)
    while (now := time.monotonic() - start) < seconds:
        if not active(now):
            if cache:
                cache.clear()
                torch.cuda.empty_cache()
            time.sleep(0.2)
            continue
        if sum(c.numel() * c.element_size() for c in cache) >= target:
            cache.clear()
            torch.cuda.empty_cache()
            time.sleep(rng.uniform(4, 12))
            target = rng.uniform(6, 14) * (1 << 30)
            continue
        cache.append(torch.ones(MEM_GROW_BYTES // 4, device=dev))
        for _ in range(10):
            a = torch.sin(a @ a) * 0.1
        torch.cuda.synchronize()
        time.sleep(1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["train", "infer", "mem"])
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth")
    ap.add_argument("--eval-every", type=float, help="seconds between evaluation passes")
    ap.add_argument("--checkpoint-every", type=float, help="seconds between checkpoints")
    ap.add_argument("--day", type=float, help="seconds of inference's compressed day")
    ap.add_argument("--active", help="FROM-TO[,FROM-TO...]: seconds in which the role works")
    args = ap.parse_args()
    set_cycles(args)
    if args.truth:
        with open(args.truth, "w") as f:
            json.dump(truth(), f)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    {"train": train, "infer": infer, "mem": mem}[args.role](torch, args.seconds, random.Random(args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
