"""The checks, in display order, and the finding codes they declare.

One registration mechanism: discovery. Every module of this package whose name does not start with "_" and
that has a ``CHECKS`` list is imported, and its checks are registered. Discovery rather than a hand-kept list of
modules, because adding a check on existing facts is then its module and its test, with no third file to
remember; a module left out of a list would drop its checks without a word (tests/unit/checks/test_registry.py
shows every check module is registered either way).

Display order = area order, not file-name order: ``AREAS`` is the order of the areas (the console prints one
line per area, the JSON lists the checks in the same order, so a check reads next to its area's others). Within
an area the module named after the area comes first, then the others by name, each with its checks in the
order it defines them. A new area goes into ``AREAS`` where it belongs; until it does its checks come last
(the registry test fails on it).

``finding_codes()`` is the catalogue of every finding code, built from the checks' ``Findings`` declarations
(checks/base.py): what ``explain`` reads, with checks/catalog.py.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from .base import DECLARED, PLACEHOLDER, Check, Findings, kind_matches

AREAS = ("driver", "torch", "smoke", "packages", "libraries", "toolchain", "platform", "gpu", "pcie", "interconnect",
         "storage", "host", "messages", "diagnose", "requirements", "bench", "watch", "fleet")

_NOT_CHECK_MODULES = ("base", "registry", "catalog")


def check_modules() -> List[str]:
    """The names of the modules of this package that hold checks (a ``CHECKS`` list), sorted."""
    package = __name__.rsplit(".", 1)[0]
    out = []
    for info in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in _NOT_CHECK_MODULES:
            continue
        if getattr(importlib.import_module(f"{package}.{info.name}"), "CHECKS", None) is not None:
            out.append(info.name)
    return out


def _ordered() -> List[Check]:
    package = __name__.rsplit(".", 1)[0]
    found: List[Tuple[Tuple[int, str, int, str, int], Check]] = []
    for name in check_modules():
        for n, c in enumerate(importlib.import_module(f"{package}.{name}").CHECKS):
            area = AREAS.index(c.area) if c.area in AREAS else len(AREAS)
            found.append(((area, c.area, name != c.area, name, n), c))
    return [c for _, c in sorted(found, key=lambda x: x[0])]


ALL_CHECKS: List[Check] = _ordered()


# --------------------------------------------------------------------------- the finding codes


@dataclass(frozen=True)
class FindingCode:
    """One code a check declares: "gpu.throttle/thermal", or a template ("packages.extensions/{package}")
    standing for the codes whose kind a check computes from data."""

    code: str
    check: Check  # the registered check that makes it
    builder: Findings

    @property
    def kind(self) -> str:
        return self.code.split("/", 1)[1]

    @property
    def categories(self) -> Tuple[str, ...]:
        """Every category the builder declares, this kind's own first (``Findings.kind_categories``)."""
        own = self.builder.category_of(self.kind)
        return tuple(dict.fromkeys(((own,) if own else ()) + self.builder.all_categories))

    @property
    def template(self) -> bool:
        return "{" in self.kind


def builders() -> List[Findings]:
    """Every ``Findings`` builder the registered checks own (by ``Findings.owner``), in declaration order."""
    ids = {c.id for c in ALL_CHECKS}
    return list(dict.fromkeys(b for b in DECLARED if b.owner in ids))


@lru_cache(maxsize=1)
def finding_codes() -> Dict[str, FindingCode]:
    """code -> FindingCode for every kind every registered check declares (templates included)."""
    by_id = {c.id: c for c in ALL_CHECKS}
    out: Dict[str, FindingCode] = {}
    for b in builders():
        for kind in b.kinds:
            code = f"{b.check_id}/{kind}"
            out.setdefault(code, FindingCode(code, by_id[b.owner], b))
    return out


def finding_code(code: str) -> Optional[FindingCode]:
    """The declaration a finding code comes from: the code itself, else the template it matches."""
    codes = finding_codes()
    if code in codes:
        return codes[code]
    prefix, _, kind = code.partition("/")
    hits = [fc for fc in codes.values() if fc.template and fc.builder.check_id == prefix and kind
            and kind_matches(fc.kind, kind)]
    # the most specific template: "{package}-overwritten" before "{package}"
    return max(hits, key=lambda fc: len(PLACEHOLDER.sub("", fc.kind)), default=None)
