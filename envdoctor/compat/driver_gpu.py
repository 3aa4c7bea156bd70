"""Queries over compat_data/driver_gpu_support.json: which NVIDIA driver branches support a GPU architecture.

Each row covers a compute-capability range (inclusive) with the first branch that supports it and the last one
(None: still supported by new branches; for ``first_branch`` None means "not confirmed", never "any").
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..domain.arch import parse_cc
from ..domain.fastclass import dataclass
from . import _parse as P
from ._parse import loaded
from ._parse import source_text as _src

__all__ = [
    "BranchSupport",
    "DriverGpuTable",
    "driver_gpu_table",
    "parse_driver_gpu_support",
]


@dataclass(frozen=True)
class BranchSupport:
    architecture: str
    cc_min: str
    cc_max: str
    first_branch: Optional[int]  # None: not confirmed
    last_branch: Optional[int]  # None: newer branches still support it
    confidence: Optional[str]
    source: str
    notes: str = ""

    def covers(self, cc: str) -> bool:
        try:
            want = parse_cc(cc)
        except ValueError:
            return False
        return parse_cc(self.cc_min) <= want <= parse_cc(self.cc_max)

    def supports(self, branch: int) -> Optional[bool]:
        """False when ``branch`` is outside the known range; True when inside and the first branch is known."""
        if self.last_branch is not None and branch > self.last_branch:
            return False
        if self.first_branch is not None:
            return branch >= self.first_branch
        return None if self.last_branch is None else True


@dataclass(frozen=True)
class DriverGpuTable:
    title: str
    as_of: str
    rows: List[BranchSupport]
    sources: Dict[str, str]  # source id -> url

    def for_cc(self, cc: Optional[str]) -> Optional[BranchSupport]:
        if not cc:
            return None
        for r in self.rows:
            if r.covers(cc):
                return r
        return None

    def url(self, source_id: str) -> Optional[str]:
        return self.sources.get(source_id)


def _branch(r: Dict[str, Any], name: str) -> Optional[int]:
    val = r.get(name)
    if val is not None and (not isinstance(val, int) or isinstance(val, bool) or val <= 0):
        raise ValueError(f"{name} must be a branch number or null, not {val!r}")
    return val


def _support(r: Dict[str, Any]) -> BranchSupport:
    try:
        lo, hi = parse_cc(r["cc_min"]), parse_cc(r["cc_max"])
    except (KeyError, ValueError):
        raise ValueError("cc_min/cc_max must be 'major.minor'") from None
    if lo > hi:
        raise ValueError(f"cc_min {r['cc_min']} > cc_max {r['cc_max']}")
    first, last = _branch(r, "first_branch"), _branch(r, "last_branch")
    if first is not None and last is not None and first > last:
        raise ValueError(f"first_branch R{first} > last_branch R{last}")
    notes = r.get("notes") or ""
    return BranchSupport(P.text(r, "architecture"), str(r["cc_min"]), str(r["cc_max"]), first, last,
                         P.opt_text(r, "confidence"), _src(r["source"]),
                         notes if isinstance(notes, str) else " ".join(notes))


def parse_driver_gpu_support(doc: Dict[str, Any]) -> DriverGpuTable:
    """Build the table; CompatDataError naming the row on a bad range, first > last, or overlapping ranges."""
    rows = P.rows("driver_gpu_support.json", "rows", doc["rows"], _support)
    ordered = sorted(rows, key=lambda b: parse_cc(b.cc_min))
    for a, b in zip(ordered, ordered[1:]):
        if parse_cc(a.cc_max) >= parse_cc(b.cc_min):
            raise P.CompatDataError(f"driver_gpu_support.json: {a.architecture} {a.cc_min}-{a.cc_max} overlaps "
                                    f"{b.architecture} {b.cc_min}-{b.cc_max}")
    return DriverGpuTable(doc["title"], str(doc["as_of"]), ordered, P.source_ids(doc))


def driver_gpu_table(compat: Any) -> DriverGpuTable:
    """The table of a loaded Compat (parsed at load), or a DriverGpuTable itself; LookupError when absent."""
    if isinstance(compat, DriverGpuTable):
        return compat
    return loaded(compat, "driver_gpu_support")


def branches_for(rows: Iterable[BranchSupport]) -> Tuple[Optional[int], Optional[int]]:
    """(highest confirmed first branch, lowest last branch) over these rows: the range all of them share."""
    firsts = [r.first_branch for r in rows if r.first_branch is not None]
    lasts = [r.last_branch for r in rows if r.last_branch is not None]
    return (max(firsts) if firsts else None), (min(lasts) if lasts else None)
