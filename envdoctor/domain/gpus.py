"""GPU names and labels: how a GPU's name is matched to the matrix, and how a finding names a GPU.

One home for every rule about the names NVML, nvidia-smi, collect_env and people give a GPU ("NVIDIA H100 80GB
HBM3", "Tesla V100-SXM2...", "GRID P4-1Q", "NVIDIA A100-SXM4-40GB MIG 1g.5gb", "h100"): the compat lookup
(envdoctor/compat), the targets a user names (envdoctor/model/targets.py, `envdoctor matrix gpu`), the bench checks'
vGPU test, and the label every finding uses ("GPU 0 (NVIDIA A100-SXM4-80GB)").
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

# ---------------------------------------------------------------------------------------------------- matching


def name_key(name: str) -> str:
    """A GPU name for matching: lower case, each run of punctuation and spaces one space
    ("NVIDIA H100-SXM" ~ "nvidia h100 sxm")."""
    return re.sub(r"[^a-z0-9]+", " ", name.lower()).strip()


# The vendor words a matrix name carries and a name may come without: NVML says "NVIDIA A100-SXM4-40GB" and
# "Tesla V100-SXM2-16GB", older nvidia-smi prints "A100-SXM4-40GB", people write "A100" and "V100".
VENDOR_KEY_PREFIXES = ("nvidia ", "tesla ")


def key_variants(key: str) -> List[str]:
    """A name key and the same key without its vendor word: ["nvidia a100", "a100"]."""
    return [key] + [key[len(p):] for p in VENDOR_KEY_PREFIXES if key.startswith(p)]


# What a person leaves out when naming a GPU ("RTX 4090", "K80", "P2000"): tried in this order before the name
# as given ("" first), so that "A100" finds "NVIDIA A100-..." and "RTX 4090" finds "NVIDIA GeForce RTX 4090".
TYPED_NAME_PREFIXES = ("", "GeForce ", "Tesla ", "NVIDIA ", "NVIDIA GeForce ", "Quadro ")


def cut_short(name: str) -> Tuple[str, bool]:
    """(the name without a trailing ellipsis, whether it had one): nvidia-smi's table cuts long names short
    ("Tesla V100-SXM2...", "NVIDIA GeForce RTX 2080 …"), so the name is only the start of the model's."""
    raw = name.strip()
    return raw.rstrip(".\u2026").strip(), raw.endswith("...") or raw.endswith("\u2026")


# A vGPU profile name: "GRID P4-1Q", "GRID P40-24Q", "NVIDIA A10-4Q", "NVIDIA A100-4C", "NVIDIA A100-3-20C",
# "NVIDIA RTX6000-Ada-4Q", "GRID P40-2B4": the board, "-", [MIG slices "-"], the frame buffer in GB, the series
# letter A/B/C/Q or B4 (NVIDIA Virtual GPU Software User Guide, "Virtual GPU Types"; `mdevctl types` lists
# "GRID P40-2B" and "GRID P40-2B4" side by side). A physical board's name ("NVIDIA A100-SXM4-40GB",
# "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition") does not fit.
_VGPU_PROFILE = re.compile(r"^(?:grid|nvidia)\s+(?P<board>\S.*?)-(?:\d+-)?\d+(?:[abcq]|b4)$", re.IGNORECASE)
# A MIG device's name: "NVIDIA A100-SXM4-40GB MIG 1g.5gb" (board, "MIG", slices g . memory gb); the bare
# "MIG 3g.40gb Device 0" names no board and does not fit
_MIG_DEVICE = re.compile(r"^(?P<board>.+?)\s+MIG\s+(?P<profile>(?:\d+c\.)?\d+g\.\d+gb(?:\+\w+)?)$", re.IGNORECASE)


def vgpu_board(name: Optional[str]) -> Optional[str]:
    """The board a vGPU profile runs on ("GRID A100-4C" -> "A100"); None when the name is no vGPU profile."""
    m = _VGPU_PROFILE.match((name or "").strip())
    return m.group("board").strip() if m else None


def is_vgpu_name(name: Optional[str]) -> bool:
    """Does the name say vGPU (a profile name), whatever the virtualization mode reads?"""
    return vgpu_board(name) is not None


def mig_board(name: Optional[str]) -> Optional[str]:
    """The board a MIG device name sits on ("NVIDIA A100-SXM4-40GB MIG 1g.5gb" -> "NVIDIA A100-SXM4-40GB")."""
    m = _MIG_DEVICE.match((name or "").strip())
    return m.group("board").strip() if m else None


def mig_profile(name: Optional[str]) -> Optional[str]:
    """The MIG profile a MIG device name ends with ("NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb"; compute
    instance profiles "1c.3g.40gb" and media extensions "1g.10gb+me" too); None for a whole board's name."""
    m = _MIG_DEVICE.match((name or "").strip())
    return m.group("profile") if m else None


# ---------------------------------------------------------------------------------------------------- labels


def gpu_label(gpu: Any, *details: str) -> str:
    """'GPU 0 (NVIDIA A100-SXM4-80GB)', or 'GPU 0' when the model is unknown; ``details`` go inside the
    parentheses after the name ('GPU 0 (NVIDIA A100-SXM4-80GB, sm_80)', 'GPU 0 (sm_80)'). ``gpu`` is anything with
    ``index`` and ``name``: a facts.Gpu, a torch device."""
    inside = [p for p in (gpu.name, *details) if p]
    return f"GPU {gpu.index} ({', '.join(inside)})" if inside else f"GPU {gpu.index}"
