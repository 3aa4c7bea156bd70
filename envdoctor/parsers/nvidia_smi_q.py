"""Parse `nvidia-smi -q` text (the indented "key : value" report) into a ``Driver``."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Dict, List, Optional

from envdoctor.domain.pci import bdf_key
from envdoctor.facts import Driver, Gpu, GpuProcess, ProbeStatus
from envdoctor.parsers.nvidia_smi_fields import (
    clean,
    ecc_totals,
    fabric_fields,
    is_error_marker,
    normalize_compute_mode,
    to_bool,
    to_bytes,
    to_float,
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
    power = node.child("GPU Power Readings", "Power Readings")
    ecc = node.child("ECC Errors")
    vol = _ecc(ecc.child("Volatile") if ecc is not None else None)
    agg = _ecc(ecc.child("Aggregate") if ecc is not None else None)
    mig_current = to_bool(node.get("MIG Mode/Current"))
    device_id = clean(node.get("PCI/Device Id"))

    def pw(*keys: str) -> Optional[float]:
        if power is None:
            return None
        for k in keys:
            v = to_float(power.get(k))
            if v is not None:
                return v
        return None

    return Gpu(
        index=index,
        name=clean(node.get("Product Name")),
        uuid=clean(node.get("GPU UUID")),
        serial=clean(node.get("Serial Number")),
        pci_bus_id=clean(node.get("PCI/Bus Id")) or bus_id,
        pci_device_id=device_id,
        architecture=clean(node.get("Product Architecture")),
        vbios_version=clean(node.get("VBIOS Version")),
        memory_total_bytes=to_bytes(node.get("FB Memory Usage/Total")),
        memory_used_bytes=to_bytes(node.get("FB Memory Usage/Used")),
        pcie_gen_current=to_int(node.get("PCI/GPU Link Info/PCIe Generation/Current")),
        pcie_gen_max=to_int(node.get("PCI/GPU Link Info/PCIe Generation/Max")),
        pcie_gen_device_max=to_int(node.get("PCI/GPU Link Info/PCIe Generation/Device Max")),
        pcie_width_current=to_int(node.get("PCI/GPU Link Info/Link Width/Current")),
        pcie_width_max=to_int(node.get("PCI/GPU Link Info/Link Width/Max")),
        pcie_replay_counter=to_int(node.get("PCI/Replays Since Reset|Replays since reset")),
        persistence_mode=to_bool(node.get("Persistence Mode")),
        mig_mode_current=mig_current,
        mig_mode_pending=to_bool(node.get("MIG Mode/Pending")),
        compute_mode=normalize_compute_mode(node.get("Compute Mode")),
        ecc_mode_current=to_bool(node.get("ECC Mode/Current")),
        ecc_mode_pending=to_bool(node.get("ECC Mode/Pending")),
        ecc_volatile_corrected=vol["corrected"],
        ecc_volatile_uncorrected=vol["uncorrected"],
        ecc_aggregate_corrected=agg["corrected"],
        ecc_aggregate_uncorrected=agg["uncorrected"],
        retired_pages_single_bit=to_int(node.get("Retired Pages/Single Bit ECC")),
        retired_pages_double_bit=to_int(node.get("Retired Pages/Double Bit ECC")),
        retired_pages_pending=to_bool(node.get("Retired Pages/Pending Page Blacklist|Pending Page Retirement")),
        remapped_rows_correctable=to_int(node.get("Remapped Rows/Correctable Error")),
        remapped_rows_uncorrectable=to_int(node.get("Remapped Rows/Uncorrectable Error")),
        remapped_rows_pending=to_bool(node.get("Remapped Rows/Pending")),
        remapped_rows_failure=to_bool(node.get("Remapped Rows/Remapping Failure Occurred")),
        # the -q text has no checksum line: only the warning tells us the infoROM is bad
        inforom_valid=False if inforom_bad else None,
        clocks_sm_mhz=to_int(node.get("Clocks/SM")),
        clocks_mem_mhz=to_int(node.get("Clocks/Memory")),
        clocks_sm_max_mhz=to_int(node.get("Max Clocks/SM")),
        clocks_mem_max_mhz=to_int(node.get("Max Clocks/Memory")),
        clocks_sm_app_mhz=to_int(node.get("Applications Clocks/Graphics")),
        clocks_sm_app_default_mhz=to_int(node.get("Default Applications Clocks/Graphics")),
        **fabric_fields(node.get("Fabric/State"), node.get("Fabric/Status")),
        throttle_reasons=_throttle(node),
        power_draw_w=pw("Power Draw", "Instantaneous Power Draw", "Average Power Draw"),
        power_limit_w=pw("Current Power Limit", "Enforced Power Limit", "Power Limit"),
        power_default_limit_w=pw("Default Power Limit"),
        power_min_limit_w=pw("Min Power Limit"),
        power_max_limit_w=pw("Max Power Limit"),
        temperature_c=to_float(node.get("Temperature/GPU Current Temp")),
        temperature_slowdown_c=to_float(node.get("Temperature/GPU Slowdown Temp")),
        temperature_shutdown_c=to_float(node.get("Temperature/GPU Shutdown Temp")),
        fan_speed_pct=to_float(node.get("Fan Speed")),
        utilization_gpu_pct=to_float(node.get("Utilization/Gpu")),
        utilization_memory_pct=to_float(node.get("Utilization/Memory")),
        performance_state=clean(node.get("Performance State")),
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
