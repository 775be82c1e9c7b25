"""Where an NVML exporter's memory and remaining CPU go, measured on one GPU.

Usage: python3 docs/validation/nvml_memory_and_gpm.py [REPEATS]

1. Memory: a fresh process's resident memory (anonymous and file-backed, from
   /proc/self/status) after each step an exporter takes: loading libnvidia-ml,
   nvmlInit, a device handle, one round of device queries, two GPM samples, an event
   set; then the largest anonymous mappings NVML added. Once with nvmlInit and once
   with nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH). Tells how much of an NVML
   exporter's RSS is NVML's own, and whether an init flag changes it.
2. GPM: CPU per nvmlGpmMetricsGet call as a function of how many metrics it asks for,
   and the cost of the MIG mode query. Tells whether asking for fewer metrics saves
   CPU.
Prints markdown tables.
"""
import ctypes
import os
import statistics
import subprocess
import sys
import time

import pynvml as n

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 50
NO_ATTACH = 2  # NVML_INIT_FLAG_NO_ATTACH


def status():
    """(VmRSS, RssAnon, RssFile) in KiB."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                fields[key] = int(value.split()[0])
    return fields.get("VmRSS", 0), fields.get("RssAnon", 0), fields.get("RssFile", 0)


def anon_mappings():
    """{start address: (size KiB, Rss KiB)} of anonymous mappings."""
    out, current = {}, None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:
                lo, hi = head[0].split("-")
                current = head[0] if len(head) == 5 else None
                if current:
                    out[current] = [(int(hi, 16) - int(lo, 16)) // 1024, 0]
            elif current and head[0] == "Rss:":
                out[current][1] = int(head[1])
    return out


def memory_steps(flags):
    rows = []
    last = status()

    def step(name):
        nonlocal last
        now = status()
        rows.append((name, now, tuple(a - b for a, b in zip(now, last))))
        last = now

    step("python + pynvml imported")
    ctypes.CDLL("libnvidia-ml.so.1")
    step("libnvidia-ml.so.1 loaded (dlopen)")
    before = anon_mappings()
    if flags:
        n.nvmlInitWithFlags(flags)
        step(f"nvmlInitWithFlags({flags})")
    else:
        n.nvmlInit()
        step("nvmlInit")
    grown = sorted(((rss - before.get(a, (0, 0))[1], size, a) for a, (size, rss) in anon_mappings().items()),
                   reverse=True)[:8]
    try:
        h = n.nvmlDeviceGetHandleByIndex(0)
    except n.NVMLError as e:
        print(f"#### init flags {flags}: nvmlDeviceGetHandleByIndex refused: {e}")
        return None, None
    n.nvmlDeviceGetUUID(h)
    step("device handle + UUID")
    n.nvmlDeviceGetUtilizationRates(h)
    n.nvmlDeviceGetMemoryInfo(h)
    n.nvmlDeviceGetPowerUsage(h)
    n.nvmlDeviceGetTotalEnergyConsumption(h)
    n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)
    n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)
    n.nvmlDeviceGetPcieReplayCounter(h)
    n.nvmlDeviceGetCurrentClocksEventReasons(h)
    n.nvmlDeviceGetComputeRunningProcesses(h)
    try:
        n.nvmlDeviceGetProcessUtilization(h, 0)
    except n.NVMLError:
        pass
    step("one round of device queries")
    samples = None
    try:
        samples = two_gpm_samples(h)
        step("two GPM samples allocated and taken")
        gpm_get(samples, metric_ids()[:16])
        step("nvmlGpmMetricsGet (16 metrics)")
    except n.NVMLError as e:
        print(f"GPM unavailable: {e}")
    try:
        n.nvmlEventSetCreate()
        step("event set created")
    except n.NVMLError as e:
        print(f"event set unavailable: {e}")
    print(f"#### init flags {flags}")
    print("| step | VmRSS KiB | anon KiB | file KiB | delta RSS | delta anon | delta file |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (rss, anon, file), (d_rss, d_anon, d_file) in rows:
        print(f"| {name} | {rss} | {anon} | {file} | {d_rss:+} | {d_anon:+} | {d_file:+} |")
    print()
    print("Anonymous mappings that grew most during init: Rss growth KiB / mapping size KiB")
    for grew, size, address in grown:
        print(f"    {grew:7d} / {size:8d}  {address}")
    threads = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    print(f"threads after init: {threads}")
    return h, samples


def two_gpm_samples(h):
    """Two GPM samples of device `h`, 0.1 s apart."""
    samples = (n.nvmlGpmSampleAlloc(), n.nvmlGpmSampleAlloc())
    n.nvmlGpmSampleGet(h, samples[0])
    time.sleep(0.1)
    n.nvmlGpmSampleGet(h, samples[1])
    return samples


def metric_ids():
    names = ["SM_UTIL", "SM_OCCUPANCY", "GRAPHICS_UTIL", "ANY_TENSOR_UTIL", "HMMA_TENSOR_UTIL",
             "IMMA_TENSOR_UTIL", "DFMA_TENSOR_UTIL", "DRAM_BW_UTIL", "FP64_UTIL", "FP32_UTIL",
             "FP16_UTIL", "INTEGER_UTIL", "PCIE_TX_PER_SEC", "PCIE_RX_PER_SEC",
             "NVLINK_TOTAL_TX_PER_SEC", "NVLINK_TOTAL_RX_PER_SEC"]
    return [getattr(n, "NVML_GPM_METRIC_" + name) for name in names if hasattr(n, "NVML_GPM_METRIC_" + name)]


def gpm_get(samples, ids):
    request = n.c_nvmlGpmMetricsGet_t()
    request.version = n.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = len(ids)
    request.sample1 = samples[0]
    request.sample2 = samples[1]
    for i, metric in enumerate(ids):
        request.metrics[i].metricId = metric
    n.nvmlGpmMetricsGet(request)
    return request


def cpu_ms(f):
    cpus = []
    for _ in range(REPEATS):
        c0 = time.process_time()
        f()
        cpus.append(time.process_time() - c0)
    return statistics.median(cpus) * 1e3, max(cpus) * 1e3


def gpm_costs(h, samples):
    ids = metric_ids()
    print()
    print(f"| query | CPU ms per call (median of {REPEATS}) | CPU ms (max) |")
    print("| --- | ---: | ---: |")
    if samples:
        for k in (1, 2, 4, 8, 12, 14, len(ids)):
            med, mx = cpu_ms(lambda: gpm_get(samples, ids[:k]))
            print(f"| nvmlGpmMetricsGet, {k} metrics | {med:.3f} | {mx:.3f} |")
        for one in ids:
            med, mx = cpu_ms(lambda: gpm_get(samples, [one]))
            print(f"| nvmlGpmMetricsGet, metric id {one} alone | {med:.3f} | {mx:.3f} |")
        med, mx = cpu_ms(lambda: n.nvmlGpmSampleGet(h, samples[1]))
        print(f"| nvmlGpmSampleGet | {med:.3f} | {mx:.3f} |")
    for name, f in (("nvmlDeviceGetMigMode", lambda: n.nvmlDeviceGetMigMode(h)),
                    ("nvmlDeviceGetPcieReplayCounter", lambda: n.nvmlDeviceGetPcieReplayCounter(h)),
                    ("nvmlDeviceGetComputeRunningProcesses", lambda: n.nvmlDeviceGetComputeRunningProcesses(h))):
        try:
            med, mx = cpu_ms(f)
            print(f"| {name} | {med:.3f} | {mx:.3f} |")
        except n.NVMLError as e:
            print(f"| {name} | error: {e} | |")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--memory":
        memory_steps(int(sys.argv[2]))
        return
    for flags in (0, NO_ATTACH):
        # A fresh process each, so neither measurement includes the other's NVML.
        subprocess.run([sys.executable, __file__, "--memory", str(flags)], check=False)
        print()
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    samples = None
    try:
        samples = two_gpm_samples(h)
    except n.NVMLError as e:
        print(f"GPM unavailable: {e}")
    print(f"device: {n.nvmlDeviceGetName(h)}, driver {n.nvmlSystemGetDriverVersion()}")
    gpm_costs(h, samples)


if __name__ == "__main__":
    main()
