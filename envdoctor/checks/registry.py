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
from . import gpu_health as _gpu_health  # noqa: E402
from . import pcie as _pcie  # noqa: E402
from . import interconnect as _interconnect  # noqa: E402
from . import storage as _storage  # noqa: E402
from . import resources as _resources  # noqa: E402
from . import driver_support as _driver_support  # noqa: E402

_extend(_driver)
_extend(_torch_build)
_extend(_packages)
_extend(_libraries)
_extend(_toolchain)
_extend(_platform)
_extend(_gpu_health)
_extend(_pcie)
_extend(_interconnect)
_extend(_storage)
_extend(_resources)
_extend(_driver_support)
from . import messages as _messages; _extend(_messages)  # noqa: E402, E702
from . import requirements as _requirements; _extend(_requirements)  # noqa: E402, E702
from . import bench as _bench; _extend(_bench)  # noqa: E402, E702
