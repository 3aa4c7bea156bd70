"""nvidia-smi's GPU fields in one place: how its values read, and where each output format has each ``Gpu`` field."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from envdoctor.domain.fastclass import dataclass

# --------------------------------------------------------------------------- values

# nvidia-smi prints these (with or without brackets) where it has no value; they all mean "unknown".
_UNKNOWN = {
    "",
    "n/a",
    "na",
    "not supported",
    "not available",
    "unknown",
    "unknown error",
    "err!",
    "gpu is lost",
    "requested functionality has been deprecated",
    "insufficient permissions",
    "no data",
    "none",
}
# Unknown values worth telling the user about: the GPU or driver failed to answer, as opposed
# to a field this GPU simply does not have.
_ERROR_MARKERS = {"unknown error", "err!", "gpu is lost"}

_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_UNITS = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "kb": 1000, "mb": 1000**2, "gb": 1000**3}

# NVML clock-event reason names (facts.Gpu.throttle_reasons) by the suffix nvidia-smi uses in XML
# tags and by the label it prints in `-q` text ("Idle", "SW Power Cap" ...).
THROTTLE_REASONS = (
    "gpu_idle",
    "applications_clocks_setting",
    "sw_power_cap",
    "hw_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "sync_boost",
    "sw_thermal_slowdown",
    "display_clocks_setting",
)


def clean(value: Optional[str]) -> Optional[str]:
    """Strip a value; ``None`` for every spelling of "no value" ("N/A", "[Not Supported]" ...)."""
    if value is None:
        return None
    v = value.strip()
    bare = v[1:-1].strip() if v.startswith("[") and v.endswith("]") else v
    if bare.lower() in _UNKNOWN:
        return None
    return v


def is_error_marker(value: Optional[str]) -> bool:
    """True for values like "[Unknown Error]" or "ERR!" that mean the read failed."""
    if value is None:
        return False
    v = value.strip().strip("[]").strip().lower()
    return v in _ERROR_MARKERS


def to_float(value: Optional[str]) -> Optional[float]:
    """First number in a value ("67.03 W" -> 67.03); ``None`` when unknown."""
    v = clean(value)
    if v is None:
        return None
    m = _NUM.search(v)
    return float(m.group()) if m else None


def to_int(value: Optional[str]) -> Optional[int]:
    """First integer in a value ("16x" -> 16, "1275 MHz" -> 1275); ``None`` when unknown."""
    f = to_float(value)
    return int(f) if f is not None else None


def to_bytes(value: Optional[str]) -> Optional[int]:
    """"81920 MiB" -> bytes; a bare number is taken as MiB, the unit nvidia-smi always uses."""
    v = clean(value)
    if v is None:
        return None
    m = re.match(r"\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)", v)
    if not m:
        return None
    mult = _UNITS.get(m.group(2).lower(), 1024**2)
    return int(float(m.group(1)) * mult)


def to_bool(value: Optional[str]) -> Optional[bool]:
    """Enabled/Yes/Active/On -> True, Disabled/No/Not Active/Off -> False, else ``None``."""
    v = clean(value)
    if v is None:
        return None
    low = v.lower()
    if low in ("enabled", "yes", "active", "on", "true", "1"):
        return True
    if low in ("disabled", "no", "not active", "off", "false", "0"):
        return False
    return None


def normalize_compute_mode(value: Optional[str]) -> Optional[str]:
    """Map the spellings of nvidia-smi and NVML to "Default", "Exclusive_Process", "Prohibited"."""
    v = clean(value)
    if v is None:
        return None
    key = v.lower().replace(" ", "_").replace(".", "")
    return {
        "default": "Default",
        "exclusive_process": "Exclusive_Process",
        "e_process": "Exclusive_Process",
        "exclusive_thread": "Exclusive_Thread",
        "prohibited": "Prohibited",
    }.get(key, v)


def to_fabric_state(value: Optional[str]) -> Optional[str]:
    """nvidia-smi's Fabric State in NVML's terms: "Not Started" -> "not_started".

    nvidia-smi prints NVML's GPU fabric info: State "Not Supported" / "Not Started" / "In Progress" /
    "Completed", Status "Success" or the NVML error text; "N/A" on GPUs without it.
    """
    v = clean(value)
    return v.lower().replace(" ", "_") if v else None


# nvidia-smi's "GPU Recovery Action" (-q), <gpu_recovery_action> (-x), gpu_recovery_action (--query-gpu): NVML's
# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION in words ("None" in the real captures; the other words as Xid 154 prints
# them, NVIDIA's Xid catalog: "GPU Reset Required", "Node Reboot Required", "Drain P2P", "Drain and Reset")
_RECOVERY_WORDS = {"none": "none", "gpu reset required": "gpu_reset", "gpu reset": "gpu_reset",
                   "node reboot required": "node_reboot", "node reboot": "node_reboot", "drain p2p": "drain_p2p",
                   "drain and reset": "drain_and_reset", "recover imex domain": "recover_imex_domain"}


def to_recovery_action(value: Optional[str]) -> Optional[str]:
    """nvidia-smi's GPU Recovery Action as the fact names it: "None" -> "none", "GPU Reset Required" ->
    "gpu_reset"; words not known here are kept ("unknown: <words>"): the driver asks for something."""
    if value is not None and value.strip().strip("[]").strip().lower() == "none":
        return "none"  # a value here, not clean()'s "no value"
    v = clean(value)
    if v is None:
        return None
    return _RECOVERY_WORDS.get(v.lower().strip(), f"unknown: {v}")


def to_fabric_status(value: Optional[str]) -> Optional[str]:
    """nvidia-smi's Fabric Status as an NVML return name: "Success" -> "SUCCESS" (see ``to_fabric_state``)."""
    v = clean(value)
    return ("SUCCESS" if v.lower() == "success" else v.upper().replace(" ", "_")) if v else None


