"""PCIe-under-load probe: runs the payload's pcie-load task in the target interpreter while NVML samples the links."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py

from __future__ import annotations

import threading
from dataclasses import field
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.domain.fastclass import dataclass
from envdoctor.domain.pci import bus_key
from envdoctor.model.facts import Driver, ProbeStatus
from envdoctor.probes.nvml import import_pynvml, run_with_timeout, sample_pcie_links
from envdoctor.probes.python_env import PayloadRun, execute_payload

DEFAULT_SECONDS = 1.5


@dataclass(frozen=True)
class PcieLoad:
    status: str
    reason: Optional[str] = None
    # normalised bus id "0000:3b:00" -> best (generation, width) seen while the copies ran
    readings: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    copies: List[Dict[str, Any]] = field(default_factory=list)  # the payload's per-GPU GB/s (bench facts)
    seconds: Optional[float] = None




def probe_pcie_load(executable: str, runner: Any, driver: Driver, nvml: Any = None,
                    seconds: float = DEFAULT_SECONDS, timeout_s: float = 90.0) -> PcieLoad:
    """``skipped`` quickly when there is no GPU, no NVML or no CUDA torch to make the load (collect guards it)."""
    if driver.status != ProbeStatus.OK or not driver.gpus:
        why = f" (driver probe {driver.status}: {driver.reason})" if driver.reason else ""
        return PcieLoad(ProbeStatus.SKIPPED, f"no GPU{why}")
    if nvml is None:
        try:
            nvml = import_pynvml()
        except ImportError:
            return PcieLoad(ProbeStatus.SKIPPED, "no NVML: pynvml (nvidia-ml-py) is not installed")
    done = threading.Event()
    runs: List[PayloadRun] = []

    def load() -> None:
        try:
            runs.append(execute_payload(executable, runner, "pcie-load", ["--seconds", f"{seconds:g}"], timeout_s,
                                        stage_hint="making the PCIe load"))
        finally:
            done.set()

    worker = threading.Thread(target=load, name="envdoctor-pcie-load", daemon=True)
    worker.start()
    sampled: List[Tuple[Dict[str, Tuple[int, int]], int, Optional[str]]] = []

    def sample() -> None:
        sampled.append(sample_pcie_links(nvml, lambda: not done.is_set(), max_s=timeout_s + 5))

    # the sampler runs in its own daemon thread too: a hung NVML call must not hang collect
    run_with_timeout(sample, timeout_s + 10)
    worker.join(timeout_s + 10)
    if not runs:
        return PcieLoad(ProbeStatus.FAILED, f"the load did not finish within {timeout_s:g} s")
    pr = runs[0]
    if pr.kind != "ok" or pr.result is None:
        return PcieLoad(ProbeStatus.FAILED, f"the PCIe load in {executable} failed: {pr.error}")
    if not pr.result.get("ran"):
        return PcieLoad(ProbeStatus.SKIPPED, f"no CUDA in {executable}: {pr.result.get('reason') or 'no load ran'}")
    if not sampled:
        return PcieLoad(ProbeStatus.FAILED, "NVML did not answer while the load ran")
    best, samples, error = sampled[0]
    copies = [d for d in pr.result.get("devices") or [] if isinstance(d, dict)]
    secs = pr.result.get("seconds") if isinstance(pr.result.get("seconds"), (int, float)) else None
    if not best:
        return PcieLoad(ProbeStatus.FAILED, f"no PCIe reading while the load ran ({error or 'no samples'})",
                        copies=copies, seconds=secs)
    devices = [d for d in pr.result.get("devices") or [] if isinstance(d, dict)]
    carried = [d for d in devices if d.get("bytes") and not d.get("error")]
    loaded = {bus_key(d.get("pci_bus_id")) for d in carried}
    readings = {bus_key(b) or b: v for b, v in best.items()}
    if None in loaded or not loaded:
        # a torch without pci_bus_id in its device properties: the reading can be tied to the load only when
        # every GPU NVML sampled carried traffic; otherwise (CUDA_VISIBLE_DEVICES hid some) none can be trusted
        if not carried or len(carried) != len(readings):
            return PcieLoad(ProbeStatus.SKIPPED, f"{len(carried)} of {len(readings)} GPU(s) carried the load and "
                            "torch gave no PCI bus ids to tell which: no reading kept", copies=copies, seconds=secs)
    else:
        # only GPUs that carried traffic count: CUDA_VISIBLE_DEVICES hides some, their links stay idle
        readings = {b: v for b, v in readings.items() if b in loaded}
    mb = ", ".join(f"{d.get('pci_bus_id') or 'cuda:' + str(d.get('index'))} {d.get('gb_per_s')} GB/s"
                   for d in carried)
    failed = [f"{d.get('pci_bus_id') or 'cuda:' + str(d.get('index'))}: {d.get('error')}" for d in devices
              if d.get("error")]
    reason = f"{len(readings)} GPU link(s) sampled {samples} time(s) during {pr.result.get('seconds')} s of " \
             f"host-to-device copies ({mb})"
    if failed:
        reason += "; no load on " + "; ".join(failed)
    if error:
        reason += f"; NVML: {error}"
    return PcieLoad(ProbeStatus.OK, reason, readings, copies=copies, seconds=secs)
