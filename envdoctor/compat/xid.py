"""Queries over compat_data/xid.json: what an NVIDIA Xid code means, its envdoctor category and severity."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..domain.fastclass import dataclass
from . import _parse as P
from ._parse import loaded
from ._parse import source_text as _src

__all__ = ["XidCode", "XidTable", "parse_xid", "xid_table"]

_SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class XidCode:
    code: int
    meaning: str
    category: Optional[str]  # None for an application-raised code (the program's fault, not the GPU's)
    severity: Optional[str]
    application_error: bool
    source: str


@dataclass(frozen=True)
class XidTable:
    rows: List[XidCode]

    def hardware(self) -> Dict[int, XidCode]:
        """Codes that report the GPU, the driver or the link (not the program)."""
        return {r.code: r for r in self.rows if not r.application_error}

    def application(self) -> Dict[int, XidCode]:
        """Codes an application's own fault raises (illegal address, ...)."""
        return {r.code: r for r in self.rows if r.application_error}


def _code(r: Dict[str, Any]) -> XidCode:
    from ..model.catalogue import CATEGORIES

    app = bool(P.opt_bool(r, "application_error"))
    category, severity = P.opt_text(r, "category"), P.opt_text(r, "severity")
    if not app:
        category, severity = P.text(r, "category"), P.text(r, "severity")
        if category not in CATEGORIES:
            raise ValueError(f"category {category!r} is not in the catalogue")
        if severity not in _SEVERITIES:
            raise ValueError(f"severity {severity!r} is not one of {', '.join(_SEVERITIES)}")
    return XidCode(P.integer(r, "code"), P.text(r, "meaning"), category, severity, app, _src(r["source"]))


def parse_xid(doc: Dict[str, Any]) -> XidTable:
    """Build the table; CompatDataError naming the row on a bad one."""
    return XidTable(P.rows("xid.json", "rows", doc["rows"], _code))


def xid_table(compat: Any) -> XidTable:
    """The table of a loaded Compat (parsed at load); LookupError when compat_data/xid.json is absent."""
    return loaded(compat, "xid")
