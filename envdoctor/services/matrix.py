"""`envdoctor matrix ...`: the compatibility matrix queried from the shell, each answer citing its source rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..compat import load_compat
from ..domain.arch import arch_runs
from ..domain.gpus import TYPED_NAME_PREFIXES
from ..domain.variants import cuda_of_variant
from ..domain.versions import mm_str, release
from ..model.targets import TargetError, check_driver_version, resolve_gpu
from .matrix_bench import MatrixError, query_bench  # the bench half is below: it imports nothing from here

if TYPE_CHECKING:
    from ..compat.queries import Compat


def _release(text: str) -> Tuple[int, ...]:
    rel = release(text, strict=True)
    if not rel:
        raise MatrixError(f"{text!r} is not a version")
    return rel


def min_driver(compat: Compat, cuda: str, os: str = "linux") -> Dict[str, Any]:
    _release(cuda)
    req = compat.cuda_requirement(cuda, os)
    if req is None:
        known = ", ".join(sorted({r.cuda for r in compat.cuda_releases()}, key=_release))
        raise MatrixError(f"CUDA {cuda} is not in the matrix (as of {compat.as_of}; known: {known})")
    major = int(req.cuda.split(".")[0])
    fwd = compat.forward_compat_rule()
    out: Dict[str, Any] = {
        "query": "min-driver", "cuda": req.cuda, "os": os, "release": req.release,
        "toolkit_version": req.toolkit_version,
        "min_driver": req.min_driver, "min_driver_source": req.source, "confidence": req.confidence,
        "minor_version_compatibility": None, "forward_compatibility": None, "as_of": req.as_of,
    }
    if major >= 11 and req.minor_compat_min_driver:
        out["minor_version_compatibility"] = {
            "min_driver": req.minor_compat_min_driver, "applies_to": f"CUDA {major}.x",
            "source": req.minor_compat_source,
            "limits": [{"id": r.id, "rule": r.rule, "source": r.source}
                       for r in compat.minor_compat_limits()],
        }
    if fwd:
        out["forward_compatibility"] = {"package": fwd.package, "gpus": fwd.gpus or None,
                                        "rule": fwd.rule, "source": fwd.source}
    return out


def max_cuda(compat: Compat, driver: str) -> Dict[str, Any]:
    try:
        driver = check_driver_version(driver, compat) or ""
    except TargetError as e:
        raise MatrixError(str(e)) from None
    branch = compat.driver_max_cuda(driver)
    ga = [r for r in compat.cuda_releases()
          if r.linux_min_driver and _release(driver) >= _release(r.linux_min_driver)]
    newest_ga = max(ga, key=lambda r: (_release(r.cuda), _release(r.toolkit_version or r.cuda)),
                    default=None)
    majors = []
    for major in sorted({int(r.cuda.split(".")[0]) for r in compat.cuda_releases()}):
        floor = compat.minor_compat_floor(major, "linux") if major >= 11 else None
        if floor and _release(driver) >= _release(floor[0]):
            majors.append({"cuda_major": major, "floor": floor[0], "source": floor[1]})
    return {
        "query": "max-cuda", "driver": driver,
        "max_cuda": branch[0] if branch else None, "max_cuda_source": branch[1] if branch else None,
        "newest_toolkit_at_ga_minimum": ({"cuda": newest_ga.cuda, "release": newest_ga.release,
                                          "min_driver": newest_ga.linux_min_driver,
                                          "source": newest_ga.source} if newest_ga else None),
        "minor_version_compatibility": majors,
        "note": ("max_cuda is what nvidia-smi shows for this branch; under minor-version compatibility every "
                 "CUDA major listed runs at this driver with the documented limits (no PTX JIT of newer PTX)"),
        "as_of": compat.as_of,
    }


def torch_info(compat: Compat, version: str) -> Dict[str, Any]:
    rel = compat.torch_release(version)
    if rel is None:
        known = ", ".join(r.minor for r in compat.torch_releases())
        raise MatrixError(f"torch {version} is not in the matrix (as of {compat.as_of}; known: {known})")
    patches = [c for c in compat.companion_rows() if c.torch.startswith(rel.minor + ".")
               and mm_str(c.torch) == rel.minor]
    if len(_release(version)) >= 3:
        patches = [c for c in patches if _release(c.torch) == _release(version)] or patches
    return {
        "query": "torch", "torch": rel.minor, "python_min": rel.python_min, "python_max": rel.python_max,
        "cuda_variants": rel.cuda_variants, "rocm_variants": rel.rocm_variants,
        "default_variant": rel.default_variant, "arch_lists": rel.arch_lists, "cudnn": rel.cudnn,
        "companions": [{"torch": c.torch, "torchvision": c.torchvision, "torchaudio": c.torchaudio,
                        "triton": c.triton, "source": c.source} for c in patches],
        "source": rel.source, "confidence": rel.confidence, "as_of": compat.as_of,
    }


def torch_builds_for(compat: Compat, cc: str) -> List[Dict[str, Any]]:
    """Every torch release/variant whose arch list runs on ``cc``, oldest first, with how (SASS or PTX)."""
    out = []
    for rel in compat.torch_releases():
        for variant, arch in sorted(rel.arch_lists.items()):
            if not arch:
                continue
            ok, why = arch_runs(arch, cc)
            if ok:
                sass = arch_runs([a for a in arch if a.startswith("sm_")], cc)[0]
                out.append({"torch": rel.minor, "variant": variant, "cuda": cuda_of_variant(variant),
                            "kernels": "SASS" if sass else "PTX (JIT)", "why": why, "source": rel.source})
    return out


def gpu_info(compat: Compat, name: str) -> Dict[str, Any]:
    try:
        target = resolve_gpu(compat, name)
    except TargetError as e:
        raise MatrixError(str(e)) from None
    models: List[Any] = []
    for prefix in TYPED_NAME_PREFIXES:
        for suffix in ("", "..."):
            models = compat.gpu_candidates(f"{prefix}{name}{suffix}") if target.how != "sm_XX" else []
            if models:
                break
        if models:
            break
    arch = compat.arch_support(target.cc)
    return {
        "query": "gpu", "name": name, "compute_capability": target.cc,
        "models": [{k: getattr(m, k) for k in (
            "name", "architecture", "compute_capability", "memory_bytes", "memory_bandwidth_gbs",
            "bf16_tflops_dense", "fp16_tflops_dense", "tf32_tflops_dense", "fp32_tflops", "pcie_gen",
            "nvlink_links", "nvlink_bandwidth_gbs", "tdp_w", "datacenter", "source")} for m in models],
        "arch": _arch_dict(arch) if arch else None,
        "torch_builds": torch_builds_for(compat, target.cc),
        "as_of": compat.as_of,
    }


def _arch_dict(a: Any) -> Dict[str, Any]:
    return {"cc": a.cc, "sm": a.sm, "architecture": a.architecture, "first_cuda": a.first_cuda,
            "last_cuda": a.last_cuda, "still_supported": a.still_supported, "source": a.source,
            "confidence": a.confidence}


def arch_info(compat: Compat, arch: Optional[str]) -> Dict[str, Any]:
    if not arch:
        rows = [_arch_dict(a) for a in compat.arch_supports()]
        return {"query": "arch", "architectures": rows, "as_of": compat.as_of}
    try:
        target = resolve_gpu(compat, arch if arch.lower().startswith(("sm", "compute")) or "." in arch
                             else f"sm_{arch}")
    except TargetError as e:
        raise MatrixError(str(e)) from None
    a = compat.arch_support(target.cc)
    if a is None:  # resolve_gpu names only what the matrix holds; a table without the row is no answer either
        raise MatrixError(f"compute capability {target.cc} is not in the matrix (`envdoctor matrix arch` lists them)")
    sm = a.sm or f"sm_{target.cc.replace('.', '')}"
    ptxas = compat.ptxas_rows()
    toolkits = [r.cuda for r in ptxas if sm in r.targets]
    return {"query": "arch", **_arch_dict(a), "ptxas_toolkits": toolkits,
            "ptxas_source": ptxas[0].source if ptxas else None,
            "torch_builds": torch_builds_for(compat, target.cc), "as_of": compat.as_of}


# --------------------------------------------------------------------------- console text


def _cite(source: Any) -> str:
    return f"    source: {source}" if source else "    source: (none recorded)"


def render(payload: Dict[str, Any]) -> str:
    q = payload["query"]
    lines: List[str] = []
    if q == "min-driver":
        lines += [f"CUDA {payload['cuda']} ({payload['release'] or 'release ?'}"
                  + (f", toolkit {payload['toolkit_version']}" if payload.get("toolkit_version") else "")
                  + f") on {payload['os']}: minimum driver {payload['min_driver'] or 'unknown (not confirmed)'}",
                  _cite(payload["min_driver_source"])]
        mvc = payload.get("minor_version_compatibility")
        if mvc:
            lines += [f"Minor-version compatibility: every {mvc['applies_to']} runtime runs on driver >= "
                      f"{mvc['min_driver']}, with limits:", _cite(mvc["source"])]
            lines += [f"  - {lim['rule']}" for lim in mvc["limits"] if lim.get("rule")]
        fwd = payload.get("forward_compatibility")
        if fwd:
            lines += [f"Forward compatibility: {fwd['rule']} (package {fwd['package']})", _cite(fwd["source"])]
    elif q == "max-cuda":
        lines += [f"Driver {payload['driver']}: nvidia-smi 'CUDA Version' {payload['max_cuda'] or 'unknown'}",
                  _cite(payload["max_cuda_source"])]
        ga = payload.get("newest_toolkit_at_ga_minimum")
        if ga:
            lines += [f"Newest toolkit whose GA minimum driver it meets: CUDA {ga['cuda']} (needs {ga['min_driver']})",
                      _cite(ga["source"])]
        for m in payload["minor_version_compatibility"]:
            lines += [f"Runs every CUDA {m['cuda_major']}.x runtime through minor-version compatibility "
                      f"(floor {m['floor']})", _cite(m["source"])]
    elif q == "torch":
        lines += [f"torch {payload['torch']}: Python {payload['python_min'] or '?'} .. {payload['python_max'] or '?'}; "
                  f"default variant on PyPI: {payload['default_variant'] or 'unknown'}",
                  f"  CUDA variants: {', '.join(payload['cuda_variants']) or '(none recorded)'}",
                  f"  ROCm variants: {', '.join(payload['rocm_variants']) or '(none recorded)'}"]
        for v, arch in payload["arch_lists"].items():
            lines.append(f"  {v} arch list: {' '.join(arch)}" + (f"; cuDNN {payload['cudnn'][v]}"
                                                               if v in payload["cudnn"] else ""))
        for c in payload["companions"]:
            lines.append(f"  torch {c['torch']}: torchvision {c['torchvision'] or '-'}, torchaudio "
                         f"{c['torchaudio'] or '-'}, triton {c['triton'] or '-'}")
        lines.append(_cite(payload["source"]))
    elif q == "gpu":
        lines.append(f"{payload['name']}: compute capability {payload['compute_capability']}")
        for m in payload["models"]:
            mem = f"{m['memory_bytes'] / 2**30:g} GiB" if m["memory_bytes"] else "? GiB"
            lines += [f"  {m['name']} ({m['architecture'] or '?'}): {mem}, {m['memory_bandwidth_gbs'] or '?'} GB/s, "
                      f"BF16 dense {m['bf16_tflops_dense'] or '?'} TFLOPS, FP32 {m['fp32_tflops'] or '?'} TFLOPS",
                      "  " + _cite(m["source"])]
        lines += _arch_lines(payload.get("arch"), payload["torch_builds"])
    elif q == "arch":
        if "architectures" in payload:
            for a in payload["architectures"]:
                lines.append(f"{a['sm'] or a['cc']:<8} {a['cc']:<5} {a['architecture'] or '':<50} CUDA "
                             f"{a['first_cuda'] or '?'} .. {a['last_cuda'] or ('now' if a['still_supported'] else '?')}")
        else:
            lines += _arch_lines(payload, payload["torch_builds"])
            if payload.get("ptxas_toolkits"):
                lines += [f"ptxas accepts {payload['sm']} in CUDA {', '.join(payload['ptxas_toolkits'])}",
                          _cite(payload.get("ptxas_source"))]
    lines.append(f"(matrix as of {payload.get('as_of')})")
    return "\n".join(lines)


def _arch_lines(arch: Optional[Dict[str, Any]], builds: List[Dict[str, Any]]) -> List[str]:
    lines = []
    if arch:
        last = arch["last_cuda"] or ("still supported" if arch["still_supported"] else "unknown")
        lines += [f"{arch['sm'] or arch['cc']} ({arch['architecture'] or '?'}): first CUDA {arch['first_cuda'] or '?'}, "
                  f"last CUDA {last}", _cite(arch["source"])]
    if builds:
        by: Dict[str, List[str]] = {}
        for b in builds:
            by.setdefault(b["torch"], []).append(b["variant"] + ("" if b["kernels"] == "SASS" else " (PTX)"))
        lines.append("torch builds with kernels for it: " + "; ".join(f"{t} {', '.join(v)}" for t, v in by.items()))
    else:
        lines.append("torch builds with kernels for it: none in the matrix")
    return lines


def query(args: Any) -> Tuple[Dict[str, Any], str]:
    compat = load_compat()
    q = args.query
    if q == "min-driver":
        payload = min_driver(compat, args.cuda, args.os)
    elif q == "max-cuda":
        payload = max_cuda(compat, args.driver)
    elif q == "torch":
        _release(args.version)
        payload = torch_info(compat, args.version)
    elif q == "gpu":
        payload = gpu_info(compat, args.name)
    elif q == "bench":
        return query_bench(args)
    else:
        payload = arch_info(compat, args.arch)
    payload["compat_data"] = getattr(compat, "label", None)
    return payload, render(payload)
