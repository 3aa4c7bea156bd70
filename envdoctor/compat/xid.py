"""Queries over compat_data/xid.json: what an NVIDIA Xid code means, NVIDIA's resolution buckets for it, and its
envdoctor category and severity where envdoctor judges it."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from . import _parse as P
from ._parse import loaded
from ._parse import source_text as _src

__all__ = ["RECOVERY_ACTIONS", "RESOLUTION_BUCKETS", "XidCode", "XidTable", "parse_xid", "xid_table"]

_SEVERITIES = ("error", "warning", "info")
# The immediate-action resolution buckets of NVIDIA's Xid catalog ("Resolution Bucket (Immediate Action)", its
# Fault Resolution Buckets sheet), verbatim: a row's resolution is one of them or null (the catalog gives none)
RESOLUTION_BUCKETS = ("IGNORE", "RESTART_APP", "RESET_GPU", "RESTART_BM", "RESTART_VM", "CONTACT_SUPPORT",
                      "UPDATE_SWFW", "CHECK_MECHANICALS", "CHECK_UVM", "XID_154", "WORKFLOW_XID_45",
                      "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR")
# nvml.h API 13 nvmlDeviceGpuRecoveryAction_t (the value of NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, field 230) and the
# words Xid 154's message uses for the same states ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset
# Required)"; the catalog's Xid 154 row lists None, Drain P2P, Drain and Reset, GPU Reset Required, Node Reboot
# Required)
RECOVERY_ACTIONS = {0: "none", 1: "gpu_reset", 2: "node_reboot", 3: "drain_p2p", 4: "drain_and_reset",
                    5: "recover_imex_domain"}


@dataclass(frozen=True)
class XidCode:
    code: int
    meaning: str
    category: Optional[str]  # None: an application-raised code, or one envdoctor does not judge (info)
    severity: Optional[str]
    application_error: bool
    source: str
    mnemonic: Optional[str] = None  # NVIDIA's ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS")
    resolution: Optional[str] = None  # NVIDIA's immediate-action bucket, verbatim (RESOLUTION_BUCKETS); None: none given
    investigation: Optional[str] = None  # NVIDIA's investigatory-action bucket, verbatim
    xid154: Optional[str] = None  # the catalog's "Xid 154 linkage" (the release from which it also raises Xid 154)
    applies_to: Tuple[str, ...] = ()  # the catalog's "Applies to" columns that say YES (A100, H100, B100, GB200)

    @property
    def judged(self) -> bool:
        """envdoctor gives this hardware code a category and severity of its own."""
        return not self.application_error and self.category is not None


@dataclass(frozen=True)
class XidTable:
    rows: List[XidCode]

    def hardware(self) -> Dict[int, XidCode]:
        """Codes that report the GPU, the driver or the link (not the program), with envdoctor's judgement."""
        return {r.code: r for r in self.rows if r.judged}

    def catalogued(self) -> Dict[int, XidCode]:
        """Every code of NVIDIA's catalog, judged or not."""
        return {r.code: r for r in self.rows}

    def application(self) -> Dict[int, XidCode]:
        """Codes an application's own fault raises (illegal address, ...)."""
        return {r.code: r for r in self.rows if r.application_error}


def _code(r: Dict[str, Any]) -> XidCode:
    from ..model.catalogue import CATEGORIES

    app = bool(P.opt_bool(r, "application_error"))
    category, severity = P.opt_text(r, "category"), P.opt_text(r, "severity")
    if not app and (category is not None or severity is not None):  # a judged code: both, from the vocabularies
        if severity is not None and severity not in _SEVERITIES:
            raise ValueError(f"severity {severity!r} is not one of {', '.join(_SEVERITIES)}")
        if category is not None and category not in CATEGORIES:
            raise ValueError(f"category {category!r} is not in the catalogue")
        category, severity = P.text(r, "category"), P.text(r, "severity")
    resolution = P.opt_text(r, "resolution")
    if resolution is not None and resolution not in RESOLUTION_BUCKETS:
        raise ValueError(f"resolution {resolution!r} is not one of NVIDIA's buckets ({', '.join(RESOLUTION_BUCKETS)})")
    applies = r.get("applies_to") or []
    if not isinstance(applies, list) or not all(a in ("A100", "H100", "B100", "GB200") for a in applies):
        raise ValueError(f"applies_to {applies!r} must list A100, H100, B100, GB200")
    return XidCode(P.integer(r, "code"), P.text(r, "meaning"), category, severity, app, _src(r["source"]),
                   P.opt_text(r, "mnemonic"), resolution, P.opt_text(r, "investigation"), P.opt_text(r, "xid154"),
                   tuple(applies))


def parse_xid(doc: Dict[str, Any]) -> XidTable:
    """Build the table; CompatDataError naming the row on a bad one."""
    table = XidTable(P.rows("xid.json", "rows", doc["rows"], _code))
    codes = [r.code for r in table.rows]
    if len(set(codes)) != len(codes):
        raise P.CompatDataError(f"xid.json: a code appears twice ({sorted(c for c in set(codes) if codes.count(c) > 1)})")
    return table


def xid_table(compat: Any) -> XidTable:
    """The table of a loaded Compat (parsed at load); LookupError when compat_data/xid.json is absent."""
    return loaded(compat, "xid")
