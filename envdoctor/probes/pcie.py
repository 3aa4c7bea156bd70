"""PCIe link probe: current vs maximum link speed/width of NVIDIA GPUs and the bridges above them, from sysfs."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Tuple, Union

from envdoctor.model.facts import PcieLink, ProbeStatus
from envdoctor.parsers.lspci import NVIDIA_VENDOR_ID, nvidia_gpu_links
from envdoctor.probes.sysroot import SysRoot

Root = Union[str, SysRoot]

LSPCI_TIMEOUT_S = 20.0  # -vv reads every device's config space; slow on big machines
_BDF = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_SPEED = re.compile(r"^\s*([0-9.]+)\s*GT/s")
# PCI class codes (sysfs "class" is 0xCCSSPP): 0300 VGA, 0302 3D controller, 0680 "other bridge" (NVSwitch)
_GPU_CLASSES = ("0x0300", "0x0302")
_CLASS_NAMES = {"0300": "VGA compatible controller", "0302": "3D controller", "0604": "PCI bridge",
                "0680": "Bridge"}


def parse_sysfs_speed(text: Optional[str]) -> Optional[float]:
    """"16.0 GT/s PCIe" / "8 GT/s" / "2.5 GT/s PCIe" -> GT/s; "Unknown" (link down) -> None."""
    if not text:
        return None
    m = _SPEED.match(text)
    return float(m.group(1)) if m else None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _link(fs: SysRoot, dev_dir: str, bdf: str, upstream: Optional[str]) -> PcieLink:
    def attr(name: str) -> Optional[str]:
        return fs.read_attr(f"{dev_dir}/{name}")

    vendor = (attr("vendor") or "").lower().replace("0x", "")
    device = (attr("device") or "").lower().replace("0x", "")
    cls = (attr("class") or "").lower().replace("0x", "")[:4]
    cap_speed = parse_sysfs_speed(attr("max_link_speed"))
    sta_speed = parse_sysfs_speed(attr("current_link_speed"))
    cap_width = _int(attr("max_link_width"))
    sta_width = _int(attr("current_link_width"))
    downgraded: Optional[bool] = None
    if None not in (cap_speed, sta_speed, cap_width, sta_width):
        # what lspci would mark "(downgraded)"; GPUs drop their link speed when idle to save power,
        # so a check must weigh this against load (NVIDIA: nvidia-smi -q "PCIe Generation")
        downgraded = sta_speed < cap_speed or sta_width < cap_width  # type: ignore[operator]
    desc = f"{_CLASS_NAMES.get(cls, 'class ' + cls)}: [{vendor}:{device}]" if vendor else None
    return PcieLink(bdf=bdf, description=desc, cap_speed_gts=cap_speed, cap_width=cap_width,
                    sta_speed_gts=sta_speed, sta_width=sta_width, downgraded=downgraded, upstream_bdf=upstream)


_PCI_DEVICES = "/sys/bus/pci/devices"


def _pci_entries(fs: SysRoot) -> Optional[List[str]]:
    """The BDFs under /sys/bus/pci/devices, sorted; None if it cannot be listed."""
    try:
        return sorted(fs.listdir(_PCI_DEVICES))
    except OSError:
        return None


def _from_sysfs(root: Root) -> Optional[Tuple[int, List[PcieLink]]]:
    fs = SysRoot.of(root)
    base = _PCI_DEVICES
    entries = _pci_entries(fs)
    if entries is None:
        return None
    real: Dict[str, str] = {}
    for bdf in entries:
        real[bdf] = fs.realpath(f"{base}/{bdf}")
    gpus = []
    for bdf, path in real.items():
        vendor = (fs.read_attr(f"{path}/vendor") or "").lower()
        cls = (fs.read_attr(f"{path}/class") or "").lower()
        if vendor == f"0x{NVIDIA_VENDOR_ID}" and cls[:6] in _GPU_CLASSES:
            gpus.append(bdf)
    out: List[PcieLink] = []
    seen = set()

    def parent_of(path: str) -> Tuple[Optional[str], Optional[str]]:
        # the parent directory of a device in /sys/devices is its upstream port (or the host bridge)
        parent = os.path.dirname(path)
        name = os.path.basename(parent)
        return (name, parent) if _BDF.match(name) else (None, None)

    for bdf in gpus:
        path = real[bdf]
        up, up_path = parent_of(path)
        out.append(_link(fs, path, bdf, up))
        seen.add(bdf)
        while up and up_path and up not in seen:
            seen.add(up)
            nxt, nxt_path = parent_of(up_path)
            out.append(_link(fs, up_path, up, nxt))
            up, up_path = nxt, nxt_path
    return len(gpus), out


def probe_pcie(runner, root: Root = "/") -> Tuple[str, str, List[PcieLink]]:
    """(status, reason, links): sysfs first; `lspci -vv` only when sysfs cannot be read."""
    found = _from_sysfs(SysRoot.of(root))
    if found is not None:
        gpus, links = found
        if not links:
            return ProbeStatus.ABSENT, "no NVIDIA GPU on the PCI bus (sysfs)", []
        return ProbeStatus.OK, f"{gpus} NVIDIA GPU(s) and {len(links) - gpus} upstream port(s) from sysfs", links
    if not runner.which("lspci"):
        return ProbeStatus.UNSUPPORTED, "no /sys/bus/pci and no lspci", []
    res = runner.run(["lspci", "-vv", "-D"], timeout=LSPCI_TIMEOUT_S)
    if not res.ok:
        return ProbeStatus.FAILED, res.describe(), []
    links = nvidia_gpu_links(res.stdout)
    if not links:
        return ProbeStatus.ABSENT, "no NVIDIA GPU in `lspci -vv`", []
    reason = f"{len(links)} link(s) from `lspci -vv`"
    if all(link.cap_speed_gts is None for link in links):
        # lspci reads the PCIe capability only as root
        reason += "; no LnkCap/LnkSta shown (lspci needs root for them)"
    return ProbeStatus.OK, reason, links


def probe_pcie_links(runner, root: Root = "/") -> List[PcieLink]:
    """Topology.pcie_links: GPUs first, then each bridge up to the root port; [] when none or unreadable."""
    return probe_pcie(runner, root)[2]


def nvidia_pci_devices(root: Root = "/") -> Optional[List[str]]:
    """Every PCI function of vendor 0x10de under /sys/bus/pci/devices as "BDF CLASS"; None if unreadable.

    This tells "no NVIDIA hardware here" ([]) from "NVIDIA hardware, no usable driver" without any driver.
    Containers usually see the host's PCI devices in sysfs even when no GPU was passed in.
    """
    fs = SysRoot.of(root)
    base = _PCI_DEVICES
    entries = _pci_entries(fs)
    if entries is None:
        return None
    out = []
    for bdf in entries:
        vendor = (fs.read_attr(f"{base}/{bdf}/vendor") or "").lower()
        if vendor == f"0x{NVIDIA_VENDOR_ID}":
            cls = (fs.read_attr(f"{base}/{bdf}/class") or "").lower()[:6]
            out.append(f"{bdf} {cls}" if cls else bdf)
    return out
