"""Toolchain checks, which matter when building CUDA extensions: nvcc vs torch's CUDA, host compiler vs nvcc."""

from __future__ import annotations

from typing import List

from ..domain.variants import variant_of_cuda
from ..domain.versions import major_minor, mm_str
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command, cuda_toolkit_first, host_compiler_install
from ._util import torch_builds, torch_label
from .base import CheckContext, Findings, SkipCheck, registrar

CUDA_ARCHIVE = "https://developer.nvidia.com/cuda-toolkit-archive"
CHECKS: list = []
check = registrar(CHECKS)


# packages whose installation (or first use) compiles CUDA code with the nvcc on PATH
SOURCE_BUILT = ("flash-attn", "apex", "deepspeed", "xformers", "torch-scatter", "torch-sparse",
                "torch-cluster", "torch-spline-conv", "mmcv", "mmcv-full", "detectron2", "pytorch3d", "kaolin",
                "causal-conv1d", "mamba-ssm", "transformer-engine", "gsplat", "tiny-cuda-nn", "nvdiffrast")
CPP_EXT_DOC = "https://pytorch.org/docs/stable/cpp_extension.html"


NVCC_TORCH = Findings("toolchain.nvcc-torch", "NVCC_TORCH_CUDA_MISMATCH",
                      kinds=("major", "minor", "cuda-home-missing", "cuda-path-missing"))


@check("toolchain.nvcc-torch", "nvcc matches torch's CUDA (for building extensions)",
       categories=("NVCC_TORCH_CUDA_MISMATCH",))
def check_nvcc_torch(ctx: CheckContext) -> List[Finding]:
    tk = ctx.facts.toolkits.on_path
    envs = [(i, py) for i, py in torch_builds(ctx.facts) if py.torch and py.torch.cuda]
    if not envs:
        raise SkipCheck("no CUDA build of torch to compare nvcc with", not_applicable="no CUDA build of torch")
    var, value = _cuda_home(ctx)
    if var is not None:
        # torch.utils.cpp_extension (_find_cuda_home) takes CUDA_HOME, else CUDA_PATH, before the nvcc on PATH,
        # and builds with $CUDA_HOME/bin/nvcc: that toolkit is the one to judge
        problem = (ctx.facts.toolkits.env_problems or {}).get(var)
        if problem:
            return [_cuda_home_broken(ctx, envs, var, value, problem)]
        home = next((t for t in ctx.facts.toolkits.installed if t.found_via == var), None)
        if home is not None and home.nvcc_path:
            tk = home
    if tk is None:
        raise SkipCheck("no nvcc on PATH (only prebuilt wheels can be installed; nothing to compare)")
    if not tk.version:
        raise SkipCheck(f"nvcc at {tk.nvcc_path or tk.path} did not tell its version")
    findings = []
    for i, py in envs:
        t = py.torch
        nv, tv = major_minor(tk.version), major_minor(t.cuda)
        if not nv or not tv or nv == tv:
            continue
        affected = [p.name for p in py.packages if p.name in SOURCE_BUILT]
        major = nv[0] != tv[0]
        where = f" ({tk.nvcc_path or tk.path})" if (tk.nvcc_path or tk.path) else ""
        which = f"nvcc in {tk.found_via} ({tk.path})" if tk.found_via in ("CUDA_HOME", "CUDA_PATH") else "nvcc on PATH"
        who = (f"installed packages that compile with it: {', '.join(affected)}" if affected
               else "any extension built from source (flash-attn, apex, deepspeed ops, custom ops)")
        findings.append(NVCC_TORCH(
            "major" if major else "minor", Severity.WARNING if major else Severity.INFO,
            summary=(f"{which} is CUDA {tk.version}{where} but {torch_label(t)} was "
                     f"built with CUDA {t.cuda}: affects {who}"),
            detail=("torch.utils.cpp_extension refuses a different CUDA major ('The detected CUDA version (X) "
                    "mismatches the version that was used to compile PyTorch (Y)') and warns on a different "
                    "minor. Running prebuilt wheels is not affected."),
            evidence=[Evidence("toolkits.on_path.version" if which == "nvcc on PATH" else
                               f"toolkits.installed.{tk.found_via}.version", tk.version,
                               expected=f"CUDA {mm_str(t.cuda)}"),
                      Evidence(f"pythons[{i}].torch.cuda", t.cuda)],
            fix=_toolkit_first_fix(ctx, t.cuda, tk),
        ))
    return findings


def _torch_for_toolkit(ctx: CheckContext, cuda: str) -> str:
    """The other way out, when torch is built for this toolkit's CUDA at all: a toolkit newer than every torch
    build the matrix knows (CUDA 99.9) has no torch build to install."""
    try:
        variant = variant_of_cuda(cuda)
    except ValueError:
        return ""
    if any(variant in r.cuda_variants for r in ctx.compat.torch_releases()):
        return f", or install the torch build for CUDA {cuda} ({variant})"
    return f" (no torch build for CUDA {cuda} is in this matrix, as of {ctx.compat.as_of})"


HOST_COMPILER = Findings("toolchain.host-compiler", "HOST_COMPILER_TOO_NEW", kinds=("gcc-too-new",))


