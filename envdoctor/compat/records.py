"""The typed rows of the compatibility matrix: one frozen record per compat_data table row."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.domain.fastclass import dataclass


@dataclass(frozen=True)
class DriverRequirement:
    cuda: str  # the toolkit version asked about, as matched: "12.4" (GA) or "12.4.1"
    min_driver: Optional[str]  # None: unknown (NVIDIA's value not confirmed), never "no requirement"
    minor_compat_min_driver: Optional[str]  # floor for the whole major under minor-version compatibility
    os: str  # "linux" or "windows"
    source: str
    as_of: str
    confidence: Optional[str] = None
    release: Optional[str] = None  # "GA", "Update 1", "RC"
    toolkit_version: Optional[str] = None  # "12.4.1"
    minor_compat_source: Optional[str] = None


@dataclass(frozen=True)
class TorchRelease:
    minor: str  # "2.5"
    python_min: Optional[str]
    python_max: Optional[str]
    cuda_variants: List[str]
    rocm_variants: List[str]
    default_variant: Optional[str]  # what plain `pip install torch` from PyPI gets on Linux x86_64
    arch_lists: Dict[str, List[str]]  # variant -> torch.cuda.get_arch_list() entries
    cudnn: Dict[str, str]
    source: str
    confidence: Optional[str] = None


@dataclass(frozen=True)
class Companions:
    torch: str
    torchvision: Optional[str]
    torchaudio: Optional[str]
    triton: Optional[str]
    source: str
    triton_spec: Optional[str] = None  # the requirement as written ("==3.1.0", "~=3.8.0")
    confidence: Optional[str] = None


@dataclass(frozen=True)
class ArchSupport:
    cc: str
    first_cuda: Optional[str]  # first toolkit that compiles SASS for it (None: not confirmed)
    last_cuda: Optional[str]  # last toolkit that does; None with still_supported True: the newest still does
    source: str
    still_supported: Optional[bool] = None
    sm: Optional[str] = None  # "sm_90"
    architecture: Optional[str] = None
    confidence: Optional[str] = None


@dataclass(frozen=True)
class GpuSpec:
    name: str
    compute_capability: Optional[str]
    memory_bytes: Optional[int]
    memory_bandwidth_gbs: Optional[float]
    bf16_tflops_dense: Optional[float]
    fp16_tflops_dense: Optional[float]
    tf32_tflops_dense: Optional[float]
    fp32_tflops: Optional[float]
    pcie_gen: Optional[int]
    nvlink_links: Optional[int]
    nvlink_gen: Optional[int]
    nvlink_bandwidth_gbs: Optional[float]  # total per GPU, bidirectional, as NVIDIA quotes it
    datacenter: Optional[bool]
    source: str
    confidence: Optional[str] = None
    tdp_w: Optional[float] = None
    architecture: Optional[str] = None
    aliases: List[str] = field(default_factory=list)
    sm_count: Optional[int] = None  # SMs of the whole board (what a MIG slice's SMs are a fraction of)


@dataclass(frozen=True)
class CudaRelease:
    """A cuda_driver.json row: one toolkit release and the drivers it needs."""

    cuda: str  # "12.4"
    release: Optional[str]  # "GA", "Update 1", "RC"
    toolkit_version: Optional[str]  # "12.4.1"
    linux_min_driver: Optional[str]  # None: not confirmed
    windows_min_driver: Optional[str]
    source: str
    confidence: Optional[str] = None


@dataclass(frozen=True)
class MinorCompatFloor:
    """The driver every CUDA <major>.x application needs under minor-version compatibility."""

    cuda_major: int
    linux_min_driver: Optional[str]
    windows_min_driver: Optional[str]
    source: str


@dataclass(frozen=True)
class MinorCompatLimit:
    """What minor-version compatibility does not cover (PTX JIT, newer APIs)."""

    id: Optional[str]
    rule: Optional[str]
    error: Optional[str]  # the error it shows as ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
    source: Any  # as written (a string or a list of them): `envdoctor matrix --format json` shows it so


@dataclass(frozen=True)
class ForwardCompat:
    """The forward-compatibility (cuda-compat package) rule."""

    package: Optional[str]
    gpus: List[str]
    rule: Optional[str]
    source: Any  # as written, see MinorCompatLimit


@dataclass(frozen=True)
class BranchCuda:
    """The CUDA version a driver branch reports (nvidia-smi's header)."""

    branch: int
    max_cuda: str
    source: str
    observed: Tuple[str, ...] = ()  # driver versions of the branch seen with that header (observed_drivers)


@dataclass(frozen=True)
class PtxasTargets:
    """The SASS targets one toolkit's ptxas accepts."""

    cuda: str
    targets: List[str]
    source: str


@dataclass(frozen=True)
class HostCompiler:
    """The newest host compiler majors one toolkit's nvcc accepts."""

    cuda: str
    max_gcc_major: Optional[int]
    max_clang_major: Optional[int]
    source: str



@dataclass(frozen=True)
class GpuRow:
    """A gpus.json row with the names that mean it (normalised name and aliases) and the family names it shares."""

    spec: GpuSpec
    names: Tuple[str, ...]
    ambiguous_names: Tuple[str, ...]
