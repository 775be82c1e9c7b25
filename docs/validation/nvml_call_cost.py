"""CPU and wall cost of each NVML query the exporter makes, and of the field-value
alternatives, measured on one GPU the way the exporter asks: once per round, rounds one
second apart (some queries are cheap only when the driver has a recent sample).

Usage: python3 docs/validation/nvml_call_cost.py [ROUNDS] [SPACING_S]
Prints a markdown table: per query, median and mean wall ms and CPU ms (process time),
and the largest CPU ms. The mean is what a collection interval pays on average.
"""
import statistics
import sys
import time
from ctypes import byref, c_uint, c_ulonglong

import pynvml as n

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
SPACING = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0

# Field ids from nvml.h (stable below 251), named here so an older pynvml still runs.
FI = {
    "ECC_SBE_AGG_TOTAL": 4,
    "ECC_DBE_AGG_TOTAL": 6,
    "MEMORY_TEMP": 82,
    "TOTAL_ENERGY_CONSUMPTION": 83,
    "PCIE_REPLAY_COUNTER": 94,
    "REMAPPED_COR": 142,
    "REMAPPED_UNC": 143,
    "REMAPPED_PENDING": 144,
    "REMAPPED_FAILURE": 145,
    "POWER_AVERAGE": 185,
    "POWER_INSTANT": 186,
}


def field(h, *names):
    ids = [FI[x] for x in names]
    return lambda: n.nvmlDeviceGetFieldValues(h, ids)


def calls(h):
    yield "utilization_rates", lambda: n.nvmlDeviceGetUtilizationRates(h)
    yield "memory_info", lambda: n.nvmlDeviceGetMemoryInfo(h)
    yield "power_usage", lambda: n.nvmlDeviceGetPowerUsage(h)
    yield "field POWER_INSTANT", field(h, "POWER_INSTANT")
    yield "field POWER_AVERAGE", field(h, "POWER_AVERAGE")
    yield "enforced_power_limit", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h)
    yield "total_energy", lambda: n.nvmlDeviceGetTotalEnergyConsumption(h)
    yield "field TOTAL_ENERGY", field(h, "TOTAL_ENERGY_CONSUMPTION")
    yield "temperature", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)
    yield "field MEMORY_TEMP", field(h, "MEMORY_TEMP")
    yield "clock_graphics", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_GRAPHICS)
    yield "clock_sm", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)
    yield "clock_mem", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)
    yield "clock_video", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_VIDEO)
    yield "pcie_replay_counter", lambda: n.nvmlDeviceGetPcieReplayCounter(h)
    yield "pcie_link_gen", lambda: n.nvmlDeviceGetCurrPcieLinkGeneration(h)
    yield "pcie_link_width", lambda: n.nvmlDeviceGetCurrPcieLinkWidth(h)
    yield "throttle_reasons", lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h)
    yield "ecc_corrected", lambda: n.nvmlDeviceGetTotalEccErrors(
        h, n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_AGGREGATE_ECC)
    yield "ecc_uncorrected", lambda: n.nvmlDeviceGetTotalEccErrors(
        h, n.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, n.NVML_AGGREGATE_ECC)
    yield "field ECC SBE+DBE", field(h, "ECC_SBE_AGG_TOTAL", "ECC_DBE_AGG_TOTAL")
    yield "remapped_rows", lambda: n.nvmlDeviceGetRemappedRows(h)
    yield "field REMAPPED x4", field(h, "REMAPPED_COR", "REMAPPED_UNC",
                                     "REMAPPED_PENDING", "REMAPPED_FAILURE")
    yield "nvlink_state x18", lambda: [_quiet(lambda: n.nvmlDeviceGetNvLinkState(h, l))
                                       for l in range(18)]
    yield "encoder_util", lambda: n.nvmlDeviceGetEncoderUtilization(h)
    yield "decoder_util", lambda: n.nvmlDeviceGetDecoderUtilization(h)
    yield "compute_processes", lambda: n.nvmlDeviceGetComputeRunningProcesses(h)
    yield "process_utilization", lambda: _quiet(lambda: n.nvmlDeviceGetProcessUtilization(h, 0))
    yield "compute_processes, one call", lambda: _one_call_processes(h)
    yield "process_utilization, one call, since the newest", lambda: _one_call_samples(h)
    yield "gpm_sample", lambda: _gpm_sample(h)
    yield "field batch (energy, power, mem temp, replay, ECC, remapped)", field(
        h, "TOTAL_ENERGY_CONSUMPTION", "POWER_INSTANT", "MEMORY_TEMP", "PCIE_REPLAY_COUNTER",
        "ECC_SBE_AGG_TOTAL", "ECC_DBE_AGG_TOTAL", "REMAPPED_COR", "REMAPPED_UNC",
        "REMAPPED_PENDING", "REMAPPED_FAILURE")
    yield "field batch without energy", field(
        h, "POWER_INSTANT", "MEMORY_TEMP", "PCIE_REPLAY_COUNTER", "ECC_SBE_AGG_TOTAL",
        "ECC_DBE_AGG_TOTAL", "REMAPPED_COR", "REMAPPED_UNC", "REMAPPED_PENDING",
        "REMAPPED_FAILURE")


