"""Loading and querying the bundled compatibility matrix (compat_data/*.json): drivers, CUDA, torch, GPUs."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import datetime
import json
import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from packaging.version import Version

# the concepts live in envdoctor.domain; these names stay importable from compat for its callers
from ..domain.arch import arch_runs, parse_cc
from ..domain.gpus import cut_short, key_variants, mig_board, name_key, vgpu_board
from ..domain.variants import cuda_of_variant, index_url, variant_of_cuda
from ..domain.versions import base_version, mm_str, parse_version, release
from . import _parse as P
from ._parse import CompatDataError
from ._parse import source_text as _src

if TYPE_CHECKING:  # the optional tables' modules import this one
    from .bench import BenchTable
    from .driver_gpu import DriverGpuTable
    from .health import HealthTable
    from .signatures import Signature
    from .xid import XidTable

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
    "arch_runs",
    "cuda_of_variant",
    "index_url",
    "load_compat",
    "validate_file",
    "variant_of_cuda",
]


# --------------------------------------------------------------------------- record types


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


# --------------------------------------------------------------------------- variants, arch lists


# --------------------------------------------------------------------------- validation

_REQUIRED_TOP = ("title", "as_of", "sources", "rows")


def _is_source(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return bool(value) and all(isinstance(s, str) and s.strip() for s in value)
    return False


def _is_sources_list(value: Any) -> bool:
    """Top-level citations: strings, or objects with a non-empty "url" (rows may then cite them by "id")."""
    if not isinstance(value, list) or not value:
        return False
    for s in value:
        if isinstance(s, str) and s.strip():
            continue
        if isinstance(s, dict) and isinstance(s.get("url"), str) and s["url"].strip():
            continue
        return False
    return True


def validate_file(path: Path) -> Dict[str, Any]:
    """Load one compat_data file and check the generic rule (see compat_data/README.md); raise CompatDataError."""
    name = path.name
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompatDataError(f"{name}: file not found at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CompatDataError(f"{name}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CompatDataError(f"{name}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise CompatDataError(f"{name}: top level must be an object")
    for key in _REQUIRED_TOP:
        if key not in doc:
            raise CompatDataError(f"{name}: missing top-level {key!r}")
    if not isinstance(doc["title"], str) or not doc["title"].strip():
        raise CompatDataError(f"{name}: 'title' must be a non-empty string")
    try:
        datetime.date.fromisoformat(str(doc["as_of"]))
    except ValueError:
        raise CompatDataError(f"{name}: 'as_of' {doc['as_of']!r} is not a YYYY-MM-DD date") from None
    if not _is_sources_list(doc["sources"]):
        raise CompatDataError(f"{name}: 'sources' must be a non-empty list of strings or of objects with a 'url'")
    keys = doc.get("keys", {})
    version_fields = doc.get("version_fields", {})
    if not isinstance(keys, dict) or not isinstance(version_fields, dict):
        raise CompatDataError(f"{name}: 'keys' and 'version_fields' must be objects of table -> field list")
    tables = {k: v for k, v in doc.items() if isinstance(v, list) and k != "sources"}
    for tname in list(keys) + list(version_fields):
        if tname not in tables:
            raise CompatDataError(f"{name}: 'keys'/'version_fields' name a table {tname!r} that the file lacks")
    for tname, rows in tables.items():
        seen: Dict[Tuple[Any, ...], int] = {}
        for i, row in enumerate(rows):
            where = f"{name}: {tname}[{i}]"
            if not isinstance(row, dict):
                raise CompatDataError(f"{where} is not an object")
            if not _is_source(row.get("source")):
                raise CompatDataError(f"{where} has no source")
            for fname in version_fields.get(tname, []):
                val = row.get(fname)
                if val is not None and _v(str(val)) is None:
                    raise CompatDataError(f"{where}.{fname} = {val!r} is not a version")
            kfields = keys.get(tname)
            if kfields:
                key = tuple(json.dumps(row.get(f), sort_keys=True) for f in kfields)
                if key in seen:
                    raise CompatDataError(
                        f"{where} duplicates {tname}[{seen[key]}] on key {dict(zip(kfields, key))}"
                    )
                seen[key] = i
    return doc


# --------------------------------------------------------------------------- the matrix

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


@dataclass(frozen=True)
class _GpuRow:
    """A gpus.json row with the names that mean it (normalised name and aliases) and the family names it shares."""

    spec: GpuSpec
    names: Tuple[str, ...]
    ambiguous_names: Tuple[str, ...]


def _cuda_release(r: Dict[str, Any]) -> CudaRelease:
    return CudaRelease(cuda=P.version(r, "cuda"), release=P.opt_text(r, "release"),
                       toolkit_version=P.opt_version(r, "toolkit_version"),
                       linux_min_driver=P.opt_version(r, "linux_min_driver"),
                       windows_min_driver=P.opt_version(r, "windows_min_driver"),
                       source=_src(r["source"]), confidence=P.opt_text(r, "confidence"))


def _minor_floor(r: Dict[str, Any]) -> MinorCompatFloor:
    return MinorCompatFloor(P.integer(r, "cuda_major"), P.opt_version(r, "linux_min_driver"),
                            P.opt_version(r, "windows_min_driver"), _src(r["source"]))


def _limit(r: Dict[str, Any]) -> MinorCompatLimit:
    return MinorCompatLimit(P.opt_text(r, "id"), P.opt_text(r, "rule") or P.opt_text(r, "limit"),
                            P.opt_text(r, "error"), r.get("source"))


def _forward(r: Dict[str, Any]) -> ForwardCompat:
    return ForwardCompat(P.opt_text(r, "package"), P.strings(r, "gpus"), P.opt_text(r, "rule"), r.get("source"))


def _branch_cuda(r: Dict[str, Any]) -> BranchCuda:
    return BranchCuda(P.integer(r, "branch"), P.version(r, "max_cuda"), _src(r["source"]))


def _torch_release(r: Dict[str, Any]) -> TorchRelease:
    arch = r.get("arch_lists") or {}
    if not isinstance(arch, dict):
        raise ValueError(f"arch_lists = {arch!r} is not an object of variant -> arch list")
    return TorchRelease(
        minor=P.version(r, "torch"),
        python_min=P.opt_version(r, "python_min"),
        python_max=P.opt_version(r, "python_max"),
        cuda_variants=P.strings(r, "cuda_variants"),
        rocm_variants=P.strings(r, "rocm_variants"),
        default_variant=P.opt_text(r, "default_variant"),
        arch_lists={k: P.strings(arch, k) for k in arch},
        cudnn=P.string_map(r, "cudnn"),
        source=_src(r["source"]),
        confidence=P.opt_text(r, "confidence"),
    )


def _companion(r: Dict[str, Any]) -> Companions:
    return Companions(torch=P.version(r, "torch"), torchvision=P.opt_version(r, "torchvision"),
                      torchaudio=P.opt_version(r, "torchaudio"), triton=P.opt_version(r, "triton"),
                      source=_src(r["source"]), triton_spec=P.opt_text(r, "triton_spec"),
                      confidence=P.opt_text(r, "confidence"))


def _arch(r: Dict[str, Any]) -> ArchSupport:
    cc = P.text(r, "cc")
    parse_cc(cc)  # ValueError for a cc that is not "X.Y"
    return ArchSupport(cc=cc, first_cuda=P.opt_version(r, "first_cuda"), last_cuda=P.opt_version(r, "last_cuda"),
                       source=_src(r["source"]), still_supported=P.opt_bool(r, "still_supported"),
                       sm=P.opt_text(r, "sm"), architecture=P.opt_text(r, "architecture"),
                       confidence=P.opt_text(r, "confidence"))


def _ptxas(r: Dict[str, Any]) -> PtxasTargets:
    return PtxasTargets(P.version(r, "cuda"), P.strings(r, "targets"), _src(r["source"]))


def _gpu(r: Dict[str, Any]) -> _GpuRow:
    mem_gib = P.opt_number(r, "memory_gib")
    cc = P.opt_text(r, "compute_capability")
    if cc is not None:
        parse_cc(cc)
    spec = GpuSpec(
        name=P.text(r, "name"),
        compute_capability=cc,
        memory_bytes=int(mem_gib * 2**30) if mem_gib is not None else None,
        memory_bandwidth_gbs=P.opt_number(r, "memory_bandwidth_gbs"),
        bf16_tflops_dense=P.opt_number(r, "bf16_tflops_dense"),
        fp16_tflops_dense=P.opt_number(r, "fp16_tflops_dense"),
        tf32_tflops_dense=P.opt_number(r, "tf32_tflops_dense"),
        fp32_tflops=P.opt_number(r, "fp32_tflops"),
        pcie_gen=P.opt_integer(r, "pcie_gen"),
        nvlink_links=P.opt_integer(r, "nvlink_links"),
        nvlink_gen=P.opt_integer(r, "nvlink_gen"),
        nvlink_bandwidth_gbs=P.opt_number(r, "nvlink_bandwidth_gbs"),
        datacenter=P.opt_bool(r, "datacenter"),
        source=_src(r["source"]),
        confidence=P.opt_text(r, "confidence"),
        tdp_w=P.opt_number(r, "tdp_w"),
        architecture=P.opt_text(r, "architecture"),
        aliases=P.strings(r, "aliases"),
    )
    names = tuple(name_key(n) for n in [spec.name] + spec.aliases)
    return _GpuRow(spec, names, tuple(P.strings(r, "ambiguous_names")))


def _host_compiler(r: Dict[str, Any]) -> HostCompiler:
    return HostCompiler(P.version(r, "cuda"), P.opt_integer(r, "max_gcc_major"), P.opt_integer(r, "max_clang_major"),
                        _src(r["source"]))


def _optional_tables(docs: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The tables other modules define, parsed now so that bad data fails at load (CompatDataError)."""
    from .bench import parse_bench, validate_bench
    from .driver_gpu import parse_driver_gpu_support
    from .health import parse_health
    from .signatures import parse_signatures
    from .xid import parse_xid

    out: Dict[str, Any] = {}
    if "bench" in docs:  # rules beyond the generic ones (its rows name gpus.json rows)
        validate_bench(docs["bench"], docs["gpus"])
    for stem, parse in (("health", parse_health), ("driver_gpu_support", parse_driver_gpu_support),
                        ("bench", parse_bench), ("error_signatures", parse_signatures), ("xid", parse_xid)):
        if stem not in docs:
            continue
        try:
            out[stem] = parse(docs[stem])
        except CompatDataError:
            raise
        except ValueError as e:  # the parsers name the file and row themselves
            raise CompatDataError(str(e)) from None
    return out


