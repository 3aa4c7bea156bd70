"""Version parsing and comparison (one wrapper around packaging.version), driver branches."""

from __future__ import annotations

import re
from typing import Optional, Tuple

from packaging.version import InvalidVersion, Version

_LEADING = re.compile(r"\s*(\d+(?:\.\d+)*)")


def parse_version(text: Optional[str], strict: bool = False) -> Optional[Version]:
    """'2.5.1+cu124' -> Version; None when unreadable.

    Lenient (the default) falls back to the leading dotted number, so driver and tool versions written loosely
    ('535.104.05', '12.4 (build 1)', '550.54.14-beta') still compare; ``strict`` accepts only a PEP 440 version
    (compat data rows, installed package versions judged against a specifier).
    """
    if text is None:
        return None
    raw = str(text).strip()
    if not raw:
        return None
    try:
        return Version(raw)
    except InvalidVersion:
        if strict:
            return None
    m = _LEADING.match(raw)
    if not m:
        return None
    try:
        return Version(m.group(1))
    except InvalidVersion:  # pragma: no cover - the pattern admits only valid releases
        return None


def base_version(text: Optional[str], strict: bool = False) -> Optional[str]:
    """The public version, local tag dropped: '2.5.1+cu124' -> '2.5.1'; '2.6.0.dev20241112+cu124' ->
    '2.6.0.dev20241112' (packaging's ``Version.public``, not its ``base_version``, which drops dev too)."""
    v = parse_version(text, strict)
    return v.public if v else None


def release(text: Optional[str], strict: bool = False) -> Tuple[int, ...]:
    """'550.54.14' -> (550, 54, 14); () when unreadable. Driver versions compare numerically this way."""
    v = parse_version(text, strict)
    return v.release if v else ()


def major_minor(text: Optional[str], strict: bool = False) -> Optional[Tuple[int, int]]:
    """'12.4.1' -> (12, 4); '12' -> (12, 0); None when unreadable."""
    v = parse_version(text, strict)
    if v is None:
        return None
    rel = v.release + (0,)
    return rel[0], rel[1]


def mm_str(text: Optional[str], strict: bool = False) -> Optional[str]:
    """'12.4.1' -> '12.4'; None when unreadable."""
    mm = major_minor(text, strict)
    return f"{mm[0]}.{mm[1]}" if mm else None


def version_ge(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """a >= b; None when either is unreadable."""
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return None
    return va >= vb


def driver_branch(version: Optional[str]) -> Optional[int]:
    """The branch (major) of an NVIDIA driver version: '535.104.05' -> 535; None when unreadable."""
    rel = release(version)
    return rel[0] if rel else None


def bare_driver_branch(text: Optional[str]) -> Optional[int]:
    """'580' or 'R580' -> 580: a driver branch given where a driver version ('580.65.06') is wanted; None for
    anything else. A branch is not a version: read as 580.0 it is older than every 580 release, so every
    comparison with a release's minimum driver (580.65.06) would come out wrong."""
    m = re.fullmatch(r"[rR]?(\d{3})", (text or "").strip())
    return int(m.group(1)) if m else None
