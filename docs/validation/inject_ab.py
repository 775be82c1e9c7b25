#!/usr/bin/env python3
"""Within-process overhead of poolprof's CUPTI injection library (A/B by duty cycle).

Separate processes of the same program differ by up to 38% on the H100 VM (see
kernels-h100.md, run 3), far more than the library's target overhead, so this compares
steps of ONE process: with the library injected and a duty cycle such as
POOLPROF_INJECT_DUTY=500/1000, kernel records are on half of every second and off the
other half. Before and after each step the script reads `poolprof_inject_tracing()`
from the already-loaded library (ctypes on CUDA_INJECTION64_PATH): 1 and 1 = the step
was traced throughout, 0 and 0 = untraced; steps that straddle a switch are kept apart.
The cost per traced step does not depend on the duty, so the default's overhead is
estimated as

    default_fraction x (median traced step / median untraced step - 1)
      + time lost in steps that straddle a switch, per second (the default switches
        as often: twice per 1000 ms period)

plus the cost of being loaded while off (CUPTI subscribed, no records), which only a
comparison of processes can show (bench/inject/overhead.py).

Every step ends with torch.cuda.synchronize(), so its time is that step's own work:
for the launch-bound programs (infer, tiny) the GPU idles during the synchronisation's
last microseconds, which adds the same small amount to traced and untraced steps; the
overhead of interest is on the host's launch path, which this keeps whole.

Steps (a few ms each on an H100):
  train  one optimiser step of kernels_workloads.py's training loop (~10 ms);
  infer  4 tokens at batch 1 from a fixed 32-token prompt (no KV cache; ~8 ms);
  tiny   500 tiny element-wise kernels (~4 ms).

Subcommands: `ab` runs the measurement (writes JSON), `summary` prints markdown tables
from a results folder (validate.json, every-/sampled-/totals-*.json, memcpy.json, ab.json).
"""

import argparse
import glob
import json
import os
import random
import statistics as st
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernels_workloads import (Placement, build_infer, build_train, gpu_clocks, proc_status,  # noqa: E402
                               tracing_probe)

TRACED, UNTRACED, STRADDLE = "traced", "untraced", "straddle"


# --- steps ----------------------------------------------------------------------------

def step_train(torch):
    return build_train(torch)


def step_infer(torch):
    return build_infer(torch, new_tokens=4)


def step_tiny(torch):
    x = torch.zeros(256, device="cuda")

    def step():
        for _ in range(500):
            x.add_(1.0)

    return step


STEPS = {"train": step_train, "infer": step_infer, "tiny": step_tiny}


# --- measurement ----------------------------------------------------------------------

def classify(before, after):
    if before == 1 and after == 1:
        return TRACED
    if before == 0 and after == 0:
        return UNTRACED
    return STRADDLE


def measure(torch, step, probe, seconds, warm_s, placement):
    """[(state_before, state_after, step_seconds)] for `seconds` of steps, each
    synchronised, after `warm_s` of warm-up (which spans on and off windows)."""
    sync = torch.cuda.synchronize
    t_end = time.perf_counter() + warm_s
    while time.perf_counter() < t_end:
        step()
        sync()
    placement.sweep()
    out = []
    perf = time.perf_counter
    t_end = perf() + seconds
    while True:
        b = probe()
        t0 = perf()
        step()
        sync()
        t1 = perf()
        out.append((b, probe(), t1 - t0))
        if t1 >= t_end:
            return out


