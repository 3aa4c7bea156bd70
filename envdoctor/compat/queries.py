"""The loaded matrix and its queries: drivers and CUDA, torch releases and companions, GPUs and architectures."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from packaging.version import Version

from ..domain.arch import parse_cc
from ..domain.gpus import cut_short, key_variants, mig_board, name_key, vgpu_board
from ..domain.versions import base_version, mm_str, parse_version, release
from . import _parse as P
from ._parse import CompatDataError
from .records import (
    ArchSupport,
    Companions,
    CudaRelease,
    DriverRequirement,
    ForwardCompat,
    GpuRow,
    GpuSpec,
    MinorCompatLimit,
    PtxasTargets,
    TorchRelease,
)
from .rows import (
    _arch,
    _branch_cuda,
    _companion,
    _cuda_release,
    _forward,
    _gpu,
    _host_compiler,
    _limit,
    _minor_floor,
    _optional_tables,
    _ptxas,
    _torch_release,
)

if TYPE_CHECKING:  # the optional tables' modules import this one
    from .bench import BenchTable
    from .driver_gpu import DriverGpuTable
    from .env_vars import EnvVarTable
    from .health import HealthTable
    from .signatures import Signature
    from .torch_family import TorchFamily
    from .xid import XidTable


# --------------------------------------------------------------------------- version helpers


def _v(text: Optional[str]) -> Optional[Version]:
    return parse_version(text, strict=True)  # a data row must be a real version


def _release(text: str) -> Tuple[int, ...]:
    """Numeric tuple of a dotted version; ValueError when it is not one."""
    rel = release(text, strict=True)
    if not rel:
        raise ValueError(f"not a version: {text!r}")
    return rel


def _major_minor(text: str) -> Optional[str]:
    return mm_str(text, strict=True)


def _strip_local(version: str) -> str:
    return base_version(version, strict=True) or ""



_CUDA_OS = {"linux": "linux_min_driver", "windows": "windows_min_driver"}
_RELEASE_ORDER = {"RC": 0, "GA": 1}


def _release_rank(release: str) -> int:
    if release in _RELEASE_ORDER:
        return _RELEASE_ORDER[release]
    m = re.match(r"Update (\d+)$", release)
    return 1 + int(m.group(1)) if m else 99


def _unique(rows: Any) -> List[Any]:
    out: Dict[int, Any] = {}
    for r in rows:
        out.setdefault(id(r), r)
    return list(out.values())



class Compat:
    """The loaded matrix, every table parsed into typed rows at load (bad data fails there, not in a check).

    Queries return None for "not in the matrix" and never raise on unknown input. Checks use only these
    queries and the typed tables (``health``, ``driver_gpu_support``, ``bench``, ``xid``, ``signatures``,
    ``env_vars``, each
    None when its file is absent; ``optional()`` says why); ``table()`` is the raw document, for tooling.
    """

    def __init__(self, data_dir: Path, docs: Dict[str, Dict[str, Any]], lazy_signatures: bool = False):
        """Parse every table now (bad data raises CompatDataError here); with ``lazy_signatures``, the message
        signatures wait for their first use: compiling their 68 patterns was 40% of loading the bundled matrix
        (0.03 s of every run), and most `check` runs match no message. Only the bundled matrix is loaded so,
        whose signatures the test suite parses before it ships (tests/unit/compat/test_loader.py); an installed
        update is parsed whole at load, so that bad data still falls back to the bundled matrix."""
        self.data_dir = data_dir
        self._docs = docs
        self.as_of: str = max((str(d["as_of"]) for d in docs.values()), default="")
        # which matrix this is, for report headers and --version: "bundled", or the update in use
        self.label: str = "bundled"
        cuda = docs.get("cuda_driver", {})
        self._cuda_as_of = str(cuda.get("as_of", ""))
        self._cuda_rows = P.rows("cuda_driver.json", "rows", cuda.get("rows"), _cuda_release)
        self._minor_floors = P.rows("cuda_driver.json", "minor_version_compatibility",
                                    cuda.get("minor_version_compatibility"), _minor_floor)
        self._minor_limits = P.rows("cuda_driver.json", "minor_version_compatibility_limits",
                                    cuda.get("minor_version_compatibility_limits"), _limit)
        self._forward = P.rows("cuda_driver.json", "forward_compatibility", cuda.get("forward_compatibility"),
                               _forward)
        self._branches = P.rows("cuda_driver.json", "driver_branches", cuda.get("driver_branches"), _branch_cuda)
        torch = docs.get("torch", {})
        self._torch = P.rows("torch.json", "rows", torch.get("rows"), _torch_release)
        self._companion_list = P.rows("torch.json", "companions", torch.get("companions"), _companion)
        arch = docs.get("arch_support", {})
        self._arch = P.rows("arch_support.json", "rows", arch.get("rows"), _arch)
        self._ptxas = P.rows("arch_support.json", "ptxas_targets", arch.get("ptxas_targets"), _ptxas)
        self._gpu_list = P.rows("gpus.json", "rows", docs.get("gpus", {}).get("rows"), _gpu)
        self._host_compilers = P.rows("host_compilers.json", "rows", docs.get("host_compilers", {}).get("rows"),
                                      _host_compiler)
        self._lazy_signatures = lazy_signatures and "error_signatures" in docs
        self._signatures_lock = threading.Lock()
        optional = _optional_tables(docs, skip=("error_signatures",) if self._lazy_signatures else ())
        self.health: Optional[HealthTable] = optional.get("health")
        self.driver_gpu_support: Optional[DriverGpuTable] = optional.get("driver_gpu_support")
        self.bench: Optional[BenchTable] = optional.get("bench")
        self.xid: Optional[XidTable] = optional.get("xid")
        self.env_vars: Optional[EnvVarTable] = optional.get("env_vars")
        self.torch_family: Optional[TorchFamily] = optional.get("torch_family")
        self.status_codes: Optional[Any] = optional.get("status_codes")  # compat/status_codes.py StatusTable
        self._signatures: Optional[List[Signature]] = optional.get("error_signatures")
        self._gpu_index = [(n, r) for r in self._gpu_list for n in r.names]
        self._gpu_family = self._family_index()

    @property
    def signatures(self) -> Optional[List[Signature]]:
        """The message signatures (None when the matrix has none), parsed at their first use when lazy."""
        if self._lazy_signatures:
            with self._signatures_lock:
                if self._lazy_signatures:
                    self._signatures = _optional_tables(
                        {"error_signatures": self._docs["error_signatures"]}).get("error_signatures")
                    self._lazy_signatures = False
        return self._signatures

    # -- raw access (tooling and tests; checks use the typed tables and queries)
    def _doc(self, stem: str) -> Dict[str, Any]:
        try:
            return self._docs[stem]
        except KeyError:
            raise CompatDataError(f"{stem}.json: not found in {self.data_dir}") from None

    def table(self, filename_stem: str) -> dict:
        """The whole compat_data/<stem>.json as loaded (raw JSON, for tooling; checks use typed tables)."""
        return self._doc(filename_stem)

    def stems(self) -> List[str]:
        return sorted(self._docs)

    _OPTIONAL = {"health": "health", "driver_gpu_support": "driver_gpu_support", "bench": "bench", "xid": "xid",
                 "error_signatures": "signatures", "env_vars": "env_vars", "torch_family": "torch_family",
                 "status_codes": "status_codes"}

    def optional(self, stem: str) -> Any:
        """The typed table of an optional file; LookupError (which checks turn into a skip) when it is absent."""
        value = getattr(self, self._OPTIONAL[stem])
        if value is None:
            raise LookupError(f"compat_data/{stem}.json unavailable: {stem}.json: not found in {self.data_dir}")
        return value

    # -- CUDA and drivers
    def _cuda_row(self, cuda_version: str) -> Optional[CudaRelease]:
        v = _v(cuda_version)
        if v is None:
            return None
        rows = self._cuda_rows
        if len(v.release) >= 3:
            for r in rows:
                if r.toolkit_version and _v(r.toolkit_version) == v:
                    return r
        mm = _major_minor(cuda_version)
        same = [r for r in rows if r.cuda == mm]
        if not same:
            return None
        # "12.4" means the GA release (the lowest driver of the minor); a component version such as
        # nvcc's 12.4.131 also falls back here: that is conservative (the smallest minimum of 12.4).
        ga = [r for r in same if r.release == "GA"]
        pick = ga or sorted(same, key=lambda r: _release_rank(r.release or ""))
        return pick[0]

    def cuda_requirement(self, cuda_version: str, os: str = "linux") -> Optional[DriverRequirement]:
        """Minimum driver for a CUDA toolkit/runtime version; None when the version is not in the matrix."""
        osk = os.strip().lower()
        if osk not in _CUDA_OS:
            return None
        row = self._cuda_row(cuda_version)
        if row is None:
            return None
        major = int(row.cuda.split(".")[0])
        floor = self.minor_compat_floor(major, osk)
        return DriverRequirement(
            cuda=row.toolkit_version if len(_release(cuda_version)) >= 3 and row.toolkit_version else row.cuda,
            min_driver=getattr(row, _CUDA_OS[osk]),
            minor_compat_min_driver=floor[0] if floor else None,
            os=osk,
            source=row.source,
            as_of=self._cuda_as_of,
            confidence=row.confidence,
            release=row.release,
            toolkit_version=row.toolkit_version,
            minor_compat_source=floor[1] if floor else None,
        )

    def cuda_releases(self) -> List[CudaRelease]:
        return list(self._cuda_rows)

    def minor_compat_floor(self, cuda_major: int, os: str = "linux") -> Optional[Tuple[str, str]]:
        """(driver, source) that every CUDA ``cuda_major``.x app needs under minor-version compatibility."""
        osk = os.strip().lower()
        if osk not in _CUDA_OS:
            return None
        for r in self._minor_floors:
            if r.cuda_major == int(cuda_major):
                drv = getattr(r, _CUDA_OS[osk])
                return (drv, r.source) if drv else None
        return None

    def minor_compat_limits(self) -> List[MinorCompatLimit]:
        return list(self._minor_limits)

    def forward_compat_rule(self) -> Optional[ForwardCompat]:
        return self._forward[0] if self._forward else None

    def driver_max_cuda(self, driver_version: str) -> Optional[Tuple[str, str]]:
        """("12.4", source): the CUDA version nvidia-smi shows for this driver's branch; None if unknown."""
        try:
            branch = _release(driver_version)[0]
        except ValueError:
            return None
        for r in self._branches:
            if r.branch == branch:
                return r.max_cuda, r.source
        return None

    def newest_observed_driver(self, branch: int) -> Optional[str]:
        """The newest driver of ``branch`` the matrix has seen (cuda_driver.json driver_branches' observed_drivers:
        "470.161.03" for 470); None when it has none."""
        for r in self._branches:
            if r.branch == branch and r.observed:
                return max(r.observed, key=_release)
        return None

    def newest_cuda(self) -> str:
        return max((r.cuda for r in self._cuda_rows), key=_release)

    # -- torch
    def newest_torch(self) -> str:
        return max((r.minor for r in self._torch), key=_release)

    def torch_release(self, torch_version: str) -> Optional[TorchRelease]:
        """The minor release row for ``"2.5"``, ``"2.5.1"`` or ``"2.5.1+cu124"``; None when not in the matrix."""
        mm = _major_minor(_strip_local(torch_version or ""))
        if mm is None:
            return None
        return next((r for r in self._torch if r.minor == mm), None)

    def torch_releases(self) -> List[TorchRelease]:
        """Every torch minor release in the matrix, oldest first."""
        return sorted(self._torch, key=lambda r: _release(r.minor))

    def companion_rows(self) -> List[Companions]:
        """Every torch patch release with its companions."""
        return list(self._companion_list)

    def torch_arch_list(self, torch_version: str, variant: str) -> Optional[List[str]]:
        rel = self.torch_release(torch_version)
        if rel is None:
            return None
        arch = rel.arch_lists.get((variant or "").strip().lower())
        return list(arch) if arch is not None else None

    def companions(self, torch_version: str) -> Optional[Companions]:
        """torchvision/torchaudio/triton released with exactly this torch patch ("2.5.1+cu124" ok)."""
        v = _v(_strip_local(torch_version or ""))
        if v is None:
            return None
        return next((r for r in self._companion_list if _v(r.torch) == v), None)

    def torch_for_companion(self, package: str, version: str) -> Optional[str]:
        """The torch release a companion version was built for: ("torchvision", "0.17.1") -> "2.2.1".

        Several torch patches share one triton pin; then the newest of them is returned.
        """
        pkg = (package or "").strip().lower()
        if pkg not in ("torchvision", "torchaudio", "triton"):
            return None
        v = _v(_strip_local(version or ""))
        if v is None:
            return None
        hits = [r.torch for r in self._companion_list if getattr(r, pkg) and _v(getattr(r, pkg)) == v]
        return max(hits, key=_release) if hits else None

    # -- GPUs and architectures
    def arch_support(self, cc: str) -> Optional[ArchSupport]:
        try:
            want = parse_cc(str(cc))
        except ValueError:
            return None
        return next((r for r in self._arch if parse_cc(r.cc) == want), None)

    def arch_supports(self) -> List[ArchSupport]:
        """Every architecture row, in the file's order."""
        return list(self._arch)

    def ptxas_rows(self) -> List[PtxasTargets]:
        """The SASS targets each toolkit's ptxas accepts, in the file's order."""
        return list(self._ptxas)

    def ptxas_targets(self, cuda_version: str) -> Optional[List[str]]:
        """SASS targets `ptxas` of this toolkit accepts (11.7 and newer), e.g. ["sm_75", ..., "sm_121f"]."""
        mm = _major_minor(cuda_version)
        return next((list(r.targets) for r in self._ptxas if r.cuda == mm), None)

    def _family_index(self) -> List[Tuple[str, GpuRow]]:
        """(normalised name, row) for ``ambiguous_names``: a name several rows share ("NVIDIA A100")."""
        out = []
        for r in self._gpu_list:
            for n in r.ambiguous_names:
                # "A100" and "V100" mean the family too
                out += [(k, r) for k in key_variants(name_key(n))]
        return out

    def _gpu_lookup(self, name: str) -> Tuple[List[GpuRow], str]:
        """The rows a GPU name can mean, and how it matched ("exact", "family", "truncated", "vgpu", "mig", "").

        One row: the name identifies it. Several rows: the name is a family name or a truncated one that
        several models start with. A vGPU profile ("GRID P4-1Q", "NVIDIA A100-4C", "NVIDIA A100-3-20C") and a
        MIG device name ("NVIDIA A100-SXM4-40GB MIG 1g.5gb") mean the board they run on.
        """
        if not name or not name.strip():
            return [], ""
        raw = name.strip()
        cut, truncated = cut_short(raw)
        key = name_key(cut)
        if not key:
            return [], ""
        variants = key_variants(key)
        index = self._gpu_index
        family = self._gpu_family
        if truncated:
            # "NVIDIA GeForce RTX 2080 ..." may be a 2080, 2080 Ti or 2080 SUPER: never only the exact hit
            hits = _unique(r for n, r in index + family for k in variants if n.startswith(k))
            return hits, ("truncated" if hits else "")
        for k in variants:
            for n, r in index:
                if n == k:
                    return [r], "exact"
        for k in variants:
            hits = _unique(r for n, r in family if n == k)
            if hits:
                return hits, "family"
        for board, how in ((mig_board(raw), "mig"), (vgpu_board(raw), "vgpu")):
            if board:
                for candidate in (board, f"Tesla {board}", f"NVIDIA {board}"):
                    rows, _ = self._gpu_lookup(candidate)
                    if rows:
                        return rows, how
        return [], ""

    def gpu(self, name: str) -> Optional[GpuSpec]:
        """Spec of a GPU by the name NVML/nvidia-smi/collect_env prints ("NVIDIA H100 80GB HBM3").

        Tolerant: case and punctuation are ignored, and a name nvidia-smi's table cut short
        ("Tesla V100-SXM2...") matches when exactly one known model starts with it. A vGPU profile or MIG
        device name gives its board's row with ``memory_bytes`` None (the slice is not the board).
        A name that can mean several models ("NVIDIA A100", "Tesla V100-SXM2...") gives None: see
        ``gpu_compute_capability`` for the CC such a name still determines.
        """
        rows, how = self._gpu_lookup(name)
        if len(rows) != 1:
            return None
        spec = rows[0].spec
        if how in ("vgpu", "mig"):
            spec = replace(spec, memory_bytes=None, memory_bandwidth_gbs=None)
        return spec

    def gpu_candidates(self, name: str) -> List[GpuSpec]:
        """Every model a GPU name can mean (one for an exact name, several for "NVIDIA A100" or a cut name)."""
        return [r.spec for r in self._gpu_lookup(name)[0]]

    def gpu_compute_capability(self, name: str) -> Optional[str]:
        """Compute capability a GPU name determines: "8.0" for "NVIDIA A100" (40GB or 80GB, PCIe or SXM: all 8.0).

        The name must match one row, or several rows that all have the same known CC; None when it matches
        nothing, when the candidates disagree ("NVIDIA GeForce ..."), or when the CC is unknown. A truncated
        name is answered only from the models in the matrix that start with it.
        """
        ccs = {r.spec.compute_capability for r in self._gpu_lookup(name)[0]}
        if len(ccs) == 1:
            return ccs.pop()
        return None

    def gpus(self) -> List[GpuSpec]:
        return [r.spec for r in self._gpu_list]

    # -- host compilers
    def least_cuda_for_host_compiler(self, major: int, compiler: str = "gcc") -> Optional[Tuple[str, str]]:
        """(the oldest CUDA major.minor whose nvcc accepts this host compiler major, source); None when no row
        of the matrix accepts it."""
        fieldname = {"gcc": "max_gcc_major", "clang": "max_clang_major"}.get((compiler or "").strip().lower())
        if fieldname is None:
            return None
        fits = [r for r in self._host_compilers if (getattr(r, fieldname) or -1) >= major]
        if not fits:
            return None
        best = min(fits, key=lambda r: tuple(int(x) for x in r.cuda.split(".")))
        return best.cuda, best.source

    def max_host_compiler(self, cuda_version: str, compiler: str = "gcc") -> Optional[Tuple[int, str]]:
        """(newest major accepted by nvcc's host_config.h, source); None when unknown."""
        fieldname = {"gcc": "max_gcc_major", "clang": "max_clang_major"}.get((compiler or "").strip().lower())
        mm = _major_minor(cuda_version or "")
        if fieldname is None or mm is None:
            return None
        for r in self._host_compilers:
            if r.cuda == mm:
                val = getattr(r, fieldname)
                return (val, r.source) if val is not None else None
        return None
