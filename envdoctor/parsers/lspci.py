"""Parse `lspci` listings (`-vv`/`-vvv`, `-nn`, plain): PCIe link state and NVIDIA/InfiniBand device roles."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from envdoctor.domain.fastclass import dataclass
from envdoctor.domain.pci import bdf_key
from envdoctor.model.facts import PcieLink

# A device block starts at column 0 with its address: "19:00.0 ..." or, with -D, "0000:19:00.0 ...".
_HEADER = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>.*)$"
)
# "3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2] (rev a1)"
_CLASS = re.compile(r"^(?P<name>[^:\[]+?)(?:\s*\[(?P<code>[0-9a-fA-F]{4})\])?:\s*(?P<desc>.*)$")
_IDS = re.compile(r"\s*\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]")
_SUFFIX = re.compile(r"\s*\((?:rev [0-9a-fA-F]+|prog-if [^)]*\)?)\)\s*$")
_SPEED = re.compile(r"Speed\s+(?P<speed>[0-9.]+)\s*GT/s", re.I)
_WIDTH = re.compile(r"Width\s+x(?P<width>\d+)", re.I)
_BUS = re.compile(r"Bus:\s*primary=(?P<primary>[0-9a-fA-F]+),\s*secondary=(?P<secondary>[0-9a-fA-F]+)")

NVIDIA_VENDOR_ID = "10de"
MELLANOX_VENDOR_ID = "15b3"


@dataclass
class PciDevice:
    """One device from an lspci listing, with its role and (with -vv, as root) its link."""

    bdf: str  # always with the domain: "0000:19:00.0"
    class_name: str  # "3D controller", "Bridge", "PCI bridge"
    class_code: Optional[str] = None  # "0302" (only with -nn)
    description: str = ""  # "NVIDIA Corporation GA100 [A100 SXM4 80GB]"
    vendor_id: Optional[str] = None  # "10de" (only with -nn)
    device_id: Optional[str] = None
    cap_speed_gts: Optional[float] = None
    cap_width: Optional[int] = None
    sta_speed_gts: Optional[float] = None
    sta_width: Optional[int] = None
    downgraded: Optional[bool] = None
    secondary_bus: Optional[int] = None  # bridges: the bus number behind them
    upstream_bdf: Optional[str] = None
    kernel_driver: Optional[str] = None

    @property
    def is_nvidia(self) -> bool:
        return self.vendor_id == NVIDIA_VENDOR_ID or self.description.startswith("NVIDIA")

    @property
    def is_nvidia_gpu(self) -> bool:
        # class 0300 VGA compatible controller, 0302 3D controller
        if not self.is_nvidia:
            return False
        if self.class_code is not None:
            return self.class_code in ("0300", "0302")
        return self.class_name in ("VGA compatible controller", "3D controller")

    @property
    def is_nvswitch(self) -> bool:
        # NVSwitches enumerate as class 0680 "Bridge" (not "PCI bridge", which GB200's Grace root ports are)
        if not self.is_nvidia:
            return False
        if self.class_code is not None:
            return self.class_code == "0680"
        return self.class_name == "Bridge"

    @property
    def is_infiniband(self) -> bool:
        return self.class_code == "0207" or self.class_name == "Infiniband controller"

    @property
    def is_mellanox(self) -> bool:
        return self.vendor_id == MELLANOX_VENDOR_ID or self.description.startswith("Mellanox")

    @property
    def has_link(self) -> bool:
        return any(v is not None for v in (self.cap_speed_gts, self.cap_width, self.sta_speed_gts, self.sta_width))

    def to_link(self) -> PcieLink:
        return PcieLink(
            bdf=self.bdf,
            description=f"{self.class_name}: {self.description}" if self.description else self.class_name,
            cap_speed_gts=self.cap_speed_gts,
            cap_width=self.cap_width,
            sta_speed_gts=self.sta_speed_gts,
            sta_width=self.sta_width,
            downgraded=self.downgraded,
            upstream_bdf=self.upstream_bdf,
        )


def _split_blocks(text: str) -> List[Tuple[str, str, List[str]]]:
    blocks: List[Tuple[str, str, List[str]]] = []
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            bdf = m.group("bdf")
            blocks.append((bdf_key(bdf) or bdf.strip().lower(), m.group("rest").strip(), []))
        elif blocks and line[:1].isspace():
            blocks[-1][2].append(line.strip())
    return blocks


def _parse_header(bdf: str, rest: str) -> PciDevice:
    m = _CLASS.match(rest)
    if not m:
        return PciDevice(bdf=bdf, class_name=rest)
    desc = m.group("desc")
    # strip "(rev a1)" and "(prog-if 00 [VGA controller])" from the end, repeatedly
    while True:
        stripped = _SUFFIX.sub("", desc)
        if stripped == desc:
            break
        desc = stripped
    vendor = device = None
    ids = _IDS.search(desc)
    if ids:
        vendor, device = ids.group("vendor").lower(), ids.group("device").lower()
        desc = (desc[: ids.start()] + desc[ids.end():]).strip()
    code = m.group("code").lower() if m.group("code") else None
    return PciDevice(
        bdf=bdf, class_name=m.group("name").strip(), class_code=code, description=desc.strip(),
        vendor_id=vendor, device_id=device,
    )


def _speed(text: str) -> Optional[float]:
    m = _SPEED.search(text)
    return float(m.group("speed")) if m else None


def _width(text: str) -> Optional[int]:
    m = _WIDTH.search(text)
    return int(m.group("width")) if m else None


def parse_lspci(text: str) -> List[PciDevice]:
    """Every device in an lspci listing (any verbosity), with upstream bridges linked by bus number."""
    devices: List[PciDevice] = []
    for bdf, rest, lines in _split_blocks(text):
        dev = _parse_header(bdf, rest)
        for line in lines:
            if line.startswith("LnkCap:"):
                dev.cap_speed_gts, dev.cap_width = _speed(line), _width(line)
            elif line.startswith("LnkSta:"):
                dev.sta_speed_gts, dev.sta_width = _speed(line), _width(line)
                # lspci >= 3.6 marks each of speed and width "(ok)" or "(downgraded)"; older
                # versions print nothing, and then we do not claim either way
                if "downgraded" in line:
                    dev.downgraded = True
                elif "(ok)" in line:
                    dev.downgraded = False
            elif line.startswith("Bus:"):
                bm = _BUS.search(line)
                if bm:
                    dev.secondary_bus = int(bm.group("secondary"), 16)
            elif line.startswith("Kernel driver in use:"):
                dev.kernel_driver = line.split(":", 1)[1].strip()
        devices.append(dev)
    # A device on bus B sits behind the bridge whose secondary bus is B (same domain).
    behind: Dict[Tuple[str, int], str] = {}
    for dev in devices:
        if dev.secondary_bus is not None:
            behind[(dev.bdf.split(":")[0], dev.secondary_bus)] = dev.bdf
    for dev in devices:
        dom, bus = dev.bdf.split(":")[:2]
        up = behind.get((dom, int(bus, 16)))
        if up and up != dev.bdf:
            dev.upstream_bdf = up
    return devices


def parse_lspci_vv(text: str) -> List[PcieLink]:
    """The PCIe links in `lspci -vv` output: one per device that shows LnkCap/LnkSta (needs root)."""
    return [d.to_link() for d in parse_lspci(text) if d.has_link]


def nvidia_gpu_links(text: str) -> List[PcieLink]:
    """Links of the NVIDIA GPUs and of every bridge above them, GPUs first."""
    devices = parse_lspci(text)
    by_bdf = {d.bdf: d for d in devices}
    gpus = [d for d in devices if d.is_nvidia_gpu]
    out: List[PcieLink] = [g.to_link() for g in gpus]
    seen = {g.bdf for g in gpus}
    for g in gpus:
        up = g.upstream_bdf
        while up and up not in seen and up in by_bdf:
            seen.add(up)
            out.append(by_bdf[up].to_link())
            up = by_bdf[up].upstream_bdf
    return out