class Compat:
    """The loaded matrix, every table parsed into typed rows at load (bad data fails there, not in a check).

    Queries return None for "not in the matrix" and never raise on unknown input. Checks use only these
    queries and the typed tables (``health``, ``driver_gpu_support``, ``bench``, ``xid``, ``signatures``, each
    None when its file is absent; ``optional()`` says why); ``table()`` is the raw document, for tooling.
    """

    def __init__(self, data_dir: Path, docs: Dict[str, Dict[str, Any]]):
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
        optional = _optional_tables(docs)
        self.health: Optional[HealthTable] = optional.get("health")
        self.driver_gpu_support: Optional[DriverGpuTable] = optional.get("driver_gpu_support")
        self.bench: Optional[BenchTable] = optional.get("bench")
        self.xid: Optional[XidTable] = optional.get("xid")
        self.signatures: Optional[List[Signature]] = optional.get("error_signatures")
        self._gpu_index = [(n, r) for r in self._gpu_list for n in r.names]
        self._gpu_family = self._family_index()

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
                 "error_signatures": "signatures"}

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

    def _family_index(self) -> List[Tuple[str, _GpuRow]]:
        """(normalised name, row) for ``ambiguous_names``: a name several rows share ("NVIDIA A100")."""
        out = []
        for r in self._gpu_list:
            for n in r.ambiguous_names:
                # "A100" and "V100" mean the family too
                out += [(k, r) for k in key_variants(name_key(n))]
        return out

    def _gpu_lookup(self, name: str) -> Tuple[List[_GpuRow], str]:
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