def to_checksum_valid(value: Optional[str]) -> Optional[bool]:
    """An infoROM checksum validation "valid" -> True, "invalid" -> False, else ``None``."""
    v = clean(value)
    return {"valid": True, "invalid": False}.get(v.lower()) if v else None


def sum_known(values: List[Optional[int]]) -> Optional[int]:
    """Sum of the known values; ``None`` when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def ecc_totals(items: Iterable[Tuple[Optional[str], Optional[str]]]) -> Dict[str, Optional[int]]:
    """{"corrected", "uncorrected"} from (kind, raw count) pairs: each kind's known counts summed (kind None: skipped)."""
    found: Dict[str, List[Optional[int]]] = {"corrected": [], "uncorrected": []}
    for kind, value in items:
        if kind is not None:
            found[kind].append(to_int(value))
    return {kind: sum_known(values) for kind, values in found.items()}


def ecc_count_fields(volatile: Dict[str, Optional[int]], aggregate: Dict[str, Optional[int]]) -> Dict[str, Optional[int]]:
    """The four ``Gpu`` ECC counters from the {"corrected", "uncorrected"} totals of the volatile and aggregate blocks."""
    return {
        "ecc_volatile_corrected": volatile["corrected"],
        "ecc_volatile_uncorrected": volatile["uncorrected"],
        "ecc_aggregate_corrected": aggregate["corrected"],
        "ecc_aggregate_uncorrected": aggregate["uncorrected"],
    }


# --------------------------------------------------------------------------- the field table

# Where a format has a field: one key, or a tuple of keys tried in order (the first that reads as a known
# value wins); None (the default) where envdoctor does not read the field from that format; DERIVED where
# that format's parser works the value out in code (summed, counted, or from a warning line). In a key,
# "a|b" reads the first of those spellings present, known value or not: a name some drivers print another
# way, or (CSV) the columns a query may hold instead of one another.
Key = Union[None, str, Tuple[str, ...]]
DERIVED = "<derived by the parser>"


