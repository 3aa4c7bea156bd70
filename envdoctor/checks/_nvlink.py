"""What the NVLink checks know of a GPU: its wired link count, its form factor, what says it is on a fabric."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from ..model.facts import Gpu

if TYPE_CHECKING:
    from ..compat.queries import Compat

# Bidirectional bandwidth of one NVLink, by generation (NVIDIA NVLink page,
# https://www.nvidia.com/en-us/data-center/nvlink/): P100 4 links = 160 GB/s, V100 6 = 300 GB/s,
# A100 12 = 600 GB/s, H100 18 = 900 GB/s, B200 18 = 1800 GB/s. Used to derive the link count when
# compat gpus.json gives the total bandwidth but not nvlink_links.
_LINK_GBS = {1: 40.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 100.0}


def gpu_spec(compat: Compat, name: Optional[str]) -> Any:
    getter = getattr(compat, "gpu", None)
    if getter is None or not name:
        return None
    try:
        return getter(name)
    except (KeyError, LookupError, ValueError):
        return None


def expected_links(compat: Compat, g: Gpu) -> Tuple[Optional[int], Optional[str]]:
    """(NVLink links the model has, where that number comes from); (None, None) when unknown or optional.

    PCIe cards take NVLink only through an optional bridge, so only SXM/module parts are expected to
    have their links up.
    """
    spec = gpu_spec(compat, g.name)
    if spec is None:
        return None, None
    if "pcie" in (g.name or "").lower() or "pcie" in spec.name.lower():
        return None, None
    if spec.nvlink_links:
        return int(spec.nvlink_links), f"compat gpus.json {spec.name}: nvlink_links {spec.nvlink_links}"
    if spec.nvlink_gen and spec.nvlink_bandwidth_gbs and spec.nvlink_gen in _LINK_GBS:
        n = int(round(spec.nvlink_bandwidth_gbs / _LINK_GBS[spec.nvlink_gen]))
        return n, (f"compat gpus.json {spec.name}: NVLink gen {spec.nvlink_gen}, "
                   f"{spec.nvlink_bandwidth_gbs:g} GB/s = {n} links")
    return None, None


def sxm_name(g: Gpu) -> bool:
    """The name says the GPU sits on a baseboard (SXM module, HGX board): its links are wired, not bridged."""
    name = (g.name or "").upper()
    return "SXM" in name or "HGX" in name


def pcie_board(compat: Compat, g: Gpu) -> bool:
    """A PCIe card (its NVLink, if any, only through an optional bridge), by the name NVML or compat gives."""
    if sxm_name(g):
        return False
    spec = gpu_spec(compat, g.name)
    names = [(g.name or "").lower()] + ([spec.name.lower()] if spec is not None else [])
    if any("pcie" in n for n in names):
        return True
    return expected_links(compat, g)[0] is None  # a model compat gives no wired links


def fabric_member(d: Any, g: Gpu) -> Optional[str]:
    """What says this GPU belongs to an NVLink fabric (so its links must be up); None when nothing does."""
    if g.fabric_state and g.fabric_state != "not_supported" and not g.fabric_state.startswith("unknown"):
        return f"NVML fabric state {g.fabric_state}"
    if d.nvswitch_count:
        return f"{d.nvswitch_count} NVSwitch(es) visible"
    return None


def nvlink_peer(gpus: List[Gpu], g: Gpu) -> Optional[Gpu]:
    """Another visible GPU whose active NVLink ends at ``g``."""
    from ..domain.pci import bus_key

    me = bus_key(g.pci_bus_id)
    if not me:
        return None
    for o in gpus:
        if o is not g and any(lk.active and bus_key(lk.remote_pci_bus_id) == me for lk in o.nvlinks or []):
            return o
    return None


def rack_scale(g: Gpu) -> bool:
    """A Grace superchip GPU (GB200, GB300, GH200) of a rack-scale NVLink system, whose fabric is managed from
    the NVLink switch trays rather than from this node."""
    import re

    return bool(re.search(r"\bG[BH]\d{3}\b", g.name or ""))