@check(HOST_COMPILER, "Host compiler accepted by nvcc")
def check_host_compiler(ctx: CheckContext) -> List[Finding]:
    tk = ctx.facts.toolkits.on_path
    host = ctx.facts.host
    if tk is None:
        raise SkipCheck("no nvcc on PATH")
    if not tk.version:
        raise SkipCheck(f"nvcc at {tk.nvcc_path or tk.path} did not tell its version")
    if not host.gcc_version:
        raise SkipCheck("host gcc version unknown")
    limit = ctx.compat.max_host_compiler(tk.version, "gcc")
    if limit is None:
        raise SkipCheck(f"CUDA {tk.version}'s host-compiler limit is not in this matrix (as of {ctx.compat.as_of})")
    max_major, source = limit
    gmm = major_minor(host.gcc_version)
    if not gmm or gmm[0] <= max_major:
        return []
    return [HOST_COMPILER.warning(
        "gcc-too-new",
        f"gcc {host.gcc_version} is newer than CUDA {tk.version}'s nvcc accepts (gcc <= {max_major})",
        detail=("nvcc checks the host compiler in crt/host_config.h and stops with 'unsupported GNU version! gcc "
                f"versions later than {max_major} are not supported'. Only building CUDA code is affected."),
        evidence=[Evidence("host.gcc_version", host.gcc_version, expected=f"<= {max_major}", source=source),
                  Evidence("toolkits.on_path.version", tk.version)],
        fix=Fix(f"Install gcc {max_major} and point nvcc at it (or use a newer CUDA toolkit)",
                host_compiler_install(ctx.facts, max_major)),
    )]


def _cuda_home(ctx: CheckContext):
    """(variable, value) torch's extension builds take the toolkit from: CUDA_HOME, else CUDA_PATH; (None, None)."""
    tks = ctx.facts.toolkits
    if tks.cuda_home_env:
        return "CUDA_HOME", tks.cuda_home_env
    if tks.cuda_path_env:
        return "CUDA_PATH", tks.cuda_path_env
    return None, None


def _best_toolkit(ctx: CheckContext, cuda: str):
    """The toolkit envdoctor found that suits torch's CUDA best: the same major.minor, then the same major, then
    the one nvcc on PATH belongs to; only toolkits with an nvcc."""
    tks = ctx.facts.toolkits
    usable = [t for t in tks.installed if t.nvcc_path and t.path and t.found_via not in ("CUDA_HOME", "CUDA_PATH")]
    if tks.on_path is not None and tks.on_path.path and not any(t.path == tks.on_path.path for t in usable):
        usable.append(tks.on_path)
    want = major_minor(cuda)
    for same in (lambda t: major_minor(t.version) == want,
                 lambda t: want is not None and major_minor(t.version) is not None and major_minor(t.version)[0] == want[0],
                 lambda t: tks.on_path is not None and t.path == tks.on_path.path):
        hit = next((t for t in usable if same(t)), None)
        if hit is not None:
            return hit
    return None


def _toolkit_first_fix(ctx: CheckContext, cuda: str, tk) -> Fix:
    """Put a toolkit of torch's CUDA first: the one installed here (its own path), else install one first; never
    an export of a directory that does not exist (the default /usr/local/cuda-X.Y is only where it would go)."""
    want = mm_str(cuda)
    best = _best_toolkit(ctx, cuda)
    also = _torch_for_toolkit(ctx, mm_str(tk.version))
    if best is not None and best.path and major_minor(best.version) == major_minor(cuda):
        return Fix(f"Before building extensions, put the CUDA {want} toolkit installed at {best.path} first on PATH"
                   + also, [cuda_toolkit_first(want or "", best.path)], CPP_EXT_DOC)
    return Fix(f"Before building extensions, install a CUDA {want} toolkit (none is installed here: "
               f"{CUDA_ARCHIVE}) and put it first on PATH (CUDA_HOME and PATH to its directory)" + also,
               [], CPP_EXT_DOC)


def _cuda_home_broken(ctx: CheckContext, envs, var: str, value: str, problem: str) -> Finding:
    i, py = envs[0]
    t = py.torch
    best = _best_toolkit(ctx, t.cuda)
    if best is not None:
        fix = Fix(f"Point {var} at the CUDA {best.version} toolkit that is installed ({best.path}), where it is set "
                  "(the shell profile, the job script, the container's ENV)",
                  [cuda_toolkit_first(mm_str(best.version) or "", best.path, var)], CPP_EXT_DOC)
    else:
        # no toolkit here to point it at: unset it (an export of a directory that does not exist fixes nothing)
        fix = Fix(f"Unset {var} where it is set (no CUDA toolkit is installed here), or install a CUDA "
                  f"{mm_str(t.cuda)} toolkit ({CUDA_ARCHIVE}) and point {var} at it", [command("unset", var)],
                  CPP_EXT_DOC)
    evidence = [Evidence(f"toolkits.{var.lower()}_env", value, expected="a CUDA toolkit directory with bin/nvcc",
                         source=problem),
                Evidence(f"pythons[{i}].torch.cuda", t.cuda)]
    if best is not None:
        evidence.append(Evidence("toolkits.installed", best.path, source=f"CUDA {best.version_full or best.version}"))
    return NVCC_TORCH.error(
        "cuda-home-missing" if var == "CUDA_HOME" else "cuda-path-missing",
        summary=(f"{var}={value} is not a CUDA toolkit ({problem}), and torch.utils.cpp_extension builds every CUDA "
                 f"extension with {var}'s bin/nvcc: flash-attn, apex, deepspeed ops and custom ops fail to build"
                 + (f" (a CUDA {best.version} toolkit is installed at {best.path})" if best is not None else "")),
        detail=("torch takes CUDA_HOME, else CUDA_PATH, before the nvcc on PATH (torch/utils/cpp_extension.py, "
                "_find_cuda_home), so a variable left over from an older toolkit (a .bashrc line carried across an "
                "upgrade) breaks extension builds even when a working nvcc is on PATH. Prebuilt wheels still run."),
        evidence=evidence,
        fix=fix,
    )
