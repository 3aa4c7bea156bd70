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
from ..model.facts import LIMITING_THROTTLE_REASONS
from ..probes.nvml import (
    HealthWatch,
    error_text,
    gpu_handles,
    nvml_init,
    nvml_shutdown,
    read_sample,
    read_watch_fields,
)

INTERVAL_S = 0.5


class GpuSampler:
    """Samples every GPU every ``interval_s`` in a daemon thread between start() and stop(); never raises.

    Every NVML read goes through probes/nvml.py (read_sample: the probe's one clock-event decoder). With
    ``watch_health`` the error and violation counters and Xid events are watched over the same window
    (probes.nvml.HealthWatch, as DCGM diag watches them under its load): ``health`` maps bus key -> deltas."""

    def __init__(self, nvml: Any, interval_s: float = INTERVAL_S, max_s: float = 3600.0,
                 watch_health: bool = False):
        self.nvml = nvml
        self.interval_s = interval_s
        self.max_s = max_s
        self.watch_health = watch_health
        self.samples: Dict[str, List[Dict[str, Any]]] = {}  # bus key -> samples
        self.health: Dict[str, Dict[str, Any]] = {}  # bus key -> HealthWatch.stop() of that GPU
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
            why = nvml_init(nvml)
        except Exception as e:  # noqa: BLE001 - a binding that is not pynvml: sampling is best effort
            why = error_text(nvml, e)
        if why is not None:
            self.error = f"NVML init failed: {why}"
            return
        health = HealthWatch(nvml) if self.watch_health else None
        try:
            handles = [(bus_key(bus) or bus, h) for bus, h in gpu_handles(nvml)]
            if health is not None:
                health.start()
            end = time.monotonic() + self.max_s
            while not self._stop.is_set() and time.monotonic() < end:
                for bus, h in handles:
                    self.samples.setdefault(bus, []).append(read_sample(nvml, h))
                self._stop.wait(self.interval_s)
        except Exception as e:  # noqa: BLE001 - the probe guard
            self.error = f"NVML sampling stopped: {error_text(nvml, e)}"
        finally:
            if health is not None:
                self.health = {bus_key(b) or b: v for b, v in health.stop().items()}
                if health.error and not self.error:
                    self.error = health.error
            nvml_shutdown(nvml)


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


def reason_counts(samples: List[Dict[str, Any]]) -> Dict[str, int]:
    """Limiting clock-event reason -> the number of samples it was active in."""
    out: Dict[str, int] = {}
    for s in samples:
        for r in set(s.get("throttle_reasons") or []):
            if r in LIMITING_REASONS:
                out[r] = out.get(r, 0) + 1
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
    out["throttle_reason_samples"] = reason_counts(series)
    out["nvml_samples"] = len(series)
    temps = [s["temperature_c"] for s in series if isinstance(s.get("temperature_c"), (int, float))]
    if temps:
        out["temperature_max_c"] = max(temps)
    power = [s["power_w"] for s in series if isinstance(s.get("power_w"), (int, float))]
    if power:
        out["power_max_w"] = max(power)
    return out



def health_params(health: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A sustained result's params from one GPU's HealthWatch.stop() entry: ``health_counters`` (counter ->
    growth over the run, zeros included: they say the counter was watched), ``xid_seen`` (Xid numbers, when
    Xid events could be watched on that GPU)."""
    if not health:
        return {}
    out: Dict[str, Any] = {"health_counters": dict(health.get("deltas") or {})}
    if health.get("xid_watched") or health.get("xids"):
        out["xid_seen"] = list(health.get("xids") or [])
    return out


__all__ = ["GpuSampler", "LIMITING_REASONS", "health_params", "merge_sustained", "read_sample", "read_watch_fields",
           "reason_counts", "sustained_summary"]
