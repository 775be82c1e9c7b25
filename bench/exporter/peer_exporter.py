#!/usr/bin/env python3
"""A Python GPU exporter on nvidia-ml-py and prometheus_client, the peer that
poolprof-exporter is benchmarked against (bench/exporter/run.sh).

It collects the same fields as poolprof's NVML backend every --interval seconds in
a background thread (device metrics, per-process memory and utilization, GPM on
Hopper) and serves the latest snapshot on /metrics, so a scrape makes no NVML call,
as in poolprof. Written plainly, the way such an exporter is usually written.
Xid events are not watched (an event-set thread would add little CPU).
"""

import argparse
import sys
import threading
import time

import pynvml
from prometheus_client import start_http_server
from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily

CLOCKS = [
    (pynvml.NVML_CLOCK_GRAPHICS, "graphics"),
    (pynvml.NVML_CLOCK_SM, "sm"),
    (pynvml.NVML_CLOCK_MEM, "memory"),
    (pynvml.NVML_CLOCK_VIDEO, "video"),
]
THROTTLE = [
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
]
# (metric id, family, label value or None, scale): percentages become ratios,
# MiB/s become bytes/s.
GPM = [
    (pynvml.NVML_GPM_METRIC_SM_UTIL, "sm_active_ratio", None, 0.01),
    (pynvml.NVML_GPM_METRIC_SM_OCCUPANCY, "sm_occupancy_ratio", None, 0.01),
    (pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL, "graphics_engine_active_ratio", None, 0.01),
    (pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL, "tensor_active_ratio", "any", 0.01),
    (pynvml.NVML_GPM_METRIC_HMMA_TENSOR_UTIL, "tensor_active_ratio", "hmma", 0.01),
    (pynvml.NVML_GPM_METRIC_IMMA_TENSOR_UTIL, "tensor_active_ratio", "imma", 0.01),
    (pynvml.NVML_GPM_METRIC_DFMA_TENSOR_UTIL, "tensor_active_ratio", "dfma", 0.01),
    (pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL, "dram_active_ratio", None, 0.01),
    (pynvml.NVML_GPM_METRIC_FP64_UTIL, "pipe_active_ratio", "fp64", 0.01),
    (pynvml.NVML_GPM_METRIC_FP32_UTIL, "pipe_active_ratio", "fp32", 0.01),
    (pynvml.NVML_GPM_METRIC_FP16_UTIL, "pipe_active_ratio", "fp16", 0.01),
    (pynvml.NVML_GPM_METRIC_INTEGER_UTIL, "pipe_active_ratio", "integer", 0.01),
    (pynvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC, "gpm_pcie_tx_bytes_per_second", None, 1048576.0),
    (pynvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC, "gpm_pcie_rx_bytes_per_second", None, 1048576.0),
    (pynvml.NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, "gpm_nvlink_tx_bytes_per_second", None, 1048576.0),
    (pynvml.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, "gpm_nvlink_rx_bytes_per_second", None, 1048576.0),
]
FI_MEMORY_TEMP = 82
FI_NVLINK_TX = 138
FI_NVLINK_RX = 139
MAX_LINKS = 18


class Families:
    """Metric families of one collection, created on first use."""

    def __init__(self):
        self.by_name = {}

    def add(self, name, help_text, labels, value, counter=False, extra=()):
        key = "peer_gpu_" + name
        fam = self.by_name.get(key)
        names = ["gpu", "uuid"] + [k for k, _ in extra]
        if fam is None:
            cls = CounterMetricFamily if counter else GaugeMetricFamily
            fam = cls(key, help_text, labels=names)
            self.by_name[key] = fam
        fam.add_metric(list(labels) + [v for _, v in extra], float(value))


def try_read(fn, *args):
    """One NVML read; None when the device does not offer it or it failed."""
    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None


