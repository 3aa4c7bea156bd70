"""packages.extension-build: a compiled torch extension judged by what its binary says it was built for (the
torch libraries and CUDA runtime it links, the torch C++ symbols it needs, the build metadata it ships, and its
own load next to the imported torch), not by its metadata pins.

The facts are ``PythonEnv.extensions`` (the inspect payload, _payload/extension_build.py). The load is its own
evidence: an extension whose pins all match torch but whose library does not load still fails here, so a fix
that only changes versions is not called a success until the library loads.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..domain.versions import base_version, major_minor
from ..facts import ExtensionBuild, ExtensionLibrary, Package, PythonEnv
from ..findings import Evidence, Finding, Severity
from ..remedies.extensions import extension_fix
from ._util import torch_envs_or_skip
from .base import EVERYWHERE, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

CATEGORY = "THIRD_PARTY_EXTENSION_MISMATCH"
# strongest evidence first: the kind of a distribution's finding is its first rule that holds
EXTENSION_BUILD = Findings("packages.extension-build", CATEGORY,
                           kinds=("does-not-load", "unresolved-symbols", "torch-library", "cuda-runtime",
                                  "built-for"))
_CUDART = re.compile(r"^libcudart\.so\.(\d+)")
_TORCH_LIB = re.compile(r"^lib(?:c10|torch|shm)[A-Za-z0-9_]*\.so$")
MAX_LISTED = 6
DETAIL = ("A compiled extension links torch's C++ symbols (c10::, at::, torch::) and one CUDA runtime; built for "
          "another torch, the loader refuses it ('undefined symbol: _ZN3c10...') and the package either fails "
          "to import or, as xformers and torchvision do, imports with its ops missing and falls back or fails at "
          "the first call. Its metadata pins do not show this: a --no-deps install, a wheel cached from another "
          "torch, or a source build against an older torch all carry matching pins.")


def _name(lib: ExtensionLibrary) -> str:
    return (lib.path or "?").rsplit("/", 1)[-1]


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1][:240] if text.strip() else text


def _judge_library(lib: ExtensionLibrary, torch_cuda_major: Optional[int],
                   torch_cpu: bool) -> List[Tuple[str, str, str]]:
    """(kind, what it says, evidence field) for every rule one library breaks."""
    out: List[Tuple[str, str, str]] = []
    if lib.loaded is False:
        out.append(("does-not-load", f"{_name(lib)} does not load: {_last_line(lib.load_error or 'no error text')}",
                    "load_error"))
    works = lib.loaded is True  # the loader's verdict beats what the files predict
    if not works and lib.unresolved_count:
        first = (lib.unresolved_symbols or ["?"])[0]
        out.append(("unresolved-symbols", f"{_name(lib)} needs {lib.unresolved_count} torch symbol(s) the installed "
                    f"torch does not define (first: {first})", "unresolved_symbols"))
    shipped = set(lib.symbols_checked_against or [])
    for needed in lib.needed or []:
        if not works and shipped and _TORCH_LIB.match(needed) and needed not in shipped:
            what = " (a CUDA build's library; this torch is a CPU build)" if torch_cpu and "cuda" in needed else ""
            out.append(("torch-library", f"{_name(lib)} links {needed}, which the installed torch does not ship"
                        + what, "needed"))
        m = _CUDART.match(needed)
        if m and torch_cuda_major is not None and int(m.group(1)) != torch_cuda_major:
            out.append(("cuda-runtime", f"{_name(lib)} links the CUDA {m.group(1)} runtime ({needed}); torch is built "
                        f"with CUDA {torch_cuda_major}", "needed"))
    return out


def _build_mismatch(build: Optional[ExtensionBuild], tver: str) -> Optional[str]:
    if build is None or not build.torch or not tver:
        return None
    if base_version(build.torch) == base_version(tver):
        return None
    return f"its build metadata ({build.file.rsplit('/', 1)[-1] if build.file else 'file'}) says torch {build.torch}"


def _judged(scan) -> bool:
    return any(lib.needed is not None or lib.loaded is not None for lib in scan.libraries) or bool(scan.builds)


@check("packages.extension-build", "Compiled extensions' binaries are built for the installed torch",
       categories=(CATEGORY,), applies=EVERYWHERE)
def check_extension_build(ctx: CheckContext) -> List[Finding]:
    envs = torch_envs_or_skip(ctx.facts)
    findings: List[Finding] = []
    judged = False
    read = False
    for i, py in envs:
        scan = py.extensions
        if scan is None:
            continue
        read = read or bool(scan.libraries)
        if not _judged(scan):
            continue
        judged = True
        findings += _judge_env(ctx, i, py)
    if not judged:
        if read:
            raise SkipCheck("the extensions' libraries were read for their GPU kernels only, not for what they link "
                            "or load (facts from an older envdoctor)")
        raise SkipCheck("no compiled extension that depends on torch (flash-attn, xformers, ...) installed: "
                        "nothing to judge")
    return findings


def _judge_env(ctx: CheckContext, i: int, py: PythonEnv) -> List[Finding]:
    t = py.torch
    tver = (py.package("torch").version if py.package("torch") else None) or t.version or ""
    mm = major_minor(t.cuda)
    cuda_major = mm[0] if mm else None
    torch_cpu = not t.cuda and not t.hip
    scan = py.extensions
    idx = {id(lib): j for j, lib in enumerate(scan.libraries)}
    by_dist: Dict[str, List[ExtensionLibrary]] = {}
    for lib in scan.libraries:
        if lib.skipped is None:
            by_dist.setdefault(lib.distribution, []).append(lib)
    builds = {b.distribution: b for b in scan.builds or []}
    out: List[Finding] = []
    for dist in sorted(set(by_dist) | set(builds)):
        libs = by_dist.get(dist, [])
        broken = [(lib, rule) for lib in libs for rule in _judge_library(lib, cuda_major, torch_cpu)]
        meta = _build_mismatch(builds.get(dist), tver)
        if meta and libs and all(lib.loaded is True for lib in libs) and not broken:
            meta = None  # built for another torch, and still loads: a stable-ABI build (xformers >= 0.0.34)
        if not broken and not meta:
            continue
        kinds = [k for _lib, (k, _t, _f) in broken] + (["built-for"] if meta else [])
        kind = min(kinds, key=EXTENSION_BUILD.kinds.index)
        severity = Severity.WARNING if kind == "built-for" or (
            kind == "cuda-runtime" and all(lib.loaded is True for lib in libs)) else Severity.ERROR
        pkg = py.package(dist) or Package(name=dist, version=(libs[0].version if libs else None) or "")
        said = list(dict.fromkeys(text for _lib, (_k, text, _f) in broken)) + ([meta] if meta else [])
        shown = said[:MAX_LISTED] + ([f"and {len(said) - MAX_LISTED} more"] if len(said) > MAX_LISTED else [])
        evidence = [Evidence(f"pythons[{i}].torch.version", t.version, source="the imported torch" if t.imported
                             else "torch's files")]
        for lib, (_k, _text, fld) in broken:
            value = getattr(lib, fld)
            evidence.append(Evidence(f"pythons[{i}].extensions.libraries[{idx[id(lib)]}].{fld}", value,
                                     expected="loads next to torch" if fld == "load_error" else None,
                                     source=lib.path))
        b = builds.get(dist)
        if meta and b is not None:
            evidence.append(Evidence(f"pythons[{i}].extensions.builds.{dist}.torch", b.torch,
                                     expected=f"torch {base_version(tver)}", source=b.file))
        out.append(EXTENSION_BUILD(
            kind, severity, subject=py.executable,
            summary=f"{dist} {pkg.version} is not built for torch {t.version}: " + "; ".join(shown),
            detail=DETAIL, evidence=evidence,
            fix=extension_fix(ctx.facts, py, pkg, b.torch if b is not None else None)))
    return out
