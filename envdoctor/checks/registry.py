"""The checks, in display order: the listed modules in the order below, then any other check module.

A new module in envdoctor/checks/ (one with a CHECKS list, not starting with "_") registers itself: it is
imported here and its checks follow the last listed check of their area (``host.*`` after the host checks),
or come last for a new area. The list fixes the order reports have always had.
"""
# ruff: noqa: I001, E402  (imports are in display order, after the registry they fill)

from __future__ import annotations

import importlib
import pkgutil
from typing import List

from .base import Check

ALL_CHECKS: List[Check] = []


def _extend(module) -> None:
    ALL_CHECKS.extend(module.CHECKS)


# one line per check module, in the order the report groups them
from . import driver as _driver  # noqa: E402
from . import driver_cuda as _driver_cuda  # noqa: E402
from . import torch_build as _torch_build  # noqa: E402
from . import torch_import as _torch_import  # noqa: E402
from . import packages as _packages  # noqa: E402
from . import libraries as _libraries  # noqa: E402
from . import toolchain as _toolchain  # noqa: E402
from . import platform as _platform  # noqa: E402
from . import gpu_clocks as _gpu_clocks  # noqa: E402
from . import gpu_errors as _gpu_errors  # noqa: E402
from . import gpu_state as _gpu_state  # noqa: E402
from . import pcie as _pcie  # noqa: E402
from . import interconnect as _interconnect  # noqa: E402
from . import interconnect_nccl as _interconnect_nccl  # noqa: E402
from . import storage as _storage  # noqa: E402
from . import host as _host  # noqa: E402
from . import driver_support as _driver_support  # noqa: E402
from . import messages as _messages  # noqa: E402
from . import diagnose_paste as _diagnose_paste  # noqa: E402
from . import diagnose_majors as _diagnose_majors  # noqa: E402
from . import diagnose_platform as _diagnose_platform  # noqa: E402
from . import requirements as _requirements  # noqa: E402
from . import bench as _bench  # noqa: E402

_ORDER = (_driver, _driver_cuda, _torch_build, _torch_import, _packages, _libraries, _toolchain, _platform,
          _gpu_clocks, _gpu_errors, _gpu_state, _pcie, _interconnect, _interconnect_nccl, _storage, _host,
          _driver_support, _messages, _diagnose_paste, _diagnose_majors, _diagnose_platform, _requirements, _bench)
for _module in _ORDER:
    _extend(_module)

_LISTED = {m.__name__ for m in _ORDER}


def _discover() -> None:
    """Add the check modules the list above does not name, each after the last check of its area."""
    package = __name__.rsplit(".", 1)[0]
    for info in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda i: i.name):
        name = f"{package}.{info.name}"
        if info.name.startswith("_") or info.name in ("base", "registry") or name in _LISTED:
            continue
        checks = list(getattr(importlib.import_module(name), "CHECKS", None) or [])
        if not checks:
            continue
        area = checks[0].area
        last = max((i for i, c in enumerate(ALL_CHECKS) if c.area == area), default=len(ALL_CHECKS) - 1)
        ALL_CHECKS[last + 1:last + 1] = checks


_discover()
