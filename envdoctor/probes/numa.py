"""NUMA locality probe: each NVIDIA GPU's numa_node and local_cpulist from sysfs, and cpulist helpers."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple, Union

from envdoctor.model.facts import GpuLocality, ProbeStatus
from envdoctor.parsers.lspci import NVIDIA_VENDOR_ID
from envdoctor.probes.sysroot import SysRoot

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


def probe_gpu_locality(root: Union[str, SysRoot] = "/") -> Tuple[str, str, Optional[List[GpuLocality]]]:
    """(status, reason, localities) for every NVIDIA GPU under /sys/bus/pci/devices."""
    fs = SysRoot.of(root)
    base = "/sys/bus/pci/devices"
    try:
        entries = sorted(fs.listdir(base))
    except OSError as e:
        return ProbeStatus.UNSUPPORTED, f"cannot list {fs.host(base)}: {e.strerror}", None
    out: List[GpuLocality] = []
    for bdf in entries:
        d = f"{base}/{bdf}"
        vendor = (fs.read_attr(f"{d}/vendor") or "").lower()
        cls = (fs.read_attr(f"{d}/class") or "").lower()
        if vendor != f"0x{NVIDIA_VENDOR_ID}" or cls[:6] not in _GPU_CLASSES:
            continue
        node_text = fs.read_attr(f"{d}/numa_node")
        try:
            node: Optional[int] = int(node_text) if node_text is not None else None
        except ValueError:
            node = None
        out.append(GpuLocality(pci_bus_id=bdf.lower(), numa_node=node,
                               local_cpulist=fs.read_attr(f"{d}/local_cpulist") or None))
    if not out:
        return ProbeStatus.ABSENT, "no NVIDIA GPU on the PCI bus (sysfs)", []
    return ProbeStatus.OK, f"{len(out)} NVIDIA GPU(s) with their NUMA node and local CPUs", out
