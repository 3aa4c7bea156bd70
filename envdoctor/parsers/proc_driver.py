"""Parse /proc/driver/nvidia/version: the version of the loaded NVIDIA kernel module."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Optional

# "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024"
# "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.124.06  Release Build ..."
# "NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104.05  ..."
_NVRM = re.compile(r"^NVRM version:.*?Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)\b", re.M)
_FALLBACK = re.compile(r"^NVRM version:.*?\s(\d{3}\.\d+(?:\.\d+)?)\s", re.M)


def parse_proc_driver_version(text: str) -> Optional[str]:
    """The kernel module version ("550.54.14"), or ``None`` if the text does not name one."""
    m = _NVRM.search(text) or _FALLBACK.search(text)
    return m.group(1) if m else None


def parse_proc_driver_open(text: str) -> Optional[bool]:
    """Whether the loaded module is NVIDIA's open kernel module ("NVIDIA UNIX Open Kernel Module for x86_64"), the
    proprietary one (an NVRM line without "Open"), or ``None`` when the text has no NVRM line."""
    for line in text.splitlines():
        if line.startswith("NVRM version:") and "Kernel Module" in line:
            return "Open Kernel Module" in line
    return None
