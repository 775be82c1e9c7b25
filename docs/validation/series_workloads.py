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

Impulsive shapes, one period each (the periodicity check at a few cycles):

  spikes  idle but for a burst of GEMMs of SPIKE_S every SPIKES_EVERY_S (a cron job).
  dips    GEMMs but for a pause of DIP_S every DIPS_EVERY_S (a checkpoint).
  bursts  GEMMs for BURST_SHARE of every BURSTS_EVERY_S, idle the rest (batches).
  ramps   a cache grown evenly to RAMP_BYTES over every RAMPS_EVERY_S, then freed
          (memory growing and freed); a little compute.

The cycles are the workload's design, written to `--truth` as JSON for the evaluation
(seasonal-naive's seasons); nothing is read back from the GPU here.

usage: series_workloads.py ROLE --seconds S [--seed N] [--truth FILE]
       [--eval-every S] [--checkpoint-every S] [--day S] [--active FROM-TO,...]
       [--spikes-every S] [--dips-every S] [--bursts-every S] [--ramps-every S]
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
SPIKES_EVERY_S = 11.3
SPIKE_S = 2.0
DIPS_EVERY_S = 13.1
DIP_S = 2.0
BURSTS_EVERY_S = 14.9
BURST_SHARE = 0.35
RAMPS_EVERY_S = 16.7
RAMP_BYTES = 6 << 30
RAMP_CHUNK_BYTES = 128 << 20
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
        "spikes": {"period_s": SPIKES_EVERY_S},
        "dips": {"period_s": DIPS_EVERY_S},
        "bursts": {"period_s": BURSTS_EVERY_S},
        "ramps": {"period_s": RAMPS_EVERY_S},
    }


def set_cycles(args):
    """The cycles given on the command line replace the defaults (a second scenario)."""
    global TRAIN_EVAL_S, EVAL_S, CHECKPOINT_S, INFER_DAY_S
    global SPIKES_EVERY_S, DIPS_EVERY_S, BURSTS_EVERY_S, RAMPS_EVERY_S
    for window in filter(None, (args.active or "").split(",")):
        a, b = window.split("-")
        ACTIVE.append((float(a), float(b)))
    TRAIN_EVAL_S = args.eval_every or TRAIN_EVAL_S
    EVAL_S = min(EVAL_S, TRAIN_EVAL_S / 5)
    CHECKPOINT_S = args.checkpoint_every or CHECKPOINT_S
    INFER_DAY_S = args.day or INFER_DAY_S
    SPIKES_EVERY_S = args.spikes_every or SPIKES_EVERY_S
    DIPS_EVERY_S = args.dips_every or DIPS_EVERY_S
    BURSTS_EVERY_S = args.bursts_every or BURSTS_EVERY_S
    RAMPS_EVERY_S = args.ramps_every or RAMPS_EVERY_S


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


def gemm_work(torch, w, x):
    """One training-like step: four bf16 GEMMs, waited for."""
    y = x
    for t in w:
        y = torch.relu(y @ t) * 1e-2
    torch.cuda.synchronize()


def busy_while(torch, seconds, busy):
    """GEMM steps while `busy(t)` holds at `t` seconds since the start, idle (a short
    sleep) otherwise, and idle outside the role's active windows."""
    dev = torch.device("cuda:0")
    w = [torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) for _ in range(4)]
    x = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    start = time.monotonic()
    while (now := time.monotonic() - start) < seconds:
        if active(now) and busy(now):
            gemm_work(torch, w, x)
        else:
            time.sleep(0.02)


def spikes(torch, seconds, rng):
    busy_while(torch, seconds, lambda t: t % SPIKES_EVERY_S < SPIKE_S)


def dips(torch, seconds, rng):
    busy_while(torch, seconds, lambda t: t % DIPS_EVERY_S < DIPS_EVERY_S - DIP_S)


def bursts(torch, seconds, rng):
    busy_while(torch, seconds, lambda t: t % BURSTS_EVERY_S < BURST_SHARE * BURSTS_EVERY_S)


def ramps(torch, seconds, rng):
    dev = torch.device("cuda:0")
    cache = []
    a = torch.randn(1024, 1024, device=dev)
    start = time.monotonic()
    phase_before = 0.0
    while (now := time.monotonic() - start) < seconds:
        phase = now % RAMPS_EVERY_S
        if not active(now) or phase < phase_before:
            cache.clear()
            torch.cuda.empty_cache()
        phase_before = phase
        if not active(now):
            time.sleep(0.2)
            continue
        target = RAMP_BYTES * phase / RAMPS_EVERY_S
        while len(cache) * RAMP_CHUNK_BYTES < target:
            cache.append(torch.ones(RAMP_CHUNK_BYTES // 4, device=dev))
        a = torch.sin(a @ a) * 0.1
        torch.cuda.synchronize()
        time.sleep(0.05)


ROLES = {
    "train": train,
    "infer": infer,
    "mem": mem,
    "spikes": spikes,
    "dips": dips,
    "bursts": bursts,
    "ramps": ramps,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=sorted(ROLES))
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--truth")
    ap.add_argument("--eval-every", type=float, help="seconds between evaluation passes")
    ap.add_argument("--checkpoint-every", type=float, help="seconds between checkpoints")
    ap.add_argument("--day", type=float, help="seconds of inference's compressed day")
    ap.add_argument("--active", help="FROM-TO[,FROM-TO...]: seconds in which the role works")
    ap.add_argument("--spikes-every", type=float, help="seconds between the spikes role's bursts")
    ap.add_argument("--dips-every", type=float, help="seconds between the dips role's pauses")
    ap.add_argument("--bursts-every", type=float, help="seconds between the bursts role's starts")
    ap.add_argument("--ramps-every", type=float, help="seconds between the ramps role's frees")
    args = ap.parse_args()
    set_cycles(args)
    if args.truth:
        with open(args.truth, "w") as f:
            json.dump(truth(), f)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    ROLES[args.role](torch, args.seconds, random.Random(args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
