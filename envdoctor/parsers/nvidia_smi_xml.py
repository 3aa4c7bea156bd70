"""Parse `nvidia-smi -q -x` XML (DTD v10..v13, Linux, Windows and vGPU guests) into a ``Driver``."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import partial
from typing import Dict, List, Optional

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


def cuda_version_from_int(value: Optional[int]) -> Optional[str]:
    """NVML/CUDA integer version (12040) -> "12.4"."""
    if value is None or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


# --------------------------------------------------------------------------- XML


def _text(el: Optional[ET.Element], path: str) -> Optional[str]:
    if el is None:
        return None
    found = el.find(path)
    if found is None:
        return None
    return found.text if found.text is not None else ""


def _text_at(gpu_el: ET.Element, path: str) -> Optional[str]:
    """``_text`` under ``<gpu>``; a first step "new|old" reads the first of those sections present (a renamed tag)."""
    head, _, rest = path.partition("/")
    if "|" not in head:
        return _text(gpu_el, path)
    for tag in head.split("|"):
        section = gpu_el.find(tag)
        if section is not None:
            return _text(section, rest)
    return None


def _ecc_counts(counts: Optional[ET.Element]) -> Dict[str, Optional[int]]:
    """Corrected/uncorrected totals from an ``<volatile>``/``<aggregate>`` block, any DTD."""
    out: Dict[str, Optional[int]] = {"corrected": None, "uncorrected": None}
    if counts is None:
        return out
    if counts.find("single_bit") is not None:
        # DTD <= v10 (drivers < ~450): single_bit/double_bit blocks with a <total>
        out["corrected"] = to_int(_text(counts, "single_bit/total"))
        out["uncorrected"] = to_int(_text(counts, "double_bit/total"))
        return out
    return ecc_totals((_ecc_kind(child.tag), child.text) for child in counts)


def _ecc_kind(tag: str) -> Optional[str]:
    if tag.endswith("_correctable") and "uncorrectable" not in tag:
        return "corrected"
    return "uncorrected" if "uncorrectable" in tag else None


def _throttle(gpu_el: ET.Element) -> Optional[List[str]]:
    block = gpu_el.find("clocks_event_reasons")
    if block is None:
        block = gpu_el.find("clocks_throttle_reasons")  # the tag before driver 535
    if block is None or len(block) == 0:
        return None
    active: List[str] = []
    seen = False
    for child in block:
        m = re.match(r"clocks_(?:event|throttle)_reason_(\w+)$", child.tag)
        if not m:
            continue
        state = to_bool(child.text)
        if state is None:
            continue
        seen = True
        if state:
            active.append(m.group(1))
    return active if seen else None


def _processes(gpu_el: ET.Element) -> Optional[List[GpuProcess]]:
    block = gpu_el.find("processes")
    if block is None:
        return None
    procs = []
    for p in block.findall("process_info"):
        procs.append(
            GpuProcess(
                pid=to_int(_text(p, "pid")),
                name=clean(_text(p, "process_name")),
                used_memory_bytes=to_bytes(_text(p, "used_memory")),
                type=clean(_text(p, "type")),
                gpu_instance_id=to_int(_text(p, "gpu_instance_id")),
                compute_instance_id=to_int(_text(p, "compute_instance_id")),
            )
        )
    return procs


def _notes(gpu_el: ET.Element) -> Optional[List[str]]:
    notes = []
    for el in gpu_el.iter():
        if len(el) == 0 and is_error_marker(el.text):
            notes.append(f"{el.tag}: {el.text.strip()}")  # type: ignore[union-attr]
    return notes or None


def _device_id(value: Optional[str]) -> Optional[str]:
    """The XML's PCI device id, "233010DE" or "0x233010DE", as "0x233010DE"; None for anything else."""
    if value and re.fullmatch(r"[0-9A-Fa-f]{8}", value):
        return "0x" + value
    if value and not re.fullmatch(r"0x[0-9A-Fa-f]{8}", value):
        return None  # masked by the publisher ("[REDACTED]")
    return value


def parse_gpu_element(gpu_el: ET.Element, index: int) -> Gpu:
    """One ``<gpu>`` element -> ``Gpu`` (``index`` is its position: nvidia-smi's index order)."""
    fields = gpu_fields("xml", partial(_text_at, gpu_el))  # the plain ones: nvidia_smi_fields.GPU_FIELDS
    fields["pci_bus_id"] = fields["pci_bus_id"] or clean(gpu_el.get("id"))
    fields["pci_device_id"] = _device_id(fields["pci_device_id"])
    ecc = gpu_el.find("ecc_errors")
    mig_devs = gpu_el.find("mig_devices")
    return Gpu(
        index=index,
        **fields,
        **ecc_count_fields(_ecc_counts(ecc.find("volatile") if ecc is not None else None),
                           _ecc_counts(ecc.find("aggregate") if ecc is not None else None)),
        mig_device_count=(len(mig_devs.findall("mig_device")) if fields["mig_mode_current"] and mig_devs is not None
                          else None),
        throttle_reasons=_throttle(gpu_el),
        processes=_processes(gpu_el),
        notes=_notes(gpu_el),
    )


def parse_nvidia_smi_xml(text: str) -> Driver:
    """`nvidia-smi -q -x` output -> ``Driver`` (status failed with a reason if it is not that XML)."""
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as e:
        return Driver(status=ProbeStatus.FAILED, reason=f"nvidia-smi XML does not parse: {e}", source="nvidia-smi-xml")
    if root.tag != "nvidia_smi_log":
        return Driver(
            status=ProbeStatus.FAILED,
            reason=f"not nvidia-smi XML: root element <{root.tag}>",
            source="nvidia-smi-xml",
        )
    gpus = [parse_gpu_element(g, i) for i, g in enumerate(root.findall("gpu"))]
    version = clean(_text(root, "driver_version"))
    return Driver(
        status=ProbeStatus.OK,
        reason=f"nvidia-smi XML: driver {version}, {len(gpus)} GPU(s)",
        source="nvidia-smi-xml",
        version=version,
        cuda_driver_version=clean(_text(root, "cuda_version")),
        gpus=gpus,
    )
