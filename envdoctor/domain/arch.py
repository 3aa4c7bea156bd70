"""Compute capability ('8.0' <-> 'sm_80') and which compiled GPU arch runs where (SASS, PTX JIT, a/f suffixes)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

_ARCH_RE = re.compile(r"^(sm|compute)_?(\d+)([a-z]?)$")
_DOTTED = re.compile(r"^\d{1,2}\.\d$")


def parse_cc(text: object) -> Tuple[int, int]:
    """'8.0' -> (8, 0); '90' / 'sm_90a' / 'compute_120' -> (9, 0) / (9, 0) / (12, 0); '8' -> (8, 0).

    Without a dot the last digit is the minor, as in sm_XY. ValueError when ``text`` is not a capability.
    """
    s = str(text).strip().lower()
    m = _ARCH_RE.match(s.replace("+ptx", ""))
    if m:
        s = m.group(2)
    if "." in s:
        major, _, minor = s.partition(".")
        return int(major), int(minor or 0)
    if not s.isdigit():
        raise ValueError(f"not a compute capability: {text!r}")
    if len(s) == 1:
        return int(s), 0
    return int(s[:-1]), int(s[-1])


def arch_cc(text: str) -> Optional[str]:
    """The compute capability a GPU architecture names: 'sm_90', 'sm90', 'compute_90a', '9.0' -> '9.0'; None for
    anything else (a model name, bare digits)."""
    s = (text or "").strip().lower()
    if _ARCH_RE.match(s) or _DOTTED.match(s):
        return cc_str(s)
    return None


def cc_str(text: object) -> Optional[str]:
    """'sm_86' -> '8.6', 'sm_90a' -> '9.0', '12.0' -> '12.0'; None when unreadable."""
    try:
        major, minor = parse_cc(text)
    except ValueError:
        return None
    return f"{major}.{minor}"


def sm_name(cc: str) -> str:
    """'8.0' -> 'sm_80', '12.0' -> 'sm_120'."""
    major, minor = parse_cc(cc)
    return f"sm_{major}{minor}"


def _summary(arch_list: List[str]) -> str:
    sms = [a for a in arch_list if a.startswith("sm_")]
    if len(sms) > 2:
        return f"{sms[0]}..{sms[-1]}"
    return " ".join(arch_list) or "(empty)"


def arch_runs(arch_list: List[str], cc: str) -> Tuple[bool, str]:
    """Can a build with these targets run on a GPU of compute capability ``cc``? (verdict, the reason).

    SASS ``sm_XY`` runs on the same major with minor >= Y; arch-specific ``sm_XYa`` only on exactly
    X.Y; family ``sm_XYf`` on the same major (family) with minor >= Y; PTX ``compute_XY`` JITs to
    any CC >= X.Y (arch-specific ``compute_XYa`` PTX only on X.Y; family ``compute_XYf`` PTX only within
    the family, as its SASS; see the nvcc guide's "GPU Feature List").
    https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-feature-list and
    https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility
    """
    target = parse_cc(cc)
    entries = [a.strip().lower() for a in arch_list if a and a.strip()]
    summary = _summary(entries)
    tname = f"{target[0]}{target[1]}"
    for a in entries:
        m = _ARCH_RE.match(a.replace("+ptx", ""))
        if not m:
            continue
        kind, digits, suffix = m.groups()
        t = parse_cc(digits)
        if kind == "sm":
            if suffix == "a" and t == target:
                return True, f"{a} SASS matches compute capability {cc} exactly"
            if suffix in ("", "f") and t[0] == target[0] and t[1] <= target[1]:
                return True, f"{a} SASS runs on compute capability {cc} (same major, minor >= {t[1]})"
        else:
            if suffix == "a" and t == target:
                return True, f"{a} PTX matches compute capability {cc} exactly"
            # family PTX (compute_100f) JITs only within its family (10.0 -> 10.3, never 12.0), like
            # family SASS; only plain PTX JITs to every later major
            if suffix == "f" and t[0] == target[0] and t[1] <= target[1]:
                return True, f"{a} PTX can be JIT-compiled for compute capability {cc} (same family)"
            if suffix == "" and t <= target:
                return True, f"{a} PTX can be JIT-compiled for compute capability {cc}"
    return False, f"arch list {summary} has no SASS for sm_{tname} and no PTX <= compute_{tname}"
