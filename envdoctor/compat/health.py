"""Queries over compat_data/health.json: CPU/RAM per GPU class, shm/storage thresholds, driver branch lifecycle."""

from __future__ import annotations

import datetime
import re
from dataclasses import field
from typing import Any, Dict, List, Optional

from ..domain.fastclass import dataclass
from ..domain.versions import release
from . import _parse as P
from ._parse import loaded
from ._parse import source_text as _src

__all__ = [
    "DriverBranch",
    "DriverDefect",
    "HealthTable",
    "ResourceRow",
    "health_table",
    "parse_health",
]

GIB = 2**30
# the thresholds checks read with HealthTable.threshold(): a file without one fails at load, not in a check
REQUIRED_THRESHOLDS = ("shm_min_bytes", "storage_free_min_bytes", "cgroup_quota_fraction_warn")


@dataclass(frozen=True)
class ResourceRow:
    gpu_class: str
    description: str
    gpu_memory_gib_min: float
    gpu_memory_gib_max: Optional[float]  # None: no upper bound; ranges are [min, max)
    cpu_cores_per_gpu_min: float  # below: warning
    cpu_cores_per_gpu_recommended: float  # below: info
    ram_gib_per_gpu_min: float
    ram_gib_per_gpu_recommended: float
    source: str

    def covers(self, memory_gib: float) -> bool:
        return memory_gib >= self.gpu_memory_gib_min and (
            self.gpu_memory_gib_max is None or memory_gib < self.gpu_memory_gib_max
        )


@dataclass(frozen=True)
class DriverBranch:
    branch: int
    designation: str  # "LTSB", "PB", "NFB"
    end_of_life: Optional[str]  # "YYYY-MM"
    eol_before: Optional[str]  # "YYYY-MM": known to be past EOL by then, exact date not published
    source: str

    def past_eol(self, on: datetime.date) -> Optional[bool]:
        """True/False when the table says; None when it cannot tell."""
        month = f"{on.year:04d}-{on.month:02d}"
        if self.end_of_life:
            # NVIDIA gives a month; support runs through that month
            return month > self.end_of_life
        if self.eol_before:
            return True if month >= self.eol_before else None
        return None


@dataclass(frozen=True)
class DriverDefect:
    branch: int
    fixed_in: str
    severity: str
    summary: str
    source: str


@dataclass(frozen=True)
class HealthTable:
    title: str
    as_of: str
    rows: List[ResourceRow]
    thresholds: Dict[str, float]
    threshold_sources: Dict[str, str]
    driver_branches: List[DriverBranch]
    driver_defects: List[DriverDefect] = field(default_factory=list)

    def resources_for(self, memory_bytes: Optional[int]) -> ResourceRow:
        """The row for a GPU with this much memory; unknown memory gets the middle ("medium") class."""
        if memory_bytes is not None:
            gib = memory_bytes / GIB
            for r in self.rows:
                if r.covers(gib):
                    return r
        for r in self.rows:
            if r.gpu_class == "medium":
                return r
        return self.rows[0]

    def threshold(self, name: str) -> float:
        return self.thresholds[name]

    def branch(self, number: int) -> Optional[DriverBranch]:
        for b in self.driver_branches:
            if b.branch == number:
                return b
        return None

    def supported_branches(self, on: datetime.date) -> List[DriverBranch]:
        return [b for b in self.driver_branches
                if b.designation in ("LTSB", "PB") and b.past_eol(on) is False]

    def defects(self, version: str) -> List[DriverDefect]:
        """Known defects of this driver version (same branch, older than the fixing release)."""
        parts = release(version)
        if not parts:
            return []
        return [d for d in self.driver_defects
                if d.branch == parts[0] and parts < release(d.fixed_in)]


def _resource_row(r: Dict[str, Any]) -> ResourceRow:
    return ResourceRow(
        gpu_class=P.text(r, "gpu_class"),
        description=P.opt_text(r, "description") or "",
        gpu_memory_gib_min=float(P.number(r, "gpu_memory_gib_min")),
        gpu_memory_gib_max=None if r.get("gpu_memory_gib_max") is None else float(P.number(r, "gpu_memory_gib_max")),
        cpu_cores_per_gpu_min=float(P.number(r, "cpu_cores_per_gpu_min")),
        cpu_cores_per_gpu_recommended=float(P.number(r, "cpu_cores_per_gpu_recommended")),
        ram_gib_per_gpu_min=float(P.number(r, "ram_gib_per_gpu_min")),
        ram_gib_per_gpu_recommended=float(P.number(r, "ram_gib_per_gpu_recommended")),
        source=_src(r["source"]),
    )


def _month(r: Dict[str, Any], key: str) -> Optional[str]:
    val = P.opt_text(r, key)
    if val is not None and not re.fullmatch(r"\d{4}-\d{2}", val):
        raise ValueError(f"{key} = {val!r} is not a YYYY-MM month")
    return val


def _designation(r: Dict[str, Any]) -> str:
    val = P.text(r, "designation")
    if val not in ("LTSB", "PB", "NFB"):
        raise ValueError(f"designation = {val!r} is not LTSB, PB or NFB")
    return val


def parse_health(doc: Dict[str, Any]) -> HealthTable:
    """Build the table from the raw JSON; CompatDataError naming the row on a bad one or overlapping ranges."""
    f = "health.json"
    rows = P.rows(f, "rows", doc["rows"], _resource_row)
    ordered = sorted(rows, key=lambda r: r.gpu_memory_gib_min)
    for a, b in zip(ordered, ordered[1:]):
        if a.gpu_memory_gib_max is None or a.gpu_memory_gib_max > b.gpu_memory_gib_min:
            raise P.CompatDataError(f"health.json: rows {a.gpu_class!r} and {b.gpu_class!r} overlap")
    thresholds = dict(P.rows(f, "thresholds", doc.get("thresholds"),
                             lambda t: (P.text(t, "name"), float(P.number(t, "value")))))
    for name in REQUIRED_THRESHOLDS:
        if name not in thresholds:
            raise P.CompatDataError(f"health.json: thresholds: no row named {name!r} (the checks read it)")
    threshold_sources = {t["name"]: _src(t["source"]) for t in doc.get("thresholds", [])}
    branches = P.rows(f, "driver_branches", doc.get("driver_branches"), lambda b: DriverBranch(
        P.integer(b, "branch"), _designation(b), _month(b, "end_of_life"), _month(b, "eol_before"),
        _src(b["source"])))
    defects = P.rows(f, "driver_defects", doc.get("driver_defects"), lambda d: DriverDefect(
        P.integer(d, "branch"), P.version(d, "fixed_in"), P.opt_text(d, "severity") or "info",
        P.text(d, "summary"), _src(d["source"])))
    return HealthTable(doc["title"], str(doc["as_of"]), rows, thresholds, threshold_sources, branches, defects)


def health_table(compat: Any) -> HealthTable:
    """The health table of a loaded Compat (parsed at load), or a HealthTable itself.

    Raises LookupError when the compat data has no health table; checks turn that into a skip.
    """
    if isinstance(compat, HealthTable):
        return compat
    return loaded(compat, "health")
