"""CPU and wall cost of each NVML query the exporter makes, measured on one GPU.

Usage: python3 docs/validation/nvml_call_cost.py [REPEATS]
Prints a markdown table: per call, median wall ms and CPU ms (process time) per call.
Tells which queries make up the exporter's CPU use at a 1 s collection interval.
"""
import statistics
import sys
import time

import pynvml as n

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def calls(h):
    yield "utilization_rates", lambda: n.nvmlDeviceGetUtilizationRates(h)
    yield "memory_info", lambda: n.nvmlDeviceGetMemoryInfo(h)
    yield "power_usage", lambda: n.nvmlDeviceGetPowerUsage(h)
    yield "enforced_power_limit", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h)
    yield "total_energy", lambda: n.nvmlDeviceGetTotalEnergyConsumption(h)
    yield "temperature", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)
    yield "clock_sm", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)
    yield "pcie_throughput_tx", lambda: n.nvmlDeviceGetPcieThroughput(h, n.NVML_PCIE_UTIL_TX_BYTES)
    yield "pcie_throughput_rx", lambda: n.nvmlDeviceGetPcieThroughput(h, n.NVML_PCIE_UTIL_RX_BYTES)
    yield "pcie_replay_counter", lambda: n.nvmlDeviceGetPcieReplayCounter(h)
    yield "pcie_link_gen", lambda: n.nvmlDeviceGetCurrPcieLinkGeneration(h)
    yield "throttle_reasons", lambda: n.nvmlDeviceGetCurrentClocksEventReasons(h)
    yield "ecc_total", lambda: n.nvmlDeviceGetTotalEccErrors(
        h, n.NVML_MEMORY_ERROR_TYPE_CORRECTED, n.NVML_AGGREGATE_ECC)
    yield "remapped_rows", lambda: n.nvmlDeviceGetRemappedRows(h)
    yield "encoder_util", lambda: n.nvmlDeviceGetEncoderUtilization(h)
    yield "compute_processes", lambda: n.nvmlDeviceGetComputeRunningProcesses(h)
    yield "process_utilization", lambda: _quiet(lambda: n.nvmlDeviceGetProcessUtilization(h, 0))
    yield "gpm_sample", lambda: _gpm_sample(h)


def _quiet(f):
    try:
        return f()
    except n.NVMLError:
        return None


_SAMPLE = None


def _gpm_sample(h):
    global _SAMPLE
    if _SAMPLE is None:
        _SAMPLE = n.nvmlGpmSampleAlloc()
    n.nvmlGpmSampleGet(h, _SAMPLE)


def measure(f):
    walls, cpus = [], []
    for _ in range(REPEATS):
        w0, c0 = time.perf_counter(), time.process_time()
        f()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3, max(cpus) * 1e3


def main():
    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    print(f"device: {n.nvmlDeviceGetName(h)}, driver {n.nvmlSystemGetDriverVersion()}, {REPEATS} repeats")
    print("| NVML query | wall ms (median) | CPU ms (median) | CPU ms (max) |")
    print("| --- | ---: | ---: | ---: |")
    for name, f in calls(h):
        try:
            wall, cpu, cpu_max = measure(f)
            print(f"| {name} | {wall:.3f} | {cpu:.3f} | {cpu_max:.3f} |")
        except n.NVMLError as e:
            print(f"| {name} | error: {e} | | |")


if __name__ == "__main__":
    main()