@dataclass(frozen=True)
class SmiField:
    """One ``facts.Gpu`` field: how its value reads and its key in each nvidia-smi output format."""

    gpu: str  # the facts.Gpu field
    read: Callable[[Optional[str]], Any]  # nvidia-smi's text -> the value; None when unknown
    xml: Key = None  # `nvidia-smi -q -x`: an ElementTree path under <gpu> ("a|b" only in its first step)
    q: Key = None  # `nvidia-smi -q`: a Node.get path, "Section/Key" (case-insensitive, "a|b" in any step)
    csv: Key = None  # `nvidia-smi --query-gpu`: the field name (see nvidia_smi_csv.QUERY_GPU_FIELDS)


_F = SmiField
# <power_readings> / "Power Readings" before driver ~530, <gpu_power_readings> / "GPU Power Readings" since
_XML_POWER = "gpu_power_readings|power_readings/"
_Q_POWER = "GPU Power Readings|Power Readings/"

GPU_FIELDS: Tuple[SmiField, ...] = (
    _F("name", clean, xml="product_name", q="Product Name", csv="name"),
    _F("uuid", clean, xml="uuid", q="GPU UUID", csv="uuid"),
    _F("serial", clean, xml="serial", q="Serial Number", csv="serial"),
    _F("pci_bus_id", clean, xml="pci/pci_bus_id", q="PCI/Bus Id", csv="pci.bus_id"),
    _F("pci_device_id", clean, xml="pci/pci_device_id", q="PCI/Device Id", csv="pci.device_id"),
    _F("architecture", clean, xml="product_architecture", q="Product Architecture"),
    _F("compute_capability", clean, csv="compute_cap"),
    _F("vbios_version", clean, xml="vbios_version", q="VBIOS Version", csv="vbios_version"),
    _F("memory_total_bytes", to_bytes, xml="fb_memory_usage/total", q="FB Memory Usage/Total", csv="memory.total"),
    _F("memory_used_bytes", to_bytes, xml="fb_memory_usage/used", q="FB Memory Usage/Used", csv="memory.used"),
    _F("pcie_gen_current", to_int, xml="pci/pci_gpu_link_info/pcie_gen/current_link_gen",
      q="PCI/GPU Link Info/PCIe Generation/Current", csv="pcie.link.gen.current"),
    _F("pcie_gen_max", to_int, xml="pci/pci_gpu_link_info/pcie_gen/max_link_gen",
      q="PCI/GPU Link Info/PCIe Generation/Max", csv="pcie.link.gen.max"),
    _F("pcie_gen_device_max", to_int, xml="pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",
      q="PCI/GPU Link Info/PCIe Generation/Device Max", csv="pcie.link.gen.gpumax"),
    _F("pcie_width_current", to_int, xml="pci/pci_gpu_link_info/link_widths/current_link_width",
      q="PCI/GPU Link Info/Link Width/Current", csv="pcie.link.width.current"),
    _F("pcie_width_max", to_int, xml="pci/pci_gpu_link_info/link_widths/max_link_width",
      q="PCI/GPU Link Info/Link Width/Max", csv="pcie.link.width.max"),
    _F("pcie_replay_counter", to_int, xml="pci/replay_counter", q="PCI/Replays Since Reset"),
    _F("persistence_mode", to_bool, xml="persistence_mode", q="Persistence Mode", csv="persistence_mode"),
    _F("mig_mode_current", to_bool, xml="mig_mode/current_mig", q="MIG Mode/Current", csv="mig.mode.current"),
    _F("mig_mode_pending", to_bool, xml="mig_mode/pending_mig", q="MIG Mode/Pending", csv="mig.mode.pending"),
    _F("compute_mode", normalize_compute_mode, xml="compute_mode", q="Compute Mode", csv="compute_mode"),
    _F("ecc_mode_current", to_bool, xml="ecc_mode/current_ecc", q="ECC Mode/Current", csv="ecc.mode.current"),
    _F("ecc_mode_pending", to_bool, xml="ecc_mode/pending_ecc", q="ECC Mode/Pending", csv="ecc.mode.pending"),
    # XML and -q print a count per memory (SRAM, DRAM ...) or, before driver ~450, single/double-bit blocks
    _F("ecc_volatile_corrected", to_int, xml=DERIVED, q=DERIVED, csv="ecc.errors.corrected.volatile.total"),
    _F("ecc_volatile_uncorrected", to_int, xml=DERIVED, q=DERIVED, csv="ecc.errors.uncorrected.volatile.total"),
    _F("ecc_aggregate_corrected", to_int, xml=DERIVED, q=DERIVED, csv="ecc.errors.corrected.aggregate.total"),
    _F("ecc_aggregate_uncorrected", to_int, xml=DERIVED, q=DERIVED, csv="ecc.errors.uncorrected.aggregate.total"),
    _F("retired_pages_single_bit", to_int, xml="retired_pages/multiple_single_bit_retirement/retired_count",
      q="Retired Pages/Single Bit ECC", csv="retired_pages.single_bit_ecc.count|retired_pages.sbe"),
    _F("retired_pages_double_bit", to_int, xml="retired_pages/double_bit_retirement/retired_count",
      q="Retired Pages/Double Bit ECC", csv="retired_pages.double_bit.count|retired_pages.dbe"),
    _F("retired_pages_pending", to_bool,
      xml=("retired_pages/pending_retirement", "retired_pages/pending_blacklist"),
      q="Retired Pages/Pending Page Blacklist|Pending Page Retirement", csv="retired_pages.pending"),
    _F("remapped_rows_correctable", to_int, xml="remapped_rows/remapped_row_corr",
      q="Remapped Rows/Correctable Error", csv="remapped_rows.correctable"),
    _F("remapped_rows_uncorrectable", to_int, xml="remapped_rows/remapped_row_unc",
      q="Remapped Rows/Uncorrectable Error", csv="remapped_rows.uncorrectable"),
    _F("remapped_rows_pending", to_bool, xml="remapped_rows/remapped_row_pending", q="Remapped Rows/Pending",
      csv="remapped_rows.pending"),
    _F("remapped_rows_failure", to_bool, xml="remapped_rows/remapped_row_failure",
      q="Remapped Rows/Remapping Failure Occurred", csv="remapped_rows.failure"),
    # -q: False when an "infoROM is corrupted" warning names the GPU (the text has no checksum line)
    _F("inforom_valid", to_checksum_valid, q=DERIVED, csv="inforom.checksum_validation"),
    _F("recovery_action", to_recovery_action, xml="gpu_recovery_action", q="GPU Recovery Action",
      csv="gpu_recovery_action"),
    _F("clocks_sm_mhz", to_int, xml="clocks/sm_clock", q="Clocks/SM", csv="clocks.current.sm|clocks.sm"),
    _F("clocks_mem_mhz", to_int, xml="clocks/mem_clock", q="Clocks/Memory",
      csv="clocks.current.memory|clocks.mem"),
    _F("clocks_sm_max_mhz", to_int, xml="max_clocks/sm_clock", q="Max Clocks/SM",
      csv="clocks.max.sm|clocks.max.graphics"),
    _F("clocks_mem_max_mhz", to_int, xml="max_clocks/mem_clock", q="Max Clocks/Memory",
      csv="clocks.max.memory|clocks.max.mem"),
    _F("clocks_sm_app_mhz", to_int, xml="applications_clocks/graphics_clock", q="Applications Clocks/Graphics",
      csv="clocks.applications.graphics|clocks.applications.gr"),
    _F("clocks_sm_app_default_mhz", to_int, xml="default_applications_clocks/graphics_clock",
      q="Default Applications Clocks/Graphics"),
    _F("fabric_state", to_fabric_state, xml="fabric/state", q="Fabric/State"),
    _F("fabric_status", to_fabric_status, xml="fabric/status", q="Fabric/Status"),
    _F("power_draw_w", to_float,
      xml=(_XML_POWER + "power_draw", _XML_POWER + "instant_power_draw", _XML_POWER + "average_power_draw"),
      q=(_Q_POWER + "Power Draw", _Q_POWER + "Instantaneous Power Draw", _Q_POWER + "Average Power Draw"),
      csv="power.draw|power.draw.instant|power.draw.average"),
    _F("power_limit_w", to_float,
      xml=(_XML_POWER + "current_power_limit", _XML_POWER + "enforced_power_limit", _XML_POWER + "power_limit"),
      q=(_Q_POWER + "Current Power Limit", _Q_POWER + "Enforced Power Limit", _Q_POWER + "Power Limit"),
      csv="enforced.power.limit|power.limit"),
    _F("power_default_limit_w", to_float, xml=_XML_POWER + "default_power_limit", q=_Q_POWER + "Default Power Limit",
      csv="power.default_limit"),
    _F("power_min_limit_w", to_float, xml=_XML_POWER + "min_power_limit", q=_Q_POWER + "Min Power Limit",
      csv="power.min_limit"),
    _F("power_max_limit_w", to_float, xml=_XML_POWER + "max_power_limit", q=_Q_POWER + "Max Power Limit",
      csv="power.max_limit"),
    _F("temperature_c", to_float, xml="temperature/gpu_temp", q="Temperature/GPU Current Temp", csv="temperature.gpu"),
    # Drivers >= ~560 on some parts give only *_tlimit_threshold offsets (relative to T.Limit),
    # not absolute thresholds: those stay None rather than being guessed.
    _F("temperature_slowdown_c", to_float, xml="temperature/gpu_temp_slow_threshold",
      q="Temperature/GPU Slowdown Temp"),
    _F("temperature_shutdown_c", to_float, xml="temperature/gpu_temp_max_threshold",
      q="Temperature/GPU Shutdown Temp"),
    _F("fan_speed_pct", to_float, xml="fan_speed", q="Fan Speed", csv="fan.speed"),
    _F("utilization_gpu_pct", to_float, xml="utilization/gpu_util", q="Utilization/Gpu", csv="utilization.gpu"),
    _F("utilization_memory_pct", to_float, xml="utilization/memory_util", q="Utilization/Memory",
      csv="utilization.memory"),
    _F("performance_state", clean, xml="performance_state", q="Performance State", csv="pstate"),
    # the same names the NVML path gives (probes/nvml.py _VIRT_MODES)
    _F("virtualization_mode", lambda v: virtualization_mode(v), xml="gpu_virtualization_mode/virtualization_mode",
       q="GPU Virtualization Mode/Virtualization Mode"),
    _F("vgpu_license", lambda v: license_state(v), xml="vgpu_software_licensed_product/license_status",
       q="vGPU Software Licensed Product/License Status"),
    _F("driver_model_current", lambda v: driver_model(v), xml="driver_model/current_dm", q="Driver Model/Current",
       csv="driver_model.current"),
    _F("driver_model_pending", lambda v: driver_model(v), xml="driver_model/pending_dm", q="Driver Model/Pending",
       csv="driver_model.pending"),
)

