"""NVML sampling while benchmarks run: GPU clocks, power, temperature, utilisation and throttle reasons.

Sampling happens in envdoctor's process, not in the payload: nvidia-ml-py is envdoctor's own dependency
(the target interpreter need not have it), probes/nvml.py stays the one place that imports it, and a
kernel that hangs in the payload cannot stop the samples that would show why.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional

from ..domain.pci import bus_key
from ..facts import LIMITING_THROTTLE_REASONS
from ..probes.nvml import decode_reasons, error_name

INTERVAL_S = 0.5


class GpuSampler:
    """Samples every GPU every ``interval_s`` in a daemon thread between start() and stop(); never raises."""

    def __init__(self, nvml: Any, interval_s: float = INTERVAL_S, max_s: float = 3600.0):
        self.nvml = nvml
        self.interval_s = interval_s
        self.max_s = max_s
        self.samples: Dict[str, List[Dict[str, Any]]] = {}  # bus key -> samples
        self.error: Optional[str] = None
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="envdoctor-bench-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        nvml = self.nvml
        try:
            nvml.nvmlInit()
        except Exception as e:  # noqa: BLE001 - NVMLError or a broken binding: sampling is best effort
            self.error = f"NVML init failed: {_err(nvml, e)}"
            return
        try:
            handles = []
            for i in range(int(nvml.nvmlDeviceGetCount())):
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                bus = bus_key(_text(getattr(nvml.nvmlDeviceGetPciInfo(h), "busId", None))) or f"index:{i}"
                handles.append((bus, h))
            end = time.monotonic() + self.max_s
            while not self._stop.is_set() and time.monotonic() < end:
                for bus, h in handles:
                    self.samples.setdefault(bus, []).append(read_sample(nvml, h))
                self._stop.wait(self.interval_s)
        except Exception as e:  # noqa: BLE001 - the probe guard
            self.error = f"NVML sampling stopped: {_err(nvml, e)}"
        finally:
            try:
                nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass


def _err(nvml: Any, e: BaseException) -> str:
    nvml_error = getattr(nvml, "NVMLError", None)
    if isinstance(nvml_error, type) and isinstance(e, nvml_error):
        return error_name(nvml, e)
    return f"{type(e).__name__}: {e}"


def _text(v: Any) -> Optional[str]:
    if isinstance(v, bytes):
        return v.decode("ascii", "replace")
    return str(v) if v is not None else None


def _call(nvml: Any, fn: str, *args: Any) -> Any:
    f = getattr(nvml, fn, None)
    if f is None:
        return None
    try:
        return f(*args)
    except Exception:  # noqa: BLE001 - NotSupported and friends: that field is unknown in this sample
        return None


def read_sample(nvml: Any, h: Any) -> Dict[str, Any]:
    """One sample of one GPU; fields NVML does not answer are None."""
    reasons = _call(nvml, "nvmlDeviceGetCurrentClocksEventReasons", h)
    if reasons is None:
        reasons = _call(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", h)
    util = _call(nvml, "nvmlDeviceGetUtilizationRates", h)
    power = _call(nvml, "nvmlDeviceGetPowerUsage", h)
    return {
        "t": round(time.monotonic(), 4),
        "sm_clock_mhz": _call(nvml, "nvmlDeviceGetClockInfo", h, getattr(nvml, "NVML_CLOCK_SM", 1)),
        "mem_clock_mhz": _call(nvml, "nvmlDeviceGetClockInfo", h, getattr(nvml, "NVML_CLOCK_MEM", 2)),
        "power_w": round(power / 1000.0, 1) if isinstance(power, (int, float)) else None,
        "temperature_c": _call(nvml, "nvmlDeviceGetTemperature", h, getattr(nvml, "NVML_TEMPERATURE_GPU", 0)),
        "utilization_pct": getattr(util, "gpu", None),
        "throttle_reasons": decode_reasons(reasons),  # the probe's one decoder: unknown bits kept
    }


LIMITING_REASONS = LIMITING_THROTTLE_REASONS


def merge_sustained(result_samples: List[Dict[str, Any]], nvml_samples: List[Dict[str, Any]],
                    t0: float) -> List[Dict[str, Any]]:
    """One time series: each NVML sample with the throughput of the batch that was running then.

    Without NVML samples the payload's own per-batch throughput is the series.
    """
    batches = sorted(result_samples, key=lambda s: s["t"])
    if not nvml_samples:
        return [{"t_s": round(b["t"] - t0, 3), "tflops": b.get("tflops")} for b in batches]
    out = []
    j = 0
    for s in sorted(nvml_samples, key=lambda s: s["t"]):
        while j < len(batches) and batches[j]["t"] < s["t"]:
            j += 1
        if j >= len(batches):
            break  # the load had ended: samples after it describe an idle GPU
        row = {k: v for k, v in s.items() if k != "t"}
        row["t_s"] = round(s["t"] - t0, 3)
        row["tflops"] = batches[j].get("tflops")
        out.append(row)
    return out


def sustained_summary(series: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Throttle onset, clock range and stability, throughput drop from the first to the last fifth."""
    out: Dict[str, Any] = {}
    rates = [s["tflops"] for s in series if isinstance(s.get("tflops"), (int, float))]
    if rates:
        fifth = max(1, len(rates) // 5)
        first, last = sum(rates[:fifth]) / fifth, sum(rates[-fifth:]) / fifth
        out["tflops_first"] = round(first, 3)
        out["tflops_last"] = round(last, 3)
        out["drop_pct"] = round(100.0 * (first - last) / first, 1) if first > 0 else None
    clocks = [s["sm_clock_mhz"] for s in series if isinstance(s.get("sm_clock_mhz"), (int, float))]
    if clocks:
        mean = sum(clocks) / len(clocks)
        var = sum((c - mean) ** 2 for c in clocks) / len(clocks)
        out["sm_clock_min_mhz"] = min(clocks)
        out["sm_clock_max_mhz"] = max(clocks)
        out["sm_clock_cv_pct"] = round(100.0 * var ** 0.5 / mean, 2) if mean else None
    onset = next((s for s in series if set(s.get("throttle_reasons") or []) & set(LIMITING_REASONS)), None)
    out["throttle_onset_s"] = onset["t_s"] if onset else None
    out["throttle_reasons_seen"] = sorted({r for s in series for r in (s.get("throttle_reasons") or [])
                                           if r in LIMITING_REASONS})
    temps = [s["temperature_c"] for s in series if isinstance(s.get("temperature_c"), (int, float))]
    if temps:
        out["temperature_max_c"] = max(temps)
    power = [s["power_w"] for s in series if isinstance(s.get("power_w"), (int, float))]
    if power:
        out["power_max_w"] = max(power)
    return out


def read_watch_fields(nvml: Any, h: Any, pcie: bool = True) -> Dict[str, Any]:
    """What `envdoctor watch` samples besides read_sample(): memory, memory-controller utilisation, PCIe
    throughput (each NVML PCIe read blocks ~20 ms, so the caller asks for it only every few ticks) and the pids
    of the compute processes; fields NVML does not answer are None."""
    mem = _call(nvml, "nvmlDeviceGetMemoryInfo", h)
    util = _call(nvml, "nvmlDeviceGetUtilizationRates", h)
    out: Dict[str, Any] = {
        "mem_used_mib": round(mem.used / 2**20) if isinstance(getattr(mem, "used", None), int) else None,
        "mem_total_mib": round(mem.total / 2**20) if isinstance(getattr(mem, "total", None), int) else None,
        "mem_util_pct": getattr(util, "memory", None),
    }
    if pcie:
        for key, counter in (("pcie_rx_mbps", "NVML_PCIE_UTIL_RX_BYTES"), ("pcie_tx_mbps", "NVML_PCIE_UTIL_TX_BYTES")):
            kbps = _call(nvml, "nvmlDeviceGetPcieThroughput", h, getattr(nvml, counter, 1 if "RX" in counter else 0))
            out[key] = round(kbps / 1000.0, 1) if isinstance(kbps, (int, float)) else None
    procs = _call(nvml, "nvmlDeviceGetComputeRunningProcesses", h)
    out["pids"] = sorted({int(p.pid) for p in procs if isinstance(getattr(p, "pid", None), int)}) \
        if isinstance(procs, list) else None
    return out
