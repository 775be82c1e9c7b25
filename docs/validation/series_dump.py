#!/usr/bin/env python3
"""Writes each series Prometheus recorded during h100-series.sh as `timestamp,value` CSV.

usage: series_dump.py --prometheus URL --start T0 --end T1 --roles roles.json --out DIR

roles.json maps a process id to its role (train, infer, mem), so per-process series
are named by role. Every query of QUERIES is fetched with query_range at a 1 s step;
each series it returns becomes DIR/<name>[-<label values>].csv.
"""

import argparse
import json
import os
import sys
import urllib.parse
import urllib.request

QUERIES = {
    "gpu_utilization": "poolprof_gpu_utilization_ratio",
    "gpu_power_watts": "poolprof_gpu_power_usage_watts",
    "gpu_memory_used_bytes": "poolprof_gpu_memory_used_bytes",
    "gpu_memory_controller_utilization": "poolprof_gpu_memory_controller_utilization_ratio",
    "gpu_sm_active": "poolprof_gpu_sm_active_ratio",
    "gpu_sm_occupancy": "poolprof_gpu_sm_occupancy_ratio",
    "gpu_tensor_any_active": "poolprof_gpu_tensor_any_active_ratio",
    "gpu_dram_active": "poolprof_gpu_dram_active_ratio",
    "gpu_temperature_celsius": "poolprof_gpu_temperature_celsius",
    "gpu_clock_hz": "poolprof_gpu_clock_hz",
    "gpu_pcie_bytes_per_second": "poolprof_gpu_pcie_bytes_per_second",
    "process_gpu_memory_bytes": "poolprof_process_gpu_memory_bytes",
    "process_sm_utilization": "poolprof_process_sm_utilization_ratio",
}
# Labels that name the GPU, constant here; the rest tell series of one query apart.
SAME_FOR_ALL = {"__name__", "gpu", "uuid", "pci_bus_id", "name", "instance", "job", "workload"}


def query_range(base, query, start, end):
    params = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": "1s"})
    with urllib.request.urlopen(f"{base}/api/v1/query_range?{params}", timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{query}: {body}")
    return body["data"]["result"]


def suffix(labels, roles):
    parts = []
    for k in sorted(labels):
        if k in SAME_FOR_ALL:
            continue
        v = labels[k]
        parts.append(roles.get(v, v) if k == "pid" else v)
    return "-".join(p.replace("/", "_") for p in parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--end", type=float, required=True)
    ap.add_argument("--roles", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.roles) as f:
        roles = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    written = 0
    for name, query in QUERIES.items():
        try:
            result = query_range(args.prometheus, query, args.start, args.end)
        except Exception as e:  # one broken query never loses the others
            print(f"{name}: {e}", file=sys.stderr)
            continue
        for series in result:
            s = suffix(series["metric"], roles)
            if "pid" in series["metric"] and series["metric"]["pid"] not in roles:
                continue  # a process that is not one of ours
            path = os.path.join(args.out, f"{name}-{s}.csv" if s else f"{name}.csv")
            with open(path, "w") as f:
                f.write("timestamp,value\n")
                for t, v in series["values"]:
                    f.write(f"{t},{v}\n")
            written += 1
            # the file's name only: the log is committed beside the series, and the
            # folder it was written to is the recording machine's
            print(f"{os.path.basename(path)}: {len(series['values'])} samples")
    print(f"{written} series written")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
