"""Parse `nvcc --version` output (also found in pasted reports)."""

from __future__ import annotations

import re
from typing import Optional, Tuple

# "Cuda compilation tools, release 13.0, V13.0.88"; old toolkits: "release 9.0, V9.0.176"
_RELEASE = re.compile(r"Cuda compilation tools,\s*release\s+(\d+\.\d+),\s*V(\d+(?:\.\d+)+)", re.I)
_RELEASE_SHORT = re.compile(r"Cuda compilation tools,\s*release\s+(\d+\.\d+)", re.I)


def parse_nvcc_version(text: str) -> Optional[Tuple[str, Optional[str]]]:
    """Return ``(release, full_version)`` such as ``("13.0", "13.0.88")``, or None if absent."""
    m = _RELEASE.search(text)
    if m:
        return m.group(1), m.group(2)
    m = _RELEASE_SHORT.search(text)
    if m:
        return m.group(1), None
    return None