def cmd_ab(args):
    placement = Placement(args.cpus)
    placement.before_cuda()
    import torch

    torch.cuda.init()
    torch.zeros(1, device="cuda")  # CUDA starts; InitializeInjection runs here
    placement.after_cuda()
    probe = tracing_probe()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "duty": os.environ.get("POOLPROF_INJECT_DUTY", "default"),
              "default_duty": args.default_duty, "programs": {}}
    state = probe()
    result["state_after_init"] = state
    if state < 0:
        result["error"] = "the library is not running (stepped aside: see stderr)"
    for name in [p for p in args.programs.split(",") if p]:
        if state < 0:
            break
        step = STEPS[name](torch)
        t0 = time.perf_counter()
        steps = measure(torch, step, probe, args.seconds, args.warm, placement)
        result["programs"][name] = {
            "wall_s": time.perf_counter() - t0,
            # state codes packed as one digit each (+1: -1..1 -> 0..2), times in ns
            "states": "".join(f"{b + 1}{a + 1}" for b, a, _ in steps),
            "step_ns": [int(t * 1e9) for _, _, t in steps],
            "clocks_mhz": gpu_clocks(),
        }
        print(json.dumps({"program": name, "steps": len(steps),
                          **{k: round(v * 1e3, 3) if v else None
                             for k, v in quick(steps).items()}}), flush=True)
        del step
        torch.cuda.empty_cache()
        with open(args.out, "w") as f:  # progressively: a cut-off run keeps programs done
            json.dump({**result, "rss_peak_bytes": proc_status("VmHWM")}, f)


def quick(steps):
    by = {TRACED: [], UNTRACED: []}
    for b, a, t in steps:
        by.get(classify(b, a), []).append(t)
    return {f"median_{k}_ms": st.median(v) if v else None for k, v in by.items()}


# --- analysis -------------------------------------------------------------------------

def unpack(prog):
    s, ns = prog["states"], prog["step_ns"]
    return [(int(s[2 * i]) - 1, int(s[2 * i + 1]) - 1, ns[i] / 1e9) for i in range(len(ns))]


def periods(steps):
    """Runs of steps cut at each switch: [(kind, [seconds])], straddling steps alone."""
    runs = []
    for b, a, t in steps:
        kind = classify(b, a)
        if runs and runs[-1][0] == kind and kind != STRADDLE:
            runs[-1][1].append(t)
        else:
            runs.append((kind, [t]))
    return runs


def ratio_of_medians(traced, untraced):
    return st.median(traced) / st.median(untraced) if traced and untraced else None


def analyse(prog, default_fraction, seed=1):
    """Figures for one program's steps (see the module doc for the estimate)."""
    steps = unpack(prog)
    runs = periods(steps)
    traced = [t for k, ts in runs if k == TRACED for t in ts]
    untraced = [t for k, ts in runs if k == UNTRACED for t in ts]
    straddle = [t for k, ts in runs if k == STRADDLE for t in ts]
    if len(traced) < 20 or len(untraced) < 20:
        return {"steps": len(steps), "traced": len(traced), "untraced": len(untraced), "error": "too few steps"}
    ratio = ratio_of_medians(traced, untraced)
    # Per-window ratios: each traced window against the untraced windows beside it.
    windows = [(k, ts) for k, ts in runs if k != STRADDLE and len(ts) >= 3]
    local = []
    for i, (k, ts) in enumerate(windows):
        if k != TRACED:
            continue
        near = [t for j in (i - 1, i + 1) if 0 <= j < len(windows) and windows[j][0] == UNTRACED
                for t in windows[j][1]]
        if near:
            local.append(st.median(ts) / st.median(near))
    # Bootstrap over windows (steps within a window are not independent).
    rng = random.Random(seed)
    tw = [ts for k, ts in windows if k == TRACED]
    uw = [ts for k, ts in windows if k == UNTRACED]
    boots = []
    for _ in range(300 if tw and uw else 0):
        a = [t for w in rng.choices(tw, k=len(tw)) for t in w]
        b = [t for w in rng.choices(uw, k=len(uw)) for t in w]
        boots.append(ratio_of_medians(a, b))
    boots.sort()
    ci = (boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]) if boots else None
    # Switch cost: what straddling steps took beyond an ordinary step, per second of run.
    mid = (st.median(traced) + st.median(untraced)) / 2
    wall = sum(t for _, _, t in steps)
    switch_fraction = (sum(straddle) - mid * len(straddle)) / wall if wall else 0.0
    mean_ratio = st.mean(traced) / st.mean(untraced)
    return {
        "steps": len(steps), "traced": len(traced), "untraced": len(untraced), "straddle": len(straddle),
        "untraced_median_s": st.median(untraced), "traced_median_s": st.median(traced),
        "ratio": ratio, "ratio_of_means": mean_ratio,
        "window_ratios": (min(local), st.median(local), max(local)) if local else None,
        "window_pairs": len(local), "bootstrap_95": ci,
        "switch_fraction": switch_fraction,
        "default_estimate": default_fraction * (ratio - 1) + switch_fraction,
        "traced_fraction_of_steps": len(traced) / len(steps),
    }


