"""Parse `nvidia-smi topo -m` (the connection matrix, with or without ANSI colour codes)."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple

# nvidia-smi underlines the header row when stdout is a terminal ("\x1b[4m ... \x1b[0m")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DEVICE = re.compile(r"^(GPU|NIC|NVS|CPU)\d+$")
_LEGEND = re.compile(r"^\s*(\S+)\s+=\s+(.*?)\s*$")


class TopoMatrix(NamedTuple):
    gpus: List[str]  # ["GPU0", "GPU1"]
    matrix: List[List[str]]  # matrix[i][j]: "X", "NV12", "SYS", "NODE", "PHB", "PXB", "PIX"
    legend: Dict[str, str]  # "PHB" -> "Connection traversing PCIe as well as a PCIe Host Bridge ..."


def parse_topo(text: str) -> TopoMatrix:
    """GPU names, the GPU-to-GPU part of the matrix (NIC columns dropped), and the legend."""
    lines = [_ANSI.sub("", raw).rstrip() for raw in text.splitlines()]
    columns: List[str] = []
    rows: Dict[str, List[str]] = {}
    legend: Dict[str, str] = {}
    in_legend = False
    for line in lines:
        if not line.strip():
            continue
        stripped = line.strip()
        if stripped.lower().startswith(("legend:", "nic legend:")):
            in_legend = True
            continue
        if in_legend:
            m = _LEGEND.match(line)
            if m:
                legend[m.group(1)] = m.group(2)
            continue
        tokens = stripped.split()
        if not columns:
            # the header: device columns first, then "CPU Affinity", "NUMA Affinity" ...
            columns = []
            for t in tokens:
                if not _DEVICE.match(t):
                    break
                columns.append(t)
            continue
        if tokens and _DEVICE.match(tokens[0]):
            rows[tokens[0]] = tokens[1 : 1 + len(columns)]
    gpus = [c for c in columns if c.startswith("GPU")]
    idx = [columns.index(g) for g in gpus]
    matrix = [[rows.get(g, [])[j] if j < len(rows.get(g, [])) else "" for j in idx] for g in gpus]
    return TopoMatrix(gpus, matrix, legend)
