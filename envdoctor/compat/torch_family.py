"""Queries over compat_data/torch_family.json: torch's companions (released with torch) and the third-party
packages whose compiled modules are built against torch (extensions), by import name and library file."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ..domain.fastclass import dataclass
from . import _parse as P
from ._parse import loaded
from ._parse import source_text as _src

__all__ = ["COMPANION", "EXTENSION", "FamilyRow", "TorchFamily", "parse_torch_family", "torch_family"]

COMPANION = "companion"
EXTENSION = "extension"
_ROLES = (COMPANION, EXTENSION)


@dataclass(frozen=True)
class FamilyRow:
    distribution: str
    role: str
    modules: List[str]
    libraries: List[str]
    source: str


@dataclass(frozen=True)
class TorchFamily:
    rows: List[FamilyRow]

    def role_of_module(self, name: Optional[str]) -> Optional[FamilyRow]:
        """The row whose import name is ``name`` ("vllm", "torchvision"; a dotted "vllm._C" counts by its
        top-level package; a name a paste cut short, "...audio", by the end it keeps); None when the table
        does not know it."""
        text = (name or "").strip()
        cut = text.startswith("...")
        top = text.lstrip(".").split(".")[0]
        if not top:
            return None
        for r in self.rows:
            if top in r.modules or cut and any(m.endswith(top) for m in r.modules):
                return r
        return None

    def role_of_library(self, lib: Optional[str]) -> Optional[FamilyRow]:
        """The row one of whose compiled files is ``lib`` ("_C.so", "libtorchvision.so",
        "_torchaudio.abi3.so"): its stem before the first dot, matched to a companion's libraries or an import
        name. A bare stem two rows share ("_C": torchvision's and vllm's) is the first row's."""
        stem = re.split(r"\.", (lib or "").strip(), maxsplit=1)[0]
        if not stem:
            return None
        for r in self.rows:
            if stem in r.libraries or stem in r.modules:
                return r
        return None

    def names(self, role: str) -> List[str]:
        return [r.distribution for r in self.rows if r.role == role]


def _row(r: Dict[str, Any]) -> FamilyRow:
    role = P.text(r, "role")
    if role not in _ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(_ROLES)}")
    modules = P.strings(r, "modules")
    if not modules:
        raise ValueError("modules must name at least one import name")
    return FamilyRow(P.text(r, "distribution"), role, modules, P.strings(r, "libraries"), _src(r["source"]))


def parse_torch_family(doc: Dict[str, Any]) -> TorchFamily:
    """Build the table; CompatDataError naming the row on a bad one."""
    return TorchFamily(P.rows("torch_family.json", "rows", doc["rows"], _row))


def torch_family(compat: Any) -> TorchFamily:
    """The table of a loaded Compat (parsed at load); LookupError when compat_data/torch_family.json is absent."""
    return loaded(compat, "torch_family")
