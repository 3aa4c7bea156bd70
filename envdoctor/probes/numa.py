"""NUMA locality probe: each NVIDIA GPU's numa_node and local_cpulist from sysfs, and cpulist helpers."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py

from __future__ import annotations

import os
from typing import Iterable, List, Optional, Tuple

from envdoctor.facts import GpuLocality, ProbeStatus
from envdoctor.parsers.lspci import NVIDIA_VENDOR_ID
from envdoctor.probes._fs import read_text as _read

# PCI class codes (sysfs "class" is 0xCCSSPP): 0300 VGA, 0302 3D controller
_GPU_CLASSES = ("0x0300", "0x0302")


def format_cpulist(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 5} -> "0-2,5" (the kernel's cpulist format, as in local_cpulist)."""
    ranges: List[Tuple[int, int]] = []
    for c in sorted(set(cpus)):
        if ranges and c == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def probe_gpu_locality(root: str = "/") -> Tuple[str, str, Optional[List[GpuLocality]]]:
    """(status, reason, localities) for every NVIDIA GPU under <root>/sys/bus/pci/devices. Never raises."""
    base = os.path.join(root, "sys/bus/pci/devices")
    try:
        entries = sorted(os.listdir(base))
    except OSError as e:
        return ProbeStatus.UNSUPPORTED, f"cannot list {base}: {e.strerror}", None
    out: List[GpuLocality] = []
    try:
        for bdf in entries:
            d = os.path.join(base, bdf)
            vendor = (_read(os.path.join(d, "vendor")) or "").lower()
            cls = (_read(os.path.join(d, "class")) or "").lower()
            if vendor != f"0x{NVIDIA_VENDOR_ID}" or cls[:6] not in _GPU_CLASSES:
                continue
            node_text = _read(os.path.join(d, "numa_node"))
            try:
                node: Optional[int] = int(node_text) if node_text is not None else None
            except ValueError:
                node = None
            out.append(GpuLocality(pci_bus_id=bdf.lower(), numa_node=node,
                                   local_cpulist=_read(os.path.join(d, "local_cpulist")) or None))
    except Exception as e:  # the per-probe guard
        return ProbeStatus.FAILED, f"GPU locality probe crashed: {type(e).__name__}: {e}", None
    if not out:
        return ProbeStatus.ABSENT, "no NVIDIA GPU on the PCI bus (sysfs)", []
    return ProbeStatus.OK, f"{len(out)} NVIDIA GPU(s) with their NUMA node and local CPUs", out