def _quiet(f):
    try:
        return f()
    except n.NVMLError:
        return None


_SAMPLE = None
_NEWEST = 0


def _one_call_processes(h):
    """The exporter's way: one call with room for 32 entries (pynvml asks the count first)."""
    fn = n._nvmlGetFunctionPointer("nvmlDeviceGetComputeRunningProcesses_v3")
    count = c_uint(32)
    info = getattr(n, "c_nvmlProcessInfo_v3_t", None) or n.c_nvmlProcessInfo_v2_t
    buf = (info * 32)()
    ret = fn(h, byref(count), buf)
    if ret != n.NVML_SUCCESS:
        raise n.NVMLError(ret)


def _one_call_samples(h):
    """The exporter's way: one call with room for 256 samples newer than the last seen."""
    global _NEWEST
    fn = n._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
    count = c_uint(256)
    buf = (n.c_nvmlProcessUtilizationSample_t * 256)()
    ret = fn(h, buf, byref(count), c_ulonglong(_NEWEST))
    if ret == n.NVML_SUCCESS:
        _NEWEST = max([_NEWEST] + [buf[i].timeStamp for i in range(count.value)])
    elif ret != n.NVML_ERROR_NOT_FOUND:
        raise n.NVMLError(ret)


def _gpm_sample(h):
    global _SAMPLE
    if _SAMPLE is None:
        _SAMPLE = n.nvmlGpmSampleAlloc()
    n.nvmlGpmSampleGet(h, _SAMPLE)


def one(f):
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        f()
        ok = True
    except n.NVMLError as e:
        ok = str(e)
    return time.perf_counter() - w0, time.process_time() - c0, ok


def main():
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    queries = list(calls(h))
    walls = {q: [] for q, _ in queries}
    cpus = {q: [] for q, _ in queries}
    errors = {}
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for name, f in queries:
            wall, cpu, ok = one(f)
            walls[name].append(wall)
            cpus[name].append(cpu)
            if ok is not True:
                errors[name] = ok
        time.sleep(max(0.0, SPACING - (time.perf_counter() - start)))
    print(f"device: {n.nvmlDeviceGetName(h)}, driver {n.nvmlSystemGetDriverVersion()}, "
          f"{ROUNDS} rounds {SPACING} s apart, every query once per round")
    print("| NVML query | wall ms median | wall ms mean | CPU ms median | CPU ms mean | CPU ms max |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, _ in queries:
        w, c = walls[name], cpus[name]
        note = f" (error: {errors[name]})" if name in errors else ""
        print(f"| {name}{note} | {statistics.median(w)*1e3:.3f} | {statistics.mean(w)*1e3:.3f} "
              f"| {statistics.median(c)*1e3:.3f} | {statistics.mean(c)*1e3:.3f} | {max(c)*1e3:.3f} |")


if __name__ == "__main__":
    main()