# --------------------------------------------------------------------------- loading

_CACHE: Dict[str, Compat] = {}
_LOCK = threading.Lock()


def bundled_dir() -> Path:
    """The installed package envdoctor.compat_data, else <repo>/compat_data in a source tree.

    Plain paths rather than importlib.resources: compat_data has no __init__.py, and for such a namespace
    package resources.files() returns a MultiplexedPath whose str() is not a directory.
    """
    package_dir = Path(__file__).resolve().parent.parent  # .../envdoctor
    for candidate in (package_dir / "compat_data", package_dir.parent / "compat_data"):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return package_dir.parent / "compat_data"


def load_compat(data_dir: Optional[Union[Path, str]] = None) -> Compat:
    """Load and validate every compat_data/*.json once per directory; raise CompatDataError on bad data.

    Without ``data_dir``: the bundled matrix, or the update `envdoctor update-data` installed when that is
    newer (its as_of later than the bundled one's) and still passes validation; else the bundled one.
    """
    if data_dir is None:
        return active_compat()
    return _load_dir(Path(data_dir))


_ACTIVE: Dict[str, Tuple[Compat, Optional[str]]] = {}


def active_compat() -> Compat:
    """The matrix in use (see load_compat), chosen once per cache directory."""
    return active_choice()[0]


