"""Parse `nvidia-smi -q` text (the indented "key : value" report) into a ``Driver``."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Dict, List, Optional

from envdoctor.domain.pci import bdf_key
from envdoctor.model.facts import Driver, Gpu, GpuProcess, ProbeStatus
from envdoctor.parsers.nvidia_smi_fields import (
    clean,
    ecc_count_fields,
    ecc_totals,
    gpu_fields,
    is_error_marker,
    to_bool,
    to_bytes,
    to_int,
)

_LINE = re.compile(r"^(\s*)(\S.*?)\s+:\s?(.*?)\s*$")
_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
# printed by nvidia-smi before or after the report, e.g. on the V100 in Azure/azhpc-diagnostics
_INFOROM_WARNING = re.compile(r"WARNING:\s*infoROM is corrupted at gpu\s+(\S+)", re.I)

# `-q` labels of the clock-event reasons -> NVML names (facts.Gpu.throttle_reasons)
_REASONS = {
    "idle": "gpu_idle",
    "gpu idle": "gpu_idle",
    "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "display clock setting": "display_clocks_setting",
    "display clocks setting": "display_clocks_setting",
}


class Node:
    """One line of the report: a key, its value (``None`` for a section header) and its children."""

    __slots__ = ("key", "value", "children")

    def __init__(self, key: str, value: Optional[str]):
        self.key = key
        self.value = value
        self.children: List[Node] = []

    def child(self, *keys: str) -> Optional[Node]:
        """The first child whose key (case-insensitive) is one of ``keys``."""
        wanted = {k.lower() for k in keys}
        for c in self.children:
            if c.key.lower() in wanted:
                return c
        return None

    def get(self, path: str) -> Optional[str]:
        """Value at ``"Section/Key"``; alternatives for one step separated by ``|``."""
        node: Optional[Node] = self
        for step in path.split("/"):
            if node is None:
                return None
            node = node.child(*step.split("|"))
        return node.value if node is not None else None


def parse_tree(text: str) -> List[Node]:
    """The report as a forest: top-level nodes (header keys and one ``GPU <bus id>`` per GPU)."""
    roots: List[Node] = []
    stack: List[tuple] = []  # (indent, node)
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("=") or _INFOROM_WARNING.search(line):
            continue
        indent = len(line) - len(line.lstrip())
        m = _LINE.match(line)
        if m:
            node = Node(m.group(2).strip(), m.group(3))
        else:
            node = Node(line.strip(), None)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if stack:
            stack[-1][1].children.append(node)
        else:
            roots.append(node)
        stack.append((indent, node))
    return roots


def _ecc(node: Optional[Node]) -> Dict[str, Optional[int]]:
    out: Dict[str, Optional[int]] = {"corrected": None, "uncorrected": None}
    if node is None:
        return out
    if node.child("Single Bit") is not None:
        # drivers before ~450: Single Bit / Double Bit blocks with a Total
        out["corrected"] = to_int(node.get("Single Bit/Total"))
        out["uncorrected"] = to_int(node.get("Double Bit/Total"))
        return out
    return ecc_totals((_ecc_kind(c.key), c.value) for c in node.children)


def _ecc_kind(key: str) -> Optional[str]:
    k = key.lower()
    if "uncorrectable" in k:
        return "uncorrected"
    return "corrected" if "correctable" in k else None


def _throttle(gpu: Node) -> Optional[List[str]]:
    section = gpu.child("Clocks Event Reasons", "Clocks Throttle Reasons")
    if section is None or not section.children:
        return None
    active: List[str] = []
    seen = False

    def walk(nodes: List[Node]) -> None:
        nonlocal seen
        for n in nodes:
            name = _REASONS.get(n.key.lower())
            state = to_bool(n.value)
            if name is not None and state is not None:
                seen = True
                if state:
                    active.append(name)
            walk(n.children)  # HW Thermal / HW Power Brake are indented under HW Slowdown

    walk(section.children)
    return active if seen else None


def _processes(gpu: Node) -> Optional[List[GpuProcess]]:
    section = gpu.child("Processes")
    if section is None:
        return None
    procs: List[GpuProcess] = []
    for c in section.children:
        if c.key.lower() != "process id":
            continue
        procs.append(
            GpuProcess(
                pid=to_int(c.value),
                name=clean(c.get("Name")),
                used_memory_bytes=to_bytes(c.get("Used GPU Memory")),
                type=clean(c.get("Type")),
            )
        )
    return procs


def _notes(gpu: Node) -> Optional[List[str]]:
    notes: List[str] = []

    def walk(n: Node) -> None:
        for c in n.children:
            if is_error_marker(c.value):
                notes.append(f"{c.key}: {c.value}")
            walk(c)

    walk(gpu)
    return notes or None


def _gpu(node: Node, index: int, bus_id: str, inforom_bad: bool) -> Gpu:
    fields = gpu_fields("q", node.get)  # the plain ones: nvidia_smi_fields.GPU_FIELDS
    fields["pci_bus_id"] = fields["pci_bus_id"] or bus_id
    ecc = node.child("ECC Errors")
    return Gpu(
        index=index,
        **fields,
        **ecc_count_fields(_ecc(ecc.child("Volatile") if ecc is not None else None),
                           _ecc(ecc.child("Aggregate") if ecc is not None else None)),
        # the -q text has no checksum line: only the warning tells us the infoROM is bad
        inforom_valid=False if inforom_bad else None,
        throttle_reasons=_throttle(node),
        processes=_processes(node),
        notes=_notes(node),
    )


def parse_nvidia_smi_q(text: str) -> Driver:
    """`nvidia-smi -q` text -> ``Driver`` (failed with a reason when the text is not that report)."""
    bad_inforom = [m.group(1) for m in _INFOROM_WARNING.finditer(text)]
    roots = parse_tree(text)
    version = cuda = None
    gpus: List[Gpu] = []
    for node in roots:
        key = node.key.lower()
        if key == "driver version":
            version = clean(node.value)
        elif key == "cuda version":
            cuda = clean(node.value)
        m = _GPU_HEADER.match(node.key) if node.value is None else None
        if m:
            bus = m.group(1)
            # bus ids compare equal whatever the domain width ("0008:00:00.0" vs "00000008:00:00.0")
            bad = bool(bdf_key(bus)) and any(bdf_key(bus) == bdf_key(b) for b in bad_inforom)
            gpus.append(_gpu(node, len(gpus), bus, bad))
    if version is None and not gpus:
        return Driver(status=ProbeStatus.FAILED, reason="not `nvidia-smi -q` output: no Driver Version, no GPU", source="nvidia-smi-q")
    return Driver(
        status=ProbeStatus.OK,
        reason=f"nvidia-smi -q: driver {version}, {len(gpus)} GPU(s)",
        source="nvidia-smi-q",
        version=version,
        cuda_driver_version=cuda,
        gpus=gpus,
    )
