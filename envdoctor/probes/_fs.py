"""Tiny file helpers shared by the sysfs/procfs probes: read a small text file, or None if it cannot be read."""

from __future__ import annotations

from typing import Optional


def read_text(path: str) -> Optional[str]:
    """The stripped content of ``path``, or None when it is missing or unreadable (a fact, not an error)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None