def duty_fraction(text):
    t, _, p = text.partition("/")
    return int(t) / int(p)


def pct(x, signed=True):
    return "-" if x is None else (f"{x * 100:+.2f}%" if signed else f"{x * 100:.2f}%")


def summary(folder):
    lines = []
    out = lines.append

    def load(name):
        try:
            return json.load(open(os.path.join(folder, name)))
        except (OSError, ValueError):
            return None

    v = load("validate.json")
    if v:
        out(f"## Kernel time: exporter vs CUDA events ({v['device']}, torch {v['torch']}, every launch traced)\n")
        out("| loop | CUDA events (s) | exporter kernel time (s) | ratio | launches (loop / exporter) |")
        out("| --- | ---: | ---: | ---: | --- |")
        for r in v.get("comparisons", []):
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.4f}"
            loop_n = r["loop_launches"] if r["loop_launches"] is not None else "-"
            out(f"| {r['loop']} | {r['event_seconds']:.4f} | {r['exporter_kernel_seconds']:.4f} | {ratio} | "
                f"{loop_n} / {r['exporter_launches']:.0f} |")
        g = v["comparisons"][0]["ratio"] if v.get("comparisons") else None
        out(f"\nGEMM loop within 5%: {'yes' if g is not None and abs(g - 1) <= 0.05 else 'NO'}.\n")
    names = sorted(os.path.basename(f)[len("every-"):-len(".json")]
                   for f in glob.glob(os.path.join(folder, "every-*.json")))
    rows = []
    for name in names:
        e, smp = load(f"every-{name}.json"), load(f"sampled-{name}.json")
        te, ts = load(f"totals-every-{name}.json"), load(f"totals-sampled-{name}.json")
        if not (e and smp and te and ts and e.get("comparisons") and smp.get("comparisons")):
            continue
        rows.append((name, e["comparisons"][0], smp["comparisons"][0], te, ts, smp))
    if rows:
        out("## Sampling accuracy: sampled and scaled up against every launch traced\n")
        out("Whole process: the exporter's totals after the process exited, against what the same program "
            "launches with every launch traced (its launches and kernel time per step, and its launches outside "
            "the steps, for model set-up; both processes warm up with the same number of steps; the sampled one steps on into the library's next window before it exits, so its last period ends at a known launch). Timed interval: per step between two scrapes, which "
            "can be off by up to one duty-cycle period of work.\n")
        out("| program | steps every / sampled (+ to the next window) | launches per step | launches outside steps | whole process: launches "
            "| whole process: kernel time | interval: launches | interval: kernel time | sampling ratio at the end |")
        out("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, er, sr, te, ts, smp in rows:
            warm = er.get("warm_steps") or 0
            ratios = []
            for key, total in (("exporter_launches", "launches"), ("exporter_kernel_seconds", "kernel_seconds")):
                per_step = er[key] / er["iterations"]
                outside = te[total] - (warm + er["iterations"] + er.get("extra_steps", 0)) * per_step
                predicted = outside + (warm + sr["iterations"] + sr.get("extra_steps", 0)) * per_step
                ratios.append((per_step, outside, ts[total] / predicted if predicted else float("nan"),
                               (sr[key] / sr["iterations"]) / per_step if per_step else float("nan")))
            (n_step, n_out, n_whole, n_int), (_, _, t_whole, t_int) = ratios
            ratio = smp.get("sampling_ratio")
            out(f"| {name} | {er['iterations']} / {sr['iterations']} (+{sr.get('extra_steps', 0)}) | {n_step:.1f} | {n_out:.0f} | **{n_whole:.3f}** "
                f"| **{t_whole:.3f}** | {n_int:.3f} | {t_int:.3f} | {'-' if ratio is None else f'{ratio:.4f}'} |")
        out("\n1 = the sample is unbiased.\n")
    m = load("memcpy.json")
    if m:
        out(f"## Memcpy bytes under the library's settings (duty {m['duty']}, memcpy {m['memcpy']}; "
            "sampled bytes are scaled up)\n")
        out(f"{m['copies']} copies of {m['bytes_per_copy'] >> 20} MiB host to device in {m['seconds']:.1f} s: "
            f"exporter {m['exporter_bytes']:.4g} B, copied {m['true_bytes']:.4g} B, ratio {m['ratio']:.3f}.\n")
    ab = load("ab.json")
    if ab:
        dflt = ab.get("default_duty", "50/1000")
        frac = duty_fraction(dflt)
        out(f"## Within one process: traced vs untraced steps (POOLPROF_INJECT_DUTY={ab['duty']}, "
            f"{ab['device']})\n")
        if ab.get("error"):
            out(f"**{ab['error']}**\n")
        out("| program | steps traced / untraced / straddling | untraced step (ms, median) | traced step (ms, median) "
            "| traced / untraced | per-window ratio min / median / max | bootstrap 95% | ratio of means "
            f"| switch cost | estimated overhead at {dflt} |")
        out("| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |")
        for name, prog in ab.get("programs", {}).items():
            a = analyse(prog, frac)
            if "error" in a:
                out(f"| {name} | {a['traced']} / {a['untraced']} / - | {a['error']} | | | | | | | |")
                continue
            w = a["window_ratios"]
            wr = f"{w[0]:.4f} / {w[1]:.4f} / {w[2]:.4f} ({a['window_pairs']})" if w else "-"
            ci = f"{a['bootstrap_95'][0]:.4f}–{a['bootstrap_95'][1]:.4f}" if a["bootstrap_95"] else "-"
            out(f"| {name} | {a['traced']} / {a['untraced']} / {a['straddle']} | {a['untraced_median_s'] * 1e3:.3f} | "
                f"{a['traced_median_s'] * 1e3:.3f} | {a['ratio']:.4f} | {wr} | {ci} | {a['ratio_of_means']:.4f} | "
                f"{pct(a['switch_fraction'])} | **{pct(a['default_estimate'])}** |")
        out(f"\nEstimate = {frac:g} x (traced/untraced - 1) + switch cost (time lost in steps that straddle "
            "an on/off switch, per second of run; the default switches as often). Not included: the cost of "
            "being loaded while off (bench/inject/overhead.py measures it). Every step ends with torch.cuda.synchronize().\n")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("ab")
    a.add_argument("--programs", default="train,infer,tiny")
    a.add_argument("--seconds", type=float, default=40.0, help="timed seconds per program")
    a.add_argument("--warm", type=float, default=2.5, help="warm-up seconds per program (spans on and off)")
    a.add_argument("--default-duty", default="50/1000", help="the duty to estimate the overhead of")
    a.add_argument("--cpus", default="", help="MAIN:HELPERS cpu lists (see kernels_workloads.py)")
    a.add_argument("--out", required=True)
    s = sub.add_parser("summary")
    s.add_argument("folder")
    args = p.parse_args()
    if args.cmd == "ab":
        bad = [x for x in args.programs.split(",") if x and x not in STEPS]
        if bad or not 1 <= args.seconds <= 600 or not 0 <= args.warm <= 60:
            sys.exit(f"ab: programs from {sorted(STEPS)}, --seconds 1..600, --warm 0..60 (got {bad or args.seconds})")
        try:
            f = duty_fraction(args.default_duty)
        except (ValueError, ZeroDivisionError):
            f = -1
        if not 0 <= f <= 1:
            sys.exit(f"ab: --default-duty {args.default_duty!r} is not TRACE_MS/PERIOD_MS")
        cmd_ab(args)
    else:
        print(summary(args.folder))


if __name__ == "__main__":
    main()
