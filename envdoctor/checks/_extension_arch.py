"""Judging torch's compiled CUDA extensions (flash-attn, xformers, torchvision's _C ...) against GPU architectures.

Shared by requirements.extensions-gpus (the declared target GPUs) and packages.extensions (the GPUs of a live
machine). The facts are ``PythonEnv.extensions``: the sm_XX cubins and compute_XX PTX each library's
.nv_fatbin carries, read by the inspect payload without importing anything.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from ..domain.arch import arch_runs, sm_name
from ..domain.fastclass import dataclass
from ..model.facts import ExtensionLibrary, PythonEnv
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import export, pip_install
from .base import CheckContext, Findings

# PTX JIT-compiles on first use: minutes of start-up on each new machine, and the result lives in the JIT
# cache (~/.nv/ComputeCache, CUDA_CACHE_MAXSIZE, CUDA_CACHE_PATH); a cache too small re-compiles every run.
# https://developer.nvidia.com/blog/cuda-pro-tip-understand-fat-binaries-jit-caching/ and
# https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#just-in-time-compilation
JIT_DETAIL = ("The driver JIT-compiles PTX for this GPU the first time each kernel is loaded: start-up can take "
              "minutes on every new machine or container, and the result fills the JIT cache (~/.nv/ComputeCache, "
              "capped by CUDA_CACHE_MAXSIZE; compiled again whenever it does not fit). A build with SASS for this "
              "architecture avoids both. https://developer.nvidia.com/blog/cuda-pro-tip-understand-fat-binaries-"
              "jit-caching/")
MAX_EVIDENCE = 6


@dataclass(frozen=True)
class ArchTarget:
    """One GPU to judge against: what to call it, its compute capability, and where that came from."""

    label: str  # "target H100" / "GPU 0 (NVIDIA H100 80GB HBM3)"
    cc: str  # "9.0"
    evidence: Evidence


def _named(t: ArchTarget) -> str:
    sm = sm_name(t.cc)
    return t.label if sm in t.label.lower() else f"{t.label} ({sm})"


def _lib_name(lib: ExtensionLibrary) -> str:
    return lib.path.rsplit("/", 1)[-1] if lib.path else "a library of unknown path"


def _judge_lib(lib: ExtensionLibrary, cc: str) -> str:
    """"sass", "ptx" (runs only through JIT) or "none" for one read library with CUDA kernels."""
    sass = list(lib.sass or [])
    if arch_runs(sass, cc)[0]:
        return "sass"
    if arch_runs(sass + list(lib.ptx or []), cc)[0]:
        return "ptx"
    return "none"


def _evidence(i: int, idx: Dict[int, int], libs: List[ExtensionLibrary], cc: str) -> List[Evidence]:
    out = []
    for lib in libs[:MAX_EVIDENCE]:
        j = idx[id(lib)]
        out.append(Evidence(f"pythons[{i}].extensions.libraries[{j}]",
                            {"sass": lib.sass or [], "ptx": lib.ptx or []},
                            expected=f"{sm_name(cc)} (SASS) or PTX <= compute_{sm_name(cc)[3:]}",
                            source=lib.path))
    return out


def _fix(ctx: CheckContext, py: PythonEnv, dist: str, cc: str, ptx_only: bool) -> Fix:
    what = "SASS" if ptx_only else "kernels"
    summary = (f"Install a {dist} build with {what} for {sm_name(cc)}: a wheel built for it, or a source build with "
               f"TORCH_CUDA_ARCH_LIST naming {cc} (torch.utils.cpp_extension reads it; some packages have their "
               "own variable, see their build notes)")
    if ptx_only:
        summary += "; or keep the PTX and give the JIT cache room (CUDA_CACHE_MAXSIZE) on a persistent volume"
    return Fix(summary, [export("TORCH_CUDA_ARCH_LIST", cc),
                         pip_install(ctx.facts, py, ["--no-binary", dist, dist], force=True, no_deps=True,
                                     no_build_isolation=True)])


def judge_extensions(ctx: CheckContext, targets: List[ArchTarget],
                     found: Findings) -> Tuple[List[Finding], int, List[str]]:
    """(findings, distributions judged, reasons some could not be) for every interpreter's extensions.

    ``found`` is the caller's builder, which declares the kinds "missing", "ptx-only" and "partial".

    Per distribution and GPU: an error when no library it ships can run there (no SASS of the same major
    with a lower or equal minor, no PTX the driver can JIT to it: compat.arch_runs); a warning when only PTX
    serves it; an info when some of its libraries lack the GPU while others serve it (packages such as vllm
    ship kernels for one GPU generation only and choose at run time). Unread libraries make it unknown.
    """
    findings: List[Finding] = []
    judged = 0
    unjudged: List[str] = []
    for i, py in enumerate(ctx.facts.pythons):
        scan = py.extensions
        if scan is None:
            continue
        idx = {id(lib): j for j, lib in enumerate(scan.libraries)}
        by_dist: Dict[str, List[ExtensionLibrary]] = {}
        for lib in scan.libraries:
            by_dist.setdefault(lib.distribution, []).append(lib)
        for dist, libs in sorted(by_dist.items()):
            cuda = [lib for lib in libs if lib.skipped is None and (lib.fatbins or 0) > 0]
            unread = [lib for lib in libs if lib.skipped is not None]
            version = libs[0].version or ""
            if not cuda:
                if unread:
                    unjudged.append(f"{dist}: {len(unread)} libraries not read ({unread[0].skipped})")
                continue
            judged += 1
            for t in targets:
                verdict = {id(lib): _judge_lib(lib, t.cc) for lib in cuda}
                sass = [lib for lib in cuda if verdict[id(lib)] == "sass"]
                ptx = [lib for lib in cuda if verdict[id(lib)] == "ptx"]
                none = [lib for lib in cuda if verdict[id(lib)] == "none"]
                names = ", ".join(_lib_name(lib) for lib in (none or ptx)[:MAX_EVIDENCE])
                ev = [t.evidence] + _evidence(i, idx, none + ptx, t.cc)
                if not sass and not ptx:
                    sev = Severity.WARNING if unread else Severity.ERROR
                    more = (f"; {len(unread)} of its libraries were not read ({unread[0].skipped}), so this is "
                            "not certain") if unread else ""
                    findings.append(found(
                        "missing", sev, subject=py.executable,
                        summary=(f"{dist} {version} has no kernels for {_named(t)}: neither "
                                 f"SASS nor PTX that JITs to it in {names}{more}"),
                        detail=("Every CUDA call of this extension on that GPU fails with 'no kernel image is "
                                "available for execution on the device'. SASS sm_XY runs on compute capability "
                                "X.y with y >= Y; PTX compute_XY is JIT-compiled for any newer GPU. "
                                "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
                                "#binary-compatibility"),
                        evidence=ev, fix=_fix(ctx, py, dist, t.cc, False)))
                elif not sass:
                    findings.append(found.warning(
                        "ptx-only", subject=py.executable,
                        summary=(f"{dist} {version} has no SASS for {_named(t)}: {names} "
                                 "runs through PTX JIT-compiled by the driver on first use"),
                        detail=JIT_DETAIL, evidence=ev, fix=_fix(ctx, py, dist, t.cc, True)))
                elif none or ptx:
                    findings.append(found.info(
                        "partial", subject=py.executable,
                        summary=(f"{dist} {version}: {len(sass)} of its libraries have SASS for {_named(t)}; "
                                 f"{names}: " + ("no kernels (nor PTX) for it" if none else "only PTX")),
                        detail=("Packages that ship kernels for one GPU generation in their own library (vllm, "
                                "flash-attn 3) choose at run time; the code paths in those libraries fail (no "
                                "kernels) or JIT-compile (PTX only) on this GPU."),
                        evidence=ev))
    return findings, judged, unjudged
