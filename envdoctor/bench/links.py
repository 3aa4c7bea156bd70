"""Which link joins two GPUs and which topology an all-reduce runs on, from the run's facts (pure)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..domain.pci import bus_key
from ..model.facts import Facts, Gpu


def gpu_index(facts: Facts, bus: Any) -> Optional[int]:
    key = bus_key(bus) if bus else None
    for i, g in enumerate(facts.driver.gpus):
        if key and bus_key(g.pci_bus_id) == key:
            return i
    return None


def nvlink_gen(compat: Any, g: Optional[Gpu]) -> Optional[int]:
    try:
        spec = compat.gpu(g.name) if g is not None and g.name else None
    except Exception:
        spec = None
    gen = getattr(spec, "nvlink_gen", None)
    if gen:
        return int(gen)
    cc = (g.compute_capability if g is not None else None) or getattr(spec, "compute_capability", None) or ""
    return {"7.0": 2, "8.0": 3, "8.6": 3, "9.0": 4, "10.0": 5, "10.3": 5}.get(cc)


def link_kind(facts: Facts, compat: Any, a: Optional[int], b: Optional[int]) -> Tuple[Optional[str], str]:
    """The p2p link row for GPUs a and b (driver indices): ("nvlink4", why), ("pcie", why) or (None, why)."""
    gpus = facts.driver.gpus
    if a is None or b is None or a >= len(gpus) or b >= len(gpus):
        return None, "the GPUs of this pair are not in the driver facts"
    m = facts.topology.gpu_matrix
    cell = m[a][b] if m and a < len(m) and b < len(m[a]) else None
    ga, gb = gpus[a], gpus[b]
    if cell and cell.upper().startswith("NV"):
        switch = any(lk.remote_device_type == "switch" for g in (ga, gb) for lk in (g.nvlinks or []))
        cc = ga.compute_capability or ""
        if not switch and cc == "9.0":
            return "nvlink_bridge_hopper", f"NVLink bridge ({cell})"
        if not switch and cc == "8.6":
            return "nvlink_bridge_ga102", f"NVLink bridge ({cell})"
        gen = nvlink_gen(compat, ga)
        return (f"nvlink{gen}" if gen else None), f"NVLink{gen or ' (generation unknown)'} ({cell}{', NVSwitch' if switch else ''})"
    if cell is None:
        return None, "the GPU topology matrix was not read"
    return "pcie", f"PCIe ({cell})"


def min_link(gpus: List[Gpu]) -> Tuple[Optional[int], Optional[int]]:
    gens = [g.pcie_gen_max for g in gpus if g.pcie_gen_max]
    widths = [g.pcie_width_max for g in gpus if g.pcie_width_max]
    return (min(gens) if len(gens) == len(gpus) else None), (min(widths) if len(widths) == len(gpus) else None)


def topology_kind(facts: Facts, compat: Any, idx: List[int]) -> Tuple[Optional[str], str]:
    kinds = {link_kind(facts, compat, x, y)[0] for x in idx for y in idx if x != y}
    if not kinds or None in kinds:
        return None, "the GPU topology is unknown"
    if kinds == {"nvlink_bridge_hopper"} and len(idx) == 2:
        return "nvlink_bridge_hopper", "2 GPUs over an NVLink bridge"
    if len(kinds) == 1 and next(iter(kinds)) in ("nvlink3", "nvlink4", "nvlink5"):
        arch = {"nvlink3": "ampere", "nvlink4": "hopper", "nvlink5": "blackwell"}[next(iter(kinds))]
        return f"nvswitch_{arch}", f"{len(idx)} GPUs, NVLink between every pair ({arch})"
    if "pcie" in kinds:
        return "pcie", f"{len(idx)} GPUs, PCIe between some"
    return None, "a mixed NVLink topology"
