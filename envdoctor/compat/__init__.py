"""The bundled compatibility matrix (compat_data/*.json): drivers, CUDA, torch, GPUs.

Where things are: ``records`` (the typed rows), ``rows`` (JSON rows into records, so bad data fails at
load), ``validate`` (the generic rule every file follows), ``queries`` (``Compat``: the loaded matrix and
its lookups), ``loader`` (``load_compat``: the bundled matrix or a newer installed update, cached). The
optional tables live in ``bench``, ``driver_gpu``, ``health``, ``signatures`` and ``xid``. The names below
stay importable from ``envdoctor.compat`` for its callers.
"""

# the concepts live in envdoctor.domain; these names stay importable from compat for its callers
from ..domain.arch import arch_runs
from ..domain.variants import cuda_of_variant, index_url, variant_of_cuda
from ._parse import CompatDataError
from .loader import _load_dir, active_choice, active_compat, bundled_dir, clear_cache, load_compat
from .queries import Compat
from .records import (
    ArchSupport,
    BranchCuda,
    Companions,
    CudaRelease,
    DriverRequirement,
    ForwardCompat,
    GpuSpec,
    HostCompiler,
    MinorCompatFloor,
    MinorCompatLimit,
    PtxasTargets,
    TorchRelease,
)
from .validate import validate_file

__all__ = [
    "ArchSupport",
    "BranchCuda",
    "CudaRelease",
    "ForwardCompat",
    "HostCompiler",
    "MinorCompatFloor",
    "MinorCompatLimit",
    "PtxasTargets",
    "Compat",
    "CompatDataError",
    "Companions",
    "DriverRequirement",
    "GpuSpec",
    "TorchRelease",
    "bundled_dir",
    "_load_dir",
    "active_choice",
    "active_compat",
    "arch_runs",
    "clear_cache",
    "cuda_of_variant",
    "index_url",
    "load_compat",
    "validate_file",
    "variant_of_cuda",
]