class Gpu:
    """One GPU: handle, labels and the state of two-sample reads."""

    def __init__(self, index):
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.labels = (str(index), pynvml.nvmlDeviceGetUUID(self.handle))
        self.name = pynvml.nvmlDeviceGetName(self.handle)
        self.gpm_prev = None
        self.gpm = bool(getattr(try_read(pynvml.nvmlGpmQueryDeviceSupport, self.handle),
                                "isSupportedDevice", 0))
        self.process_ts = 0

    def collect(self, f):
        h, lab = self.handle, self.labels
        u = try_read(pynvml.nvmlDeviceGetUtilizationRates, h)
        if u is not None:
            f.add("utilization_ratio", "GPU busy", lab, u.gpu / 100.0)
            f.add("memory_utilization_ratio", "Memory controller busy", lab, u.memory / 100.0)
        m = try_read(pynvml.nvmlDeviceGetMemoryInfo, h, pynvml.nvmlMemory_v2)
        if m is not None:
            f.add("memory_used_bytes", "Used", lab, m.used)
            f.add("memory_free_bytes", "Free", lab, m.free)
            f.add("memory_total_bytes", "Total", lab, m.total)
            f.add("memory_reserved_bytes", "Reserved", lab, m.reserved)
        p = try_read(pynvml.nvmlDeviceGetPowerUsage, h)
        if p is not None:
            f.add("power_watts", "Power", lab, p / 1000.0)
        p = try_read(pynvml.nvmlDeviceGetEnforcedPowerLimit, h)
        if p is not None:
            f.add("power_limit_watts", "Power limit", lab, p / 1000.0)
        e = try_read(pynvml.nvmlDeviceGetTotalEnergyConsumption, h)
        if e is not None:
            f.add("energy_joules_total", "Energy", lab, e / 1000.0, counter=True)
        t = try_read(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU)
        if t is not None:
            f.add("temperature_celsius", "Temperature", lab, t, extra=[("sensor", "gpu")])
        fv = try_read(pynvml.nvmlDeviceGetFieldValues, h, [FI_MEMORY_TEMP])
        if fv is not None and fv[0].nvmlReturn == pynvml.NVML_SUCCESS and fv[0].value.uiVal > 0:
            f.add("temperature_celsius", "Temperature", lab, fv[0].value.uiVal,
                  extra=[("sensor", "memory")])
        for clock, name in CLOCKS:
            c = try_read(pynvml.nvmlDeviceGetClockInfo, h, clock)
            if c is not None:
                f.add("clock_hz", "Clock", lab, c * 1e6, extra=[("clock", name)])
        for counter, direction in ((pynvml.NVML_PCIE_UTIL_TX_BYTES, "tx"),
                                   (pynvml.NVML_PCIE_UTIL_RX_BYTES, "rx")):
            v = try_read(pynvml.nvmlDeviceGetPcieThroughput, h, counter)
            if v is not None:
                f.add("pcie_bytes_per_second", "PCIe", lab, v * 1024.0,
                      extra=[("direction", direction)])
        r = try_read(pynvml.nvmlDeviceGetPcieReplayCounter, h)
        if r is not None:
            f.add("pcie_replays_total", "Replays", lab, r, counter=True)
        g = try_read(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h)
        w = try_read(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h)
        if g is not None and w is not None:
            f.add("pcie_link_generation", "Gen", lab, g)
            f.add("pcie_link_width", "Width", lab, w)
        reasons = try_read(pynvml.nvmlDeviceGetCurrentClocksEventReasons, h)
        if reasons is not None:
            for bit, name in THROTTLE:
                f.add("clock_event_active", "Reason", lab, 1 if reasons & bit else 0,
                      extra=[("reason", name)])
        for kind, err in (("corrected", pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                          ("uncorrected", pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
            v = try_read(pynvml.nvmlDeviceGetTotalEccErrors, h, err, pynvml.NVML_AGGREGATE_ECC)
            if v is not None:
                f.add("ecc_errors_total", "ECC", lab, v, counter=True, extra=[("type", kind)])
        rr = try_read(pynvml.nvmlDeviceGetRemappedRows, h)
        if rr is not None:
            f.add("remapped_rows", "Remapped", lab, rr[0], extra=[("cause", "correctable")])
            f.add("remapped_rows", "Remapped", lab, rr[1], extra=[("cause", "uncorrectable")])
            f.add("remap_pending", "Pending", lab, rr[2])
            f.add("remap_failed", "Failed", lab, rr[3])
        self.collect_nvlink(f)
        for name, fn in (("encoder", pynvml.nvmlDeviceGetEncoderUtilization),
                         ("decoder", pynvml.nvmlDeviceGetDecoderUtilization)):
            v = try_read(fn, h)
            if v is not None:
                f.add(name + "_utilization_ratio", name, lab, v[0] / 100.0)
        self.collect_processes(f)
        self.collect_gpm(f)

    def collect_nvlink(self, f):
        links = []
        for link in range(MAX_LINKS):
            state = try_read(pynvml.nvmlDeviceGetNvLinkState, self.handle, link)
            if state is not None:
                links.append(link)
                f.add("nvlink_up", "Link up", self.labels, state, extra=[("link", str(link))])
        if not links:
            return
        ids = [(fi, link) for link in links for fi in (FI_NVLINK_TX, FI_NVLINK_RX)]
        values = try_read(pynvml.nvmlDeviceGetFieldValues, self.handle, ids)
        for (fi, link), v in zip(ids, values or []):
            if v.nvmlReturn == pynvml.NVML_SUCCESS:
                f.add("nvlink_bytes_total", "NVLink", self.labels, v.value.ullVal * 1024.0,
                      counter=True, extra=[("link", str(link)),
                                           ("direction", "tx" if fi == FI_NVLINK_TX else "rx")])

    def collect_processes(self, f):
        procs = try_read(pynvml.nvmlDeviceGetComputeRunningProcesses, self.handle) or []
        samples = try_read(pynvml.nvmlDeviceGetProcessUtilization, self.handle,
                           self.process_ts) or []
        newest = {}
        for s in samples:
            if s.pid not in newest or s.timeStamp >= newest[s.pid].timeStamp:
                newest[s.pid] = s
            self.process_ts = max(self.process_ts, s.timeStamp)
        for p in procs:
            extra = [("pid", str(p.pid))]
            if p.usedGpuMemory is not None:
                f.add("process_memory_bytes", "Process memory", self.labels,
                      p.usedGpuMemory, extra=extra)
            s = newest.get(p.pid)
            f.add("process_sm_utilization_ratio", "Process SM", self.labels,
                  s.smUtil / 100.0 if s else 0.0, extra=extra)

    def collect_gpm(self, f):
        if not self.gpm:
            return
        sample = try_read(pynvml.nvmlGpmSampleAlloc)
        if sample is None or try_read(pynvml.nvmlGpmSampleGet, self.handle, sample) is None:
            return
        prev, self.gpm_prev = self.gpm_prev, sample
        if prev is None:
            return
        req = pynvml.c_nvmlGpmMetricsGet_t()
        req.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        req.numMetrics = len(GPM)
        req.sample1 = prev
        req.sample2 = sample
        for i, (mid, _, _, _) in enumerate(GPM):
            req.metrics[i].metricId = mid
        got = try_read(pynvml.nvmlGpmMetricsGet, req)
        try_read(pynvml.nvmlGpmSampleFree, prev)
        if got is None:
            return
        for i, (_, name, label, scale) in enumerate(GPM):
            metric = got.metrics[i]
            if metric.nvmlReturn != pynvml.NVML_SUCCESS:
                continue
            extra = [] if label is None else [("pipe" if name == "pipe_active_ratio" else "kind", label)]
            f.add(name, name, self.labels, metric.value * scale, extra=extra)


class Exporter:
    """Collects in a thread; serves the newest snapshot."""

    def __init__(self, interval):
        self.interval = interval
        self.gpus = [Gpu(i) for i in range(pynvml.nvmlDeviceGetCount())]
        self.driver = pynvml.nvmlSystemGetDriverVersion()
        self.latest = []
        self.lock = threading.Lock()

    def collect_once(self):
        f = Families()
        info = GaugeMetricFamily("peer_gpu_info", "GPU identity",
                                 labels=["gpu", "uuid", "name", "driver_version"])
        for gpu in self.gpus:
            info.add_metric(list(gpu.labels) + [gpu.name, self.driver], 1.0)
            gpu.collect(f)
        families = [info] + list(f.by_name.values())
        with self.lock:
            self.latest = families

    def loop(self):
        next_at = time.monotonic()
        while True:
            try:
                self.collect_once()
            except Exception as e:  # keep serving the last snapshot
                print("collection failed:", e, file=sys.stderr, flush=True)
            next_at += self.interval
            time.sleep(max(0.0, next_at - time.monotonic()))

    def collect(self):
        with self.lock:
            return list(self.latest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--address", default="127.0.0.1")
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    if not 0 < args.port < 65536 or not 0.05 <= args.interval <= 3600:
        ap.error("--port must be 1-65535 and --interval 0.05-3600 seconds")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        print(f"peer_exporter: NVML failed to start: {e}", file=sys.stderr)
        return 1
    exporter = Exporter(args.interval)
    exporter.collect_once()
    REGISTRY.register(exporter)
    threading.Thread(target=exporter.loop, daemon=True, name="collect").start()
    start_http_server(args.port, addr=args.address)
    print(f"peer_exporter: {len(exporter.gpus)} GPUs on http://{args.address}:{args.port}/metrics",
          file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