# nvidia-smi's words for nvmlGpuVirtualizationMode_t
_VIRT_WORDS = {"none": "none", "pass-through": "passthrough", "passthrough": "passthrough", "vgpu": "vgpu",
               "host vgpu": "host_vgpu", "host vsga": "host_vsga"}


def virtualization_mode(value: Optional[str]) -> Optional[str]:
    """ "Pass-Through" -> "passthrough", "VGPU" -> "vgpu", "None" -> "none"; None for N/A or unknown words."""
    text = (value or "").strip().lower()  # not clean(): "None" is the mode's name here, not a missing value
    return _VIRT_WORDS.get(text)


def driver_model(value: Optional[str]) -> Optional[str]:
    """ "WDDM", "TCC" (nvidia-smi's word for NVML's WDM) or "MCDM"; None for N/A (every Linux GPU)."""
    text = (clean(value) or "").upper()
    return {"WDDM": "WDDM", "TCC": "TCC", "WDM": "TCC", "MCDM": "MCDM"}.get(text)


def license_state(value: Optional[str]) -> Optional[str]:
    """ "Licensed (Expiry: 2022-9-22 ...)" -> "licensed", "Unlicensed (Restricted)" -> "unlicensed"; None for N/A."""
    text = (clean(value) or "").lower()
    if text.startswith("unlicensed"):
        return "unlicensed"
    if text.startswith("licensed"):
        return "licensed"
    return None


