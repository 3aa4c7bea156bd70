"""The PCI address key: one normal form for NVML, lspci, sysfs, torch and kernel-log spellings of a GPU's address."""

from __future__ import annotations

from typing import Optional, Tuple

# Normal form: Linux's own, "%04x:%02x:%02x.%d" (drivers/pci/probe.c, pci_setup_device -> dev_set_name), the
# domain as a number printed with at least four hex digits. NVML writes the domain with eight ("00000000:3B:00.0"),
# lspci may omit it ("3b:00.0"), torch and Xid lines omit the function ("0000:3b:00"). Domains above 0xffff exist
# (Intel VMD puts its devices at 10000:xx:xx.x), so the domain is parsed, never cut to its last four digits.


def parse_bdf(bdf: Optional[str]) -> Optional[Tuple[int, int, int, Optional[int]]]:
    """'00000000:3B:00.0' -> (0, 0x3b, 0, 0); '3b:00' -> (0, 0x3b, 0, None); None when unreadable."""
    if not bdf:
        return None
    parts = bdf.strip().lower().split(":")
    if len(parts) == 2:
        parts = ["0"] + parts
    if len(parts) != 3:
        return None
    dom, bus, rest = parts
    dev, _, fn = rest.partition(".")
    try:
        return int(dom or "0", 16), int(bus, 16), int(dev, 16), (int(fn, 16) if fn else None)
    except ValueError:
        return None


def bus_key(bdf: Optional[str]) -> Optional[str]:
    """The GPU key 'domain:bus:device': '00000000:3B:00.0', '0000:3b:00', '3b:00.1' -> '0000:3b:00'.

    The function is dropped: a GPU is one device, its .1 function is the board's audio controller, and torch
    and Xid lines name the GPU without one.
    """
    p = parse_bdf(bdf)
    return f"{p[0]:04x}:{p[1]:02x}:{p[2]:02x}" if p else None


def bdf_key(bdf: Optional[str]) -> Optional[str]:
    """The full address 'domain:bus:device.function' ('00000000:17:00.0' -> '0000:17:00.0'), for PCIe topology
    where the function matters (two root ports of one device, 00:01.0 and 00:01.1, are different bridges);
    without a function it is the bus key."""
    p = parse_bdf(bdf)
    if p is None:
        return None
    key = f"{p[0]:04x}:{p[1]:02x}:{p[2]:02x}"
    return key if p[3] is None else f"{key}.{p[3]:x}"


# PCI vendor 0x10de is NVIDIA (PCI-SIG vendor list). sysfs-built descriptions carry only the ids
# ("3D controller: [10de:2330]"); lspci's carry the name ("3D controller: NVIDIA Corporation GH100 ...")
# and, with -nn, the ids too.
def is_nvidia_gpu_description(description: Optional[str]) -> bool:
    """Does a PCI device description name an NVIDIA GPU (VGA or 3D controller, vendor NVIDIA / 0x10de)?"""
    d = (description or "").lower()
    return ("3d controller" in d or "vga" in d) and ("nvidia" in d or "[10de:" in d)
