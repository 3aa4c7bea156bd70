"""Kernel log text (dmesg, dmesg --ctime, journalctl -k) -> the NVRM Xid events it holds."""

from __future__ import annotations

import re
from typing import List, Optional

from envdoctor.model.facts import XidEvent

# "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s ..." (r470+),
# "NVRM: Xid (0000:01:00): 13, 0005 00000000 ..." (older drivers print no "PCI:");
# the pattern gpud and NVIDIA's own docs grep for (https://docs.nvidia.com/deploy/xid-errors/).
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bdf>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): "
                  r"(?P<code>\d+),?\s*(?P<msg>.*)$")
# what comes before "NVRM:": "[Sun Feb 23 16:24:18 2025] " (dmesg --ctime), "[ 1843.308145] " (dmesg),
# "Feb 14 05:03:41 host kernel: " (journalctl -k)
# (syslog files hold both: "May 6 00:38:27 host kernel: [ 4909.922970] NVRM: ..."; the kernel's own wins)
_DMESG_TS = re.compile(r"\[\s*([^\]]+?)\s*\]\s*$")
_JOURNAL_TS = re.compile(r"^(\w{3}\s+\d{1,2} \d\d:\d\d:\d\d)\s+\S+\s+kernel:")

MAX_EVENTS = 500  # a GPU in trouble can log thousands; keep the newest (counts say "at least")


def _timestamp(prefix: str) -> Optional[str]:
    m = _DMESG_TS.search(prefix) or _JOURNAL_TS.match(prefix)
    return m.group(1) if m else None


def parse_xid_events(text: str, limit: int = MAX_EVENTS) -> List[XidEvent]:
    """Every Xid line in ``text``, oldest first; at most ``limit`` (the newest kept)."""
    out: List[XidEvent] = []
    for line in text.splitlines():
        idx = line.find("NVRM: Xid")
        if idx < 0:
            continue
        m = _XID.match(line[idx:].rstrip())
        if not m:
            continue
        msg = m.group("msg").strip().rstrip(".").strip() or None
        out.append(XidEvent(code=int(m.group("code")), pci_bus_id=m.group("bdf").lower(), message=msg,
                            timestamp=_timestamp(line[:idx])))
    return out[-limit:] if limit and len(out) > limit else out
