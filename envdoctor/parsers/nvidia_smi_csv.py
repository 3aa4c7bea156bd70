"""Parse `nvidia-smi --query-gpu=... --format=csv` output into rows and ``Gpu`` records."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import csv
import io
import re
from typing import Dict, List, Optional, Sequence

from envdoctor.model.facts import Driver, Gpu, ProbeStatus
from envdoctor.parsers.nvidia_smi_fields import THROTTLE_REASONS, clean, gpu_fields, to_bool, to_int

# What the probe asks for: fields every driver since ~450 knows. A field the driver does not know
# fails the whole query ("Field ... is not a valid field to query"), so newer ones stay out.
QUERY_GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "pci.device_id",
    "driver_version",
    "vbios_version",
    "memory.total",
    "memory.used",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "persistence_mode",
    "compute_mode",
    "ecc.mode.current",
    "ecc.mode.pending",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "utilization.gpu",
    "utilization.memory",
    "pstate",
)

_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")


def _field_name(header: str) -> str:
    """"memory.total [MiB]" -> "memory.total"."""
    return _UNIT_SUFFIX.sub("", header.strip())


def parse_query_csv(text: str, fields: Optional[Sequence[str]] = None) -> List[Dict[str, Optional[str]]]:
    """Rows of ``--format=csv`` output as dicts keyed by field name (units dropped from the header).

    With ``fields`` and no header line (``--format=csv,noheader``) the columns are named by
    ``fields``. Cells that mean "no value" ("[N/A]", "[Not Supported]" ...) become ``None``.
    """
    rows = [r for r in csv.reader(io.StringIO(text.strip()), skipinitialspace=True) if r and any(c.strip() for c in r)]
    if not rows:
        return []
    first = [_field_name(c) for c in rows[0]]
    wanted = [f.strip() for f in fields or ()]
    # a header names the fields; a data row under `noheader` does not start with the first field name
    has_header = fields is None or first == wanted or (bool(first) and bool(wanted) and first[0] == wanted[0])
    if has_header:
        names, body = first, rows[1:]
    else:
        names, body = [f.strip() for f in fields or ()], rows
    out: List[Dict[str, Optional[str]]] = []
    for r in body:
        if len(r) != len(names):
            # a stray message line ("No devices were found", an error) is not a row
            continue
        out.append({n: clean(v) for n, v in zip(names, r)})
    return out


def _pick(row: Dict[str, Optional[str]], *names: str) -> Optional[str]:
    for n in names:
        v = row.get(n)
        if v is not None:
            return v
    return None


def _throttle(row: Dict[str, Optional[str]]) -> Optional[List[str]]:
    active: List[str] = []
    seen = False
    for reason in THROTTLE_REASONS:
        state = to_bool(_pick(row, f"clocks_event_reasons.{reason}", f"clocks_throttle_reasons.{reason}"))
        if state is None:
            continue
        seen = True
        if state:
            active.append(reason)
    return active if seen else None


def gpu_from_row(row: Dict[str, Optional[str]], position: int = 0) -> Gpu:
    """One ``--query-gpu`` row -> ``Gpu`` (fields the row lacks stay ``None``)."""
    index = to_int(row.get("index"))
    return Gpu(
        index=index if index is not None else position,
        **gpu_fields("csv", lambda name: _pick(row, *name.split("|"))),  # nvidia_smi_fields.GPU_FIELDS
        throttle_reasons=_throttle(row),
    )


def gpus_from_query_csv(text: str, fields: Optional[Sequence[str]] = None) -> List[Gpu]:
    """``--query-gpu`` CSV -> one ``Gpu`` per row."""
    return [gpu_from_row(r, i) for i, r in enumerate(parse_query_csv(text, fields))]


def driver_from_query_csv(text: str, fields: Optional[Sequence[str]] = None) -> Driver:
    """`nvidia-smi --query-gpu=... --format=csv` -> ``Driver`` (source "nvidia-smi-csv"; no CUDA version: the
    query has no field for it)."""
    rows = parse_query_csv(text, fields)
    if not rows:
        return Driver(status=ProbeStatus.FAILED, reason="nvidia-smi --query-gpu printed no GPU rows",
                      source="nvidia-smi-csv")
    gpus = [gpu_from_row(r, i) for i, r in enumerate(rows)]
    version = next((r.get("driver_version") for r in rows if r.get("driver_version")), None)
    return Driver(status=ProbeStatus.OK, reason=f"nvidia-smi --query-gpu CSV: driver {version}, {len(gpus)} GPU(s)",
                  source="nvidia-smi-csv", version=version, gpus=gpus)
