"""Shared check helpers about the GPUs in the facts: fact paths, "skip unless GPUs", lists of GPUs (labels: domain.gpus)."""

from __future__ import annotations

from typing import List, Tuple

from ..model.facts import Driver, Facts, Gpu, ProbeStatus
from ..queries import nvidia_hardware
from .base import NO_GPU, SkipCheck, section_reason

MIB = 2**20
GIB = 2**30


def gpu_path(g: Gpu, fieldname: str) -> str:
    return f"driver.gpus[{g.index}].{fieldname}"


def require_gpus(facts: Facts, what: str, fields: Tuple[str, ...] = ()) -> List[Gpu]:
    """The GPUs the driver probe saw; SkipCheck when there are none to judge, or when none reports any of
    ``fields`` (the readings the check judges)."""
    driver: Driver = facts.driver
    if driver.status != ProbeStatus.OK:
        raise SkipCheck(section_reason(driver, what))
    if not driver.gpus:
        raise SkipCheck(f"{what} unknown: the driver reports no GPU", not_applicable=NO_GPU)
    if fields:
        require_any(driver.gpus, fields, what)
    return list(driver.gpus)


def require_any(gpus: List[Gpu], fields: Tuple[str, ...], what: str) -> None:
    if not any(getattr(g, f) is not None for g in gpus for f in fields):
        raise SkipCheck(f"{what} unknown: the probe did not report {', '.join(fields)}")


def gpu_list(gpus: List[Gpu]) -> str:
    idx = [str(g.index) for g in gpus]
    return ("GPU " if len(idx) == 1 else "GPUs ") + ", ".join(idx)


def looks_loaded(g: Gpu) -> bool:
    """Readings taken under load: our own load (under_load) or the GPU visibly working.

    Power draw within 10% of the limit only happens under load; utilisation is a weaker sign.
    """
    if g.under_load:
        return True
    if g.power_draw_w is not None and g.power_limit_w and g.power_draw_w >= 0.9 * g.power_limit_w:
        return True
    return g.utilization_gpu_pct is not None and g.utilization_gpu_pct >= 50


def given_gpus_only(facts: Facts) -> bool:
    """A container (a Kubernetes pod, docker --gpus device=N) sees the host's whole PCI bus in sysfs but was
    given some GPUs only (NVIDIA_VISIBLE_DEVICES, the /dev/nvidiaN nodes passed in): judge those, the ones
    NVML lists, not every NVIDIA device sysfs shows."""
    c = facts.host.container
    if not (c and c.runtime):
        return False
    if facts.driver.status == ProbeStatus.OK:
        return True  # NVML inside the container lists exactly the GPUs it was given
    nodes = [n for n in c.gpu_device_nodes or [] if n[len("/dev/nvidia"):].isdigit()]
    return bool(nodes) or (c.nvidia_visible_devices or "all").strip().lower() not in ("all", "")


def container_without_gpus(facts: Facts) -> bool:
    """A container on a host with NVIDIA GPUs that was started without them (no /dev/nvidia* passed in)."""
    c = facts.host.container
    return bool(c and c.runtime and not c.gpu_device_nodes and facts.driver.status != ProbeStatus.OK
                and nvidia_hardware(facts))
