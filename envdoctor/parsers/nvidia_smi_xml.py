"""Parse `nvidia-smi -q -x` XML (DTD v10..v13, Linux, Windows and vGPU guests) into a ``Driver``."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, List, Optional

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


def _first(el: Optional[ET.Element], paths: List[str], conv: Callable[[Optional[str]], Any]) -> Any:
    """The first of ``paths`` that holds a known value, converted."""
    for p in paths:
        v = conv(_text(el, p))
        if v is not None:
            return v
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
            )
        )
    return procs


def _notes(gpu_el: ET.Element) -> Optional[List[str]]:
    notes = []
    for el in gpu_el.iter():
        if len(el) == 0 and is_error_marker(el.text):
            notes.append(f"{el.tag}: {el.text.strip()}")  # type: ignore[union-attr]
    return notes or None


def parse_gpu_element(gpu_el: ET.Element, index: int) -> Gpu:
    """One ``<gpu>`` element -> ``Gpu`` (``index`` is its position: nvidia-smi's index order)."""
    pci = gpu_el.find("pci")
    link = pci.find("pci_gpu_link_info") if pci is not None else None
    power = gpu_el.find("gpu_power_readings")
    if power is None:
        power = gpu_el.find("power_readings")  # before driver ~530
    temp = gpu_el.find("temperature")
    ecc = gpu_el.find("ecc_errors")
    vol = _ecc_counts(ecc.find("volatile") if ecc is not None else None)
    agg = _ecc_counts(ecc.find("aggregate") if ecc is not None else None)
    retired = gpu_el.find("retired_pages")
    remap = gpu_el.find("remapped_rows")
    mig_current = to_bool(_text(gpu_el, "mig_mode/current_mig"))
    mig_devs = gpu_el.find("mig_devices")
    device_id = clean(_text(pci, "pci_device_id"))
    if device_id and re.fullmatch(r"[0-9A-Fa-f]{8}", device_id):
        device_id = "0x" + device_id
    elif device_id and not re.fullmatch(r"0x[0-9A-Fa-f]{8}", device_id):
        device_id = None  # masked by the publisher ("[REDACTED]")

    return Gpu(
        index=index,
        name=clean(_text(gpu_el, "product_name")),
        uuid=clean(_text(gpu_el, "uuid")),
        serial=clean(_text(gpu_el, "serial")),
        pci_bus_id=clean(_text(pci, "pci_bus_id")) or clean(gpu_el.get("id")),
        pci_device_id=device_id,
        architecture=clean(_text(gpu_el, "product_architecture")),
        vbios_version=clean(_text(gpu_el, "vbios_version")),
        memory_total_bytes=to_bytes(_text(gpu_el, "fb_memory_usage/total")),
        memory_used_bytes=to_bytes(_text(gpu_el, "fb_memory_usage/used")),
        pcie_gen_current=to_int(_text(link, "pcie_gen/current_link_gen")),
        pcie_gen_max=to_int(_text(link, "pcie_gen/max_link_gen")),
        pcie_gen_device_max=to_int(_text(link, "pcie_gen/max_device_link_gen")),
        pcie_width_current=to_int(_text(link, "link_widths/current_link_width")),
        pcie_width_max=to_int(_text(link, "link_widths/max_link_width")),
        pcie_replay_counter=to_int(_text(pci, "replay_counter")),
        persistence_mode=to_bool(_text(gpu_el, "persistence_mode")),
        mig_mode_current=mig_current,
        mig_mode_pending=to_bool(_text(gpu_el, "mig_mode/pending_mig")),
        mig_device_count=len(mig_devs.findall("mig_device")) if mig_current and mig_devs is not None else None,
        compute_mode=normalize_compute_mode(_text(gpu_el, "compute_mode")),
        ecc_mode_current=to_bool(_text(gpu_el, "ecc_mode/current_ecc")),
        ecc_mode_pending=to_bool(_text(gpu_el, "ecc_mode/pending_ecc")),
        ecc_volatile_corrected=vol["corrected"],
        ecc_volatile_uncorrected=vol["uncorrected"],
        ecc_aggregate_corrected=agg["corrected"],
        ecc_aggregate_uncorrected=agg["uncorrected"],
        retired_pages_single_bit=to_int(_text(retired, "multiple_single_bit_retirement/retired_count")),
        retired_pages_double_bit=to_int(_text(retired, "double_bit_retirement/retired_count")),
        retired_pages_pending=_first(retired, ["pending_retirement", "pending_blacklist"], to_bool),
        remapped_rows_correctable=to_int(_text(remap, "remapped_row_corr")),
        remapped_rows_uncorrectable=to_int(_text(remap, "remapped_row_unc")),
        remapped_rows_pending=to_bool(_text(remap, "remapped_row_pending")),
        remapped_rows_failure=to_bool(_text(remap, "remapped_row_failure")),
        clocks_sm_mhz=to_int(_text(gpu_el, "clocks/sm_clock")),
        clocks_mem_mhz=to_int(_text(gpu_el, "clocks/mem_clock")),
        clocks_sm_max_mhz=to_int(_text(gpu_el, "max_clocks/sm_clock")),
        clocks_mem_max_mhz=to_int(_text(gpu_el, "max_clocks/mem_clock")),
        clocks_sm_app_mhz=to_int(_text(gpu_el, "applications_clocks/graphics_clock")),
        clocks_sm_app_default_mhz=to_int(_text(gpu_el, "default_applications_clocks/graphics_clock")),
        **fabric_fields(_text(gpu_el, "fabric/state"), _text(gpu_el, "fabric/status")),
        throttle_reasons=_throttle(gpu_el),
        power_draw_w=_first(power, ["power_draw", "instant_power_draw", "average_power_draw"], to_float),
        power_limit_w=_first(power, ["current_power_limit", "enforced_power_limit", "power_limit"], to_float),
        power_default_limit_w=to_float(_text(power, "default_power_limit")),
        power_min_limit_w=to_float(_text(power, "min_power_limit")),
        power_max_limit_w=to_float(_text(power, "max_power_limit")),
        temperature_c=to_float(_text(temp, "gpu_temp")),
        # Drivers >= ~560 on some parts give only *_tlimit_threshold offsets (relative to T.Limit),
        # not absolute thresholds: those stay None rather than being guessed.
        temperature_slowdown_c=to_float(_text(temp, "gpu_temp_slow_threshold")),
        temperature_shutdown_c=to_float(_text(temp, "gpu_temp_max_threshold")),
        fan_speed_pct=to_float(_text(gpu_el, "fan_speed")),
        utilization_gpu_pct=to_float(_text(gpu_el, "utilization/gpu_util")),
        utilization_memory_pct=to_float(_text(gpu_el, "utilization/memory_util")),
        performance_state=clean(_text(gpu_el, "performance_state")),
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