# nvidia-smi's fabric health (`-q -x` <fabric><health>, `-q` Fabric/Health, R550+): the words of NVML's
# healthMask fields and healthSummary (nvml.h NVML_GPU_FABRIC_HEALTH_*), in the names probes/nvml.py gives them
_HEALTH_KEYS = (("bandwidth", "Bandwidth", "degraded_bandwidth"),
                ("route_recovery_in_progress", "Route Recovery in progress", "route_recovery"),
                ("route_unhealthy", "Route Unhealthy", "route_unhealthy"),
                ("access_timeout_recovery", "Access Timeout Recovery", "access_timeout_recovery"))


def fabric_health_fields(fmt: str, text_at: Callable[[str], Optional[str]]) -> Dict[str, Any]:
    """``fabric_health`` and ``fabric_health_summary`` from nvidia-smi's Fabric/Health section ("N/A": None).

    A flag counts when nvidia-smi says True (Bandwidth: "Degraded"); Incorrect Configuration anything but None.
    """
    base = "fabric/health/" if fmt == "xml" else "Fabric/Health/"
    out: List[str] = []
    seen = False
    for xml_key, q_key, name in _HEALTH_KEYS:
        v = clean(text_at(base + (xml_key if fmt == "xml" else q_key)))
        if not v:
            continue
        seen = True
        if v.lower() in ("true", "yes", "degraded"):
            out.append(name)
    config = clean(text_at(base + ("incorrect_configuration" if fmt == "xml" else "Incorrect Configuration")))
    if config:
        seen = True
        if config.lower() not in ("none", "false", "no"):
            out.append("incorrect_configuration:" + re.sub(r"[^a-z0-9]+", "_", config.lower()).strip("_"))
    summary = clean(text_at(base + ("summary" if fmt == "xml" else "Summary")))
    summary = summary.lower().replace(" ", "_") if summary else None
    return {"fabric_health": out if seen else None,
            "fabric_health_summary": summary if summary in ("healthy", "unhealthy", "limited_capacity") else None}


def gpu_fields(fmt: str, text_at: Callable[[str], Optional[str]]) -> Dict[str, Any]:
    """``Gpu`` keyword arguments for every field that format ``fmt`` ("xml", "q" or "csv") has a key for.

    ``text_at(key)`` is the format's raw text at one key (``None`` where it has none); the field's ``read``
    turns it into the value. DERIVED fields are left to the parser.
    """
    out: Dict[str, Any] = {}
    for f in GPU_FIELDS:
        keys = getattr(f, fmt)
        if keys is None or keys == DERIVED:
            continue
        value = None
        for key in (keys,) if isinstance(keys, str) else keys:
            value = f.read(text_at(key))
            if value is not None:
                break
        out[f.gpu] = value
    if fmt in ("xml", "q"):
        out.update(fabric_health_fields(fmt, text_at))
    return out
