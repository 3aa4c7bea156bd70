"""Queries over compat_data/health.json: CPU/RAM per GPU class, shm/storage thresholds, driver branch lifecycle."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ..domain.versions import release
from . import _src, optional_table

__all__ = [
    "DriverBranch",
    "DriverDefect",
    "HealthTable",
    "ResourceRow",
    "health_table",
    "parse_health",
]

GIB = 2**30


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


def parse_health(doc: Dict[str, Any]) -> HealthTable:
    """Build the table from the raw JSON; raise ValueError on overlapping GPU-memory ranges."""
    rows = [
        ResourceRow(
            gpu_class=r["gpu_class"],
            description=r.get("description", ""),
            gpu_memory_gib_min=float(r["gpu_memory_gib_min"]),
            gpu_memory_gib_max=None if r.get("gpu_memory_gib_max") is None else float(r["gpu_memory_gib_max"]),
            cpu_cores_per_gpu_min=float(r["cpu_cores_per_gpu_min"]),
            cpu_cores_per_gpu_recommended=float(r["cpu_cores_per_gpu_recommended"]),
            ram_gib_per_gpu_min=float(r["ram_gib_per_gpu_min"]),
            ram_gib_per_gpu_recommended=float(r["ram_gib_per_gpu_recommended"]),
            source=_src(r["source"]),
        )
        for r in doc["rows"]
    ]
    ordered = sorted(rows, key=lambda r: r.gpu_memory_gib_min)
    for a, b in zip(ordered, ordered[1:]):
        if a.gpu_memory_gib_max is None or a.gpu_memory_gib_max > b.gpu_memory_gib_min:
            raise ValueError(f"health.json: rows {a.gpu_class!r} and {b.gpu_class!r} overlap")
    thresholds = {t["name"]: float(t["value"]) for t in doc.get("thresholds", [])}
    threshold_sources = {t["name"]: _src(t["source"]) for t in doc.get("thresholds", [])}
    branches = [
        DriverBranch(int(b["branch"]), b["designation"], b.get("end_of_life"), b.get("eol_before"),
                     _src(b["source"]))
        for b in doc.get("driver_branches", [])
    ]
    defects = [
        DriverDefect(int(d["branch"]), d["fixed_in"], d.get("severity", "info"), d["summary"], _src(d["source"]))
        for d in doc.get("driver_defects", [])
    ]
    return HealthTable(doc["title"], str(doc["as_of"]), rows, thresholds, threshold_sources, branches, defects)


def health_table(compat: Any) -> HealthTable:
    """The health table from a loaded Compat (``compat.table("health")``), or a HealthTable itself.

    Raises LookupError when the compat data has no health table; checks turn that into a skip.
    """
    if isinstance(compat, HealthTable):
        return compat
    return parse_health(optional_table(compat, "health"))
