"""nvidia-smi's GPU fields in one place: how its values read (shared by the XML, `-q` and CSV parsers)."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

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


def fabric_fields(state: Optional[str], status: Optional[str]) -> Dict[str, Optional[str]]:
    """nvidia-smi's Fabric State/Status ("Completed", "Success") in NVML's terms (fabric_state, fabric_status).

    nvidia-smi prints NVML's GPU fabric info: State "Not Supported" / "Not Started" / "In Progress" /
    "Completed", Status "Success" or the NVML error text; "N/A" on GPUs without it.
    """
    st = clean(state)
    code = clean(status)
    return {
        "fabric_state": st.lower().replace(" ", "_") if st else None,
        "fabric_status": ("SUCCESS" if code.lower() == "success" else code.upper().replace(" ", "_")) if code else None,
    }


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
