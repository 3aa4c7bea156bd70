"""compat_data rows into typed records (``records``): bad data raises here, at load, never in a check."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

from typing import Any, Dict, Tuple

from ..domain.arch import parse_cc
from ..domain.gpus import name_key
from ..domain.versions import parse_version
from . import _parse as P
from ._parse import CompatDataError
from ._parse import source_text as _src
from .records import (
    ArchSupport,
    BranchCuda,
    Companions,
    CudaRelease,
    ForwardCompat,
    GpuRow,
    GpuSpec,
    HostCompiler,
    MinorCompatFloor,
    MinorCompatLimit,
    PtxasTargets,
    TorchRelease,
)


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
    # the versions among observed_drivers (an entry may be a note: "610.57.04 / 610.43.02 appear only in ...")
    observed = [v for v in P.strings(r, "observed_drivers") if parse_version(v, strict=True) is not None]
    return BranchCuda(P.integer(r, "branch"), P.version(r, "max_cuda"), _src(r["source"]), tuple(observed))


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


def _gpu(r: Dict[str, Any]) -> GpuRow:
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
        sm_count=P.opt_integer(r, "sm_count"),
    )
    names = tuple(name_key(n) for n in [spec.name] + spec.aliases)
    return GpuRow(spec, names, tuple(P.strings(r, "ambiguous_names")))


def _host_compiler(r: Dict[str, Any]) -> HostCompiler:
    return HostCompiler(P.version(r, "cuda"), P.opt_integer(r, "max_gcc_major"), P.opt_integer(r, "max_clang_major"),
                        _src(r["source"]))


def _optional_tables(docs: Dict[str, Dict[str, Any]], skip: Tuple[str, ...] = ()) -> Dict[str, Any]:
    """The tables other modules define, parsed now so that bad data fails at load (CompatDataError); those in
    ``skip`` are left for later."""
    from .bench import parse_bench, validate_bench
    from .driver_gpu import parse_driver_gpu_support
    from .env_vars import parse_env_vars
    from .health import parse_health
    from .signatures import parse_signatures
    from .status_codes import parse_status_codes
    from .torch_family import parse_torch_family
    from .xid import parse_xid

    out: Dict[str, Any] = {}
    if "bench" in docs:  # rules beyond the generic ones (its rows name gpus.json rows)
        validate_bench(docs["bench"], docs["gpus"])
    for stem, parse in (("health", parse_health), ("driver_gpu_support", parse_driver_gpu_support),
                        ("bench", parse_bench), ("error_signatures", parse_signatures), ("xid", parse_xid),
                        ("env_vars", parse_env_vars), ("torch_family", parse_torch_family),
                        ("status_codes", parse_status_codes)):
        if stem not in docs or stem in skip:
            continue
        try:
            out[stem] = parse(docs[stem])
        except CompatDataError:
            raise
        except ValueError as e:  # the parsers name the file and row themselves
            raise CompatDataError(str(e)) from None
    return out
