"""What nvmlDeviceGetProcessUtilization returns for processes that share a GPU, against
what they did: how many samples per process a read gets, how far apart, and whether a
read that looks back ten seconds gives the newest sample or something like the mean.

Two jobs share GPU 0, each timing its own busy stretches:
  slow: busy 2 s, idle 3 s (a 5 s cycle: 40% of the time busy)
  fast: busy 0.1 s, idle 0.1 s (50%, a cycle far shorter than any read)
Two readers poll at once: one every second from the newest timestamp it saw, one every
ten seconds likewise (the exporter's refresh). Each sample is printed with the jobs'
true busy share over the sample's own period and over the reader's window.

Usage: python3 docs/validation/process_samples.py [SECONDS]   (default 60)
Prints a JSON line per read and a summary table; needs torch and nvidia-ml-py.
"""
import json
import multiprocessing as mp
import sys
import time

import pynvml as n

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0


def job(name, busy_s, idle_s, until, log):
    """Runs matmuls for busy_s, sleeps idle_s, until `until`; logs busy stretches."""
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    for _ in range(3):
        (a @ a).sum().item()
    while time.time() < until:
        start = time.time()
        while time.time() - start < busy_s:
            for _ in range(4):
                a @ a
            torch.cuda.synchronize()
        log.put((name, start, time.time()))
        time.sleep(idle_s)
    log.put((name, None, None))


def busy_share(stretches, t0, t1):
    """Share of [t0, t1] covered by the (start, end) stretches."""
    if t1 <= t0:
        return None
    covered = sum(max(0.0, min(e, t1) - max(s, t0)) for s, e in stretches)
    return covered / (t1 - t0)


def main():
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    print(json.dumps({"device": n.nvmlDeviceGetName(h), "driver": n.nvmlSystemGetDriverVersion()}))
    ctx = mp.get_context("spawn")
    log = ctx.Queue()
    start = time.time() + 15.0  # torch start-up
    until = start + SECONDS
    procs = {
        "slow": ctx.Process(target=job, args=("slow", 2.0, 3.0, until, log)),
        "fast": ctx.Process(target=job, args=("fast", 0.1, 0.1, until, log)),
    }
    for p in procs.values():
        p.start()
    pid_name = {p.pid: k for k, p in procs.items()}
    while time.time() < start:
        time.sleep(0.1)
    last_read = {"1s": time.time(), "10s": time.time()}
    reads = []
    # both readers begin from "now" (µs, NVML's CPU timestamps)
    now_us = int(time.time() * 1e6)
    seen = {"1s": now_us, "10s": now_us}
    next_at = {"1s": start + 1.0, "10s": start + 10.0}
    while time.time() < until:
        for reader, every in (("1s", 1.0), ("10s", 10.0)):
            if time.time() < next_at[reader]:
                continue
            next_at[reader] += every
            t = time.time()
            try:
                samples = n.nvmlDeviceGetProcessUtilization(h, seen[reader])
            except n.NVMLError as e:
                samples = []
                err = str(e)
            else:
                err = None
            rows = [
                {"job": pid_name.get(s.pid, s.pid), "ts": s.timeStamp / 1e6, "sm": s.smUtil, "mem": s.memUtil}
                for s in samples
            ]
            if samples:
                seen[reader] = max(seen[reader], max(s.timeStamp for s in samples))
            reads.append({"reader": reader, "at": t, "since": last_read[reader], "rows": rows, "error": err})
            last_read[reader] = t
        time.sleep(0.02)
    stretches = {"slow": [], "fast": []}
    done = 0
    while done < 2:
        name, s, e = log.get()
        if s is None:
            done += 1
        else:
            stretches[name].append((s, e))
    for p in procs.values():
        p.join()
    # the spacing of a job's samples in the 1 s reader: the driver's sample period
    ts = sorted(r["ts"] for rd in reads if rd["reader"] == "1s" for r in rd["rows"] if r["job"] == "fast")
    gaps = sorted(b - a for a, b in zip(ts, ts[1:]) if b > a)
    period = gaps[len(gaps) // 2] if gaps else None
    for rd in reads:
        for r in rd["rows"]:
            if r["job"] in stretches and period:
                r["true_sample"] = busy_share(stretches[r["job"]], r["ts"] - period, r["ts"])
        rd["true_window"] = {j: busy_share(s, rd["since"], rd["at"]) for j, s in stretches.items()}
        print(json.dumps(rd))
    print(json.dumps({"sample_period_s": period, "gaps_s": gaps[:5] + gaps[-5:]}))
    # summary: per reader and job, samples per read, mean reported sm vs true busy share
    print("\n| reader | job | reads | samples per read (median) | newest sample's SM % (mean) | mean of the read's samples (mean) | true busy % over the window (mean) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for reader in ("1s", "10s"):
        for j in ("slow", "fast"):
            rds = [rd for rd in reads if rd["reader"] == reader]
            counts, newest, means, truth = [], [], [], []
            for rd in rds:
                rows = sorted((r for r in rd["rows"] if r["job"] == j), key=lambda r: r["ts"])
                counts.append(len(rows))
                newest.append(rows[-1]["sm"] if rows else 0)
                means.append(sum(r["sm"] for r in rows) / len(rows) if rows else 0)
                truth.append(100 * (rd["true_window"][j] or 0))
            med = sorted(counts)[len(counts) // 2] if counts else 0
            avg = lambda v: sum(v) / len(v) if v else float("nan")
            print(f"| {reader} | {j} | {len(rds)} | {med} | {avg(newest):.1f} | {avg(means):.1f} | {avg(truth):.1f} |")
    # each ten-second read against the one-second reads inside its window: the newest
    # of those, and their sum over the window's length in sample periods
    print("\n| 10 s read ending at (s) | job | SM % it reports | newest 1 s sample | sum of the 1 s samples / periods in the window | true busy % over the window |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    t_start = reads[0]["since"]
    ones = [rd for rd in reads if rd["reader"] == "1s"]
    for rd in (rd for rd in reads if rd["reader"] == "10s"):
        for j in ("slow", "fast"):
            got = [r["sm"] for r in rd["rows"] if r["job"] == j]
            inside = sorted(
                (r for o in ones if rd["since"] < o["at"] <= rd["at"] + 0.05 for r in o["rows"] if r["job"] == j),
                key=lambda r: r["ts"],
            )
            periods = (rd["at"] - rd["since"]) / period if period else float("nan")
            total = sum(r["sm"] for r in inside) / periods if periods else float("nan")
            newest_1s = inside[-1]["sm"] if inside else 0
            print(
                f"| {rd['at'] - t_start:.0f} | {j} | {got[0] if got else '-'} | {newest_1s} | {total:.1f} | "
                f"{100 * (rd['true_window'][j] or 0):.0f} |"
            )


if __name__ == "__main__":
    main()
