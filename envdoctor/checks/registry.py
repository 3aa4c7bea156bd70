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
from . import diagnose_platform as _diagnose_platform  # noqa: E402
from . import requirements as _requirements  # noqa: E402
from . import bench as _bench  # noqa: E402

for _module in (_driver, _driver_cuda, _torch_build, _torch_import, _packages, _libraries, _toolchain, _platform,
                _gpu_clocks, _gpu_errors, _gpu_state, _pcie, _interconnect, _interconnect_nccl, _storage, _host,
                _driver_support, _messages, _diagnose_paste, _diagnose_platform, _requirements, _bench):
    _extend(_module)
