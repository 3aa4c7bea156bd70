"""Parse `lsblk` output (`-J` JSON, `-P` key="value" pairs, the default tree) into block devices."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import json
import re
import shlex
from dataclasses import field
from typing import Any, Dict, Iterator, List, Optional

from envdoctor.domain.fastclass import dataclass


@dataclass
class BlockDevice:
    """One lsblk row. ``None`` where the listing had no such column."""

    name: str  # as lsblk printed it: "nvme0n1" or, with -p, "/dev/nvme0n1"
    type: Optional[str] = None  # "disk", "part", "lvm", "raid0", "loop", "rom", "crypt"
    # ROTA as the kernel reports it. Virtio and many cloud disks report 1 whatever the media is:
    # keep the fact; judging it is a check's job.
    rotational: Optional[bool] = None
    transport: Optional[str] = None  # TRAN: "nvme", "sata", "sas", "usb", "" for virtual devices
    model: Optional[str] = None
    vendor: Optional[str] = None
    size: Optional[str] = None  # as printed: "931.5G", or bytes with -b / -J -b
    size_bytes: Optional[int] = None
    fstype: Optional[str] = None
    mountpoints: List[str] = field(default_factory=list)
    parent: Optional[str] = None  # PKNAME (the -P listing links children this way)
    children: List[BlockDevice] = field(default_factory=list)

    @property
    def kname(self) -> str:
        """The bare kernel-ish name: "/dev/nvme0n1" -> "nvme0n1", "/dev/mapper/vg-root" -> "vg-root"."""
        return self.name.rsplit("/", 1)[-1]

    def walk(self) -> Iterator[BlockDevice]:
        yield self
        for c in self.children:
            yield from c.walk()


def flatten(devices: List[BlockDevice]) -> List[BlockDevice]:
    """Every device of a tree, parents before children (a RAID member's array appears once per member)."""
    return [d for top in devices for d in top.walk()]


def _none_if_blank(v: Any) -> Optional[str]:
    if v is None:
        return None
    s = str(v).strip()
    return s or None


def _rota(v: Any) -> Optional[bool]:
    # lsblk >= 2.33 emits JSON booleans; older versions "0"/"1" strings
    if isinstance(v, bool):
        return v
    s = _none_if_blank(v)
    if s in ("1", "true"):
        return True
    if s in ("0", "false"):
        return False
    return None


def _size(v: Any) -> tuple:
    if v is None or v == "":
        return None, None
    if isinstance(v, int):
        return str(v), v
    s = str(v).strip()
    return s, int(s) if s.isdigit() else None


def _from_fields(d: Dict[str, Any]) -> BlockDevice:
    d = {k.lower(): v for k, v in d.items()}
    size, size_bytes = _size(d.get("size"))
    mps: List[str] = []
    if isinstance(d.get("mountpoints"), list):
        mps = [m for m in d["mountpoints"] if m]
    elif _none_if_blank(d.get("mountpoints")):
        mps = [d["mountpoints"]]
    elif _none_if_blank(d.get("mountpoint")):
        mps = [d["mountpoint"]]
    dev = BlockDevice(
        name=str(d.get("name") or d.get("kname") or ""),
        type=_none_if_blank(d.get("type")),
        rotational=_rota(d.get("rota")),
        transport=_none_if_blank(d.get("tran")),
        model=_none_if_blank(d.get("model")),
        vendor=_none_if_blank(d.get("vendor")),
        size=size,
        size_bytes=size_bytes,
        fstype=_none_if_blank(d.get("fstype")),
        mountpoints=mps,
        parent=_none_if_blank(d.get("pkname")),
        children=[_from_fields(c) for c in d.get("children") or [] if isinstance(c, dict)],
    )
    for c in dev.children:
        c.parent = c.parent or dev.name
    return dev


def parse_lsblk_json(text: str) -> List[BlockDevice]:
    """``lsblk -J`` output; raises ValueError when it is not lsblk JSON."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("blockdevices"), list):
        raise ValueError("not lsblk JSON: no 'blockdevices' list")
    return [_from_fields(d) for d in data["blockdevices"] if isinstance(d, dict)]


_PAIR_LINE = re.compile(r'^\s*[A-Z][A-Z0-9:_-]*="')


def parse_lsblk_pairs(text: str) -> List[BlockDevice]:
    """``lsblk -P`` output: a flat list, rebuilt into a tree through PKNAME when the column is there."""
    flat: List[BlockDevice] = []
    for line in text.splitlines():
        if not _PAIR_LINE.match(line):
            continue
        fields: Dict[str, str] = {}
        for tok in shlex.split(line):
            if "=" in tok:
                k, v = tok.split("=", 1)
                fields[k] = v
        flat.append(_from_fields(fields))
    by_name = {d.name: d for d in flat}
    top: List[BlockDevice] = []
    for d in flat:
        parent = by_name.get(d.parent) if d.parent else None
        if parent is not None and parent is not d:
            parent.children.append(d)
        else:
            top.append(d)
    return top


_TREE_CHARS = "│├└─|`- "


def parse_lsblk_text(text: str) -> List[BlockDevice]:
    """The default ``lsblk`` tree (NAME MAJ:MIN RM SIZE RO TYPE MOUNTPOINT[S]).

    Columns are split on whitespace, so only the last column may be empty (true of the default
    columns); extra MOUNTPOINTS continuation lines are added to the device above them.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].lstrip().startswith("NAME"):
        raise ValueError("not an lsblk listing: no NAME header")
    cols = [c.lower() for c in lines[0].split()]
    top: List[BlockDevice] = []
    stack: List[tuple] = []  # (depth, device)
    last: Optional[BlockDevice] = None
    for line in lines[1:]:
        body = line.lstrip(_TREE_CHARS)
        depth = (len(line) - len(body)) // 2
        parts = body.split(None, len(cols) - 1)
        if len(parts) == 1 and last is not None and parts[0].startswith("/") and "mountpoints" in cols:
            last.mountpoints.append(parts[0])
            continue
        fields = dict(zip(cols, parts))
        dev = _from_fields(fields)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            stack[-1][1].children.append(dev)
            dev.parent = stack[-1][1].name
        else:
            top.append(dev)
        stack.append((depth, dev))
        last = dev
    return top


def parse_lsblk(text: str) -> List[BlockDevice]:
    """Any of the three forms, told apart by their first character / line."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return parse_lsblk_json(stripped)
    if _PAIR_LINE.match(stripped.split("\n", 1)[0]):
        return parse_lsblk_pairs(stripped)
    return parse_lsblk_text(text)