def active_choice() -> Tuple[Compat, Optional[str]]:
    """(matrix in use, why an installed update is not used or None)."""
    from .datadir import cache_dir, installed_update, newer

    cache = cache_dir()
    key = str(cache)
    if key in _ACTIVE:
        return _ACTIVE[key]
    bundled = _load_dir(bundled_dir())
    choice: Tuple[Compat, Optional[str]] = (bundled, None)
    update = installed_update(cache)
    if update is not None:
        if not newer(update.as_of, bundled.as_of):
            choice = (bundled, f"the installed update {update.version} (as of {update.as_of}) is not newer than "
                               f"the bundled matrix (as of {bundled.as_of})")
        else:
            try:
                compat = _load_dir(update.directory)
            except CompatDataError as e:
                choice = (bundled, f"the installed update {update.version} fails validation: {e}")
            else:
                compat.label = f"update {update.version} in {update.directory.parent}"
                choice = (compat, None)
    _ACTIVE[key] = choice
    return choice


def _load_dir(directory: Path) -> Compat:
    cache_key = str(directory.resolve()) if directory.exists() else str(directory)
    with _LOCK:
        if cache_key in _CACHE:
            return _CACHE[cache_key]
        if not directory.is_dir():
            raise CompatDataError(f"compat data directory not found: {directory}")
        docs = {p.stem: validate_file(p) for p in sorted(directory.glob("*.json"))}
        for needed in ("cuda_driver", "torch", "gpus", "arch_support", "host_compilers"):
            if needed not in docs:
                raise CompatDataError(f"{needed}.json: missing from {directory}")
        compat = Compat(directory, docs)  # parses every table: bad data raises CompatDataError here
        _CACHE[cache_key] = compat
        return compat


def clear_cache() -> None:
    """Forget loaded matrices (tests that write data files)."""
    with _LOCK:
        _CACHE.clear()
        _ACTIVE.clear()
