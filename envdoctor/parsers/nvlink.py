"""Parse `nvidia-smi nvlink --status` (`nvlink -s`) output: links per GPU, inactive ones included."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Dict, List

from envdoctor.model.facts import NvlinkLink

_GPU = re.compile(r"^GPU\s+(\d+):")
_LINK = re.compile(r"^\s*Link\s+(\d+):\s*(.*?)\s*$")
_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*GB/s")
# "NVML: Unable to retrieve NVLink information as all links are inactive": NVLink hardware whose
# links are all down, which is not the same as a GPU without NVLink ("does not have or support").
_ALL_INACTIVE = re.compile(r"all links are inactive", re.I)


def parse_nvlink_status(text: str) -> Dict[int, List[NvlinkLink]]:
    """GPU index -> its links. ``[]`` for a GPU without NVLink; for "all links are inactive"
    (the link count is not printed) a single ``NvlinkLink(link=-1, active=False)`` stands for them."""
    out: Dict[int, List[NvlinkLink]] = {}
    current = None
    for line in text.splitlines():
        m = _GPU.match(line)
        if m:
            current = int(m.group(1))
            out[current] = []
            continue
        if current is None:
            continue
        m = _LINK.match(line)
        if m:
            state = m.group(2)
            speed = _SPEED.search(state)
            if speed:
                out[current].append(NvlinkLink(link=int(m.group(1)), active=True, speed_gbps=float(speed.group(1))))
            elif "inactive" in state.lower():
                out[current].append(NvlinkLink(link=int(m.group(1)), active=False))
            else:
                out[current].append(NvlinkLink(link=int(m.group(1)), active=None))
        elif _ALL_INACTIVE.search(line):
            out[current].append(NvlinkLink(link=-1, active=False))
    return out
