"""The explicit list of checks, in display order. Add a module here when it lands."""
# ruff: noqa: I001, E402  (imports are in display order, after the registry they fill)

from __future__ import annotations

from typing import List

from .base import Check

ALL_CHECKS: List[Check] = []


def _extend(module) -> None:
    ALL_CHECKS.extend(module.CHECKS)


# one line per check module, in the order the report groups them
from . import driver as _driver  # noqa: E402
from . import torch_build as _torch_build  # noqa: E402
from . import packages as _packages  # noqa: E402
from . import libraries as _libraries  # noqa: E402
from . import toolchain as _toolchain  # noqa: E402
from . import platform as _platform  # noqa: E402

_extend(_driver)
_extend(_torch_build)
_extend(_packages)
_extend(_libraries)
_extend(_toolchain)
_extend(_platform)
