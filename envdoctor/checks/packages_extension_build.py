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
from ..model.facts import ExtensionBuild, ExtensionLibrary, Package, PythonEnv
from ..model.findings import Evidence, Finding, Severity
from ..remedies.extensions import extension_fix
from ..remedies.torch_plan import COMPANIONS
from ._companions import companion_set_fix
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
DETAIL = ("A compiled extension links torch's C++ symbols (c10::, at::, torch::) and one CUDA runtime; built for "
          "another torch, the loader refuses it ('undefined symbol: _ZN3c10...') and the package either fails "
          "to import or, as xformers and torchvision do, imports with its ops missing and falls back or fails at "
          "the first call. Its metadata pins do not show this: a --no-deps install, a wheel cached from another "
          "torch, or a source build against an older torch all carry matching pins.")


def _name(lib: ExtensionLibrary) -> str:
    return (lib.path or "?").rsplit("/", 1)[-1]


def _loader_says(lib: ExtensionLibrary) -> str:
    """The loader's reason without the file it names first ("/x/_C.so: undefined symbol: ..." -> "undefined ...")."""
    text = (lib.load_error or "no error text").strip().splitlines()[-1]
    if lib.path and text.startswith(lib.path + ": "):
        text = text[len(lib.path) + 2:]
    return text[:240]


# the pre-C++11 std::string mangles as the substitution "Ss" (const std::string&: RKSs); the C++11 one as
# std::__cxx11::basic_string (https://gcc.gnu.org/onlinedocs/libstdc++/manual/using_dual_abi.html)
_OLD_ABI_STRING = re.compile(r"(?:RK|PK|R|P|E|I|_)Ss")


def _abi_hint(symbols: List[str], cxx11: Optional[bool]) -> str:
    if cxx11 is True and any(_OLD_ABI_STRING.search(x) and "__cxx11" not in x for x in symbols):
        return ("; a pre-C++11-ABI build (std::string mangled Ss) next to a torch built with the C++11 ABI "
                "(_GLIBCXX_USE_CXX11_ABI=1)")
    if cxx11 is False and any("__cxx11" in x for x in symbols):
        return "; a C++11-ABI build next to a torch built with the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0)"
    return ""


def _judge_library(lib: ExtensionLibrary, torch_cuda_major: Optional[int], torch_cpu: bool,
                   cxx11: Optional[bool]) -> List[Tuple[str, str, List[str]]]:
    """(kind, what it says, evidence fields) for every rule one library breaks; the text names no file (libraries
    that say the same are listed together)."""
    out: List[Tuple[str, str, List[str]]] = []
    symbols = list(lib.unresolved_symbols or []) + re.findall(r"undefined symbol: (\S+)", lib.load_error or "")
    hint = _abi_hint(symbols, cxx11)
    works = lib.loaded is True  # the loader's verdict beats what the files predict
    if lib.loaded is False:
        out.append(("does-not-load", f"do(es) not load: {_loader_says(lib)}" + hint,
                    ["load_error"] + (["unresolved_symbols"] if lib.unresolved_count else [])))
        hint = ""
    elif not works and lib.unresolved_count:
        first = (lib.unresolved_symbols or ["?"])[0]
        out.append(("unresolved-symbols", f"need(s) {lib.unresolved_count} torch symbol(s) the installed torch does "
                    f"not define (first: {first})" + hint, ["unresolved_symbols"]))
    shipped = set(lib.symbols_checked_against or [])
    # a library that links nothing of torch is loaded by its package's own choice (bitsandbytes ships one per CUDA
    # major, libbitsandbytes_cuda118.so ... _cuda124.so, and picks the one of torch's CUDA at run time)
    if not lib.torch_symbols and not any(_TORCH_LIB.match(n) for n in lib.needed or []):
        return out
    for needed in lib.needed or []:
        if not works and shipped and _TORCH_LIB.match(needed) and needed not in shipped:
            what = " (a CUDA build's library; this torch is a CPU build)" if torch_cpu and "cuda" in needed else ""
            out.append(("torch-library", f"link(s) {needed}, which the installed torch does not ship" + what,
                        ["needed"]))
        m = _CUDART.match(needed)
        if m and torch_cuda_major is not None and int(m.group(1)) != torch_cuda_major:
            out.append(("cuda-runtime", f"link(s) the CUDA {m.group(1)} runtime ({needed}); torch is built with "
                        f"CUDA {torch_cuda_major}", ["needed"]))
    return out


def _names(libs: List[ExtensionLibrary]) -> str:
    names = [_name(lib) for lib in libs]
    return ", ".join(names) if len(names) <= 3 else f"{len(names)} libraries ({names[0]} ... {names[-1]})"


def _verb(text: str, n: int) -> str:
    """ "do(es) not load" for one library or several."""
    return re.sub(r"\b(\w+)\((\w+)\)", lambda m: m.group(1) + (m.group(2) if n == 1 else ""), text, count=1)


def _release(text: Optional[str]) -> Tuple[int, ...]:
    """The release numbers of a version as written ("2.13" -> (2, 13), "2.4.1+cu124" -> (2, 4, 1))."""
    parts = []
    for part in (base_version(text or "") or "").split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def _build_mismatch(build: Optional[ExtensionBuild], tver: str) -> Optional[str]:
    """What the build metadata says against the installed torch, at the precision it records: deepspeed writes
    torch's major.minor ("2.13") and compares it with the running torch's major.minor, so "2.13" is torch 2.13.0
    (op_builder/builder.py, validate_torch_version). A build that compiled nothing (deepspeed's installed_ops all
    false: every op is JIT-compiled against the running torch at first use) or recorded no torch ("0.0": built
    without torch) is not judged: its metadata binds nothing."""
    if build is None or not build.torch or not tver:
        return None
    if build.compiled is not None and not build.compiled:
        return None
    built, have = _release(build.torch), _release(tver)
    if not built or not any(built) or not have:
        return None
    if have[:len(built)] == built:
        return None
    ops = build.compiled or []
    compiled = (f" for its pre-compiled {', '.join(ops[:4])}" + (f" (+{len(ops) - 4} more)" if len(ops) > 4 else "")
                if ops else "")
    return (f"its build metadata ({build.file.rsplit('/', 1)[-1] if build.file else 'file'}) says torch "
            f"{build.torch}{compiled}")


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
                        "nothing to judge", not_applicable="no torch extensions")
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
        broken = [(lib, rule) for lib in libs for rule in _judge_library(lib, cuda_major, torch_cpu, t.cxx11_abi)]
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
        # libraries that say the same are one line ("10 libraries (_op0.so ... _op9.so) do not load: ...")
        same: Dict[str, List[ExtensionLibrary]] = {}
        for lib, (_k, text, _f) in broken:
            same.setdefault(text, []).append(lib)
        said = [f"{_names(group)} " + _verb(text, len(group)) for text, group in same.items()] + (
            [meta] if meta else [])
        head = "; ".join(said) if len(said) <= 2 else f"{said[0]} (and {len(said) - 1} more, listed)"
        # every file named: the lines when there are several, else the libraries a line counted
        many = list(dict.fromkeys(_name(lib) for group in same.values() for lib in group))
        items = said if len(said) > 2 else many if len(many) > 3 else []
        evidence = [Evidence(f"pythons[{i}].torch.version", t.version, source="the imported torch" if t.imported
                             else "torch's files")]
        for lib, (_k, _text, fields) in broken:
            for fld in fields:
                evidence.append(Evidence(f"pythons[{i}].extensions.libraries[{idx[id(lib)]}].{fld}",
                                         getattr(lib, fld), expected="loads next to torch" if fld == "load_error"
                                         else None, source=lib.path))
        b = builds.get(dist)
        if meta and b is not None:
            evidence.append(Evidence(f"pythons[{i}].extensions.builds.{dist}.torch", b.torch,
                                     expected=f"torch {base_version(tver)}", source=b.file))
        out.append(EXTENSION_BUILD(
            kind, severity, subject=py.executable,
            summary=f"{dist} {pkg.version} is not built for torch {t.version}: {head}",
            detail=DETAIL, evidence=evidence, items=items,
            # a companion has a build for every torch on PyTorch's index: the paired set from torch's own index,
            # the command packages.cuda-variant gives when the variants differ (then this is its consequence)
            fix=companion_set_fix(ctx, py) if dist in COMPANIONS else
            extension_fix(ctx.facts, py, pkg, b.torch if b is not None else None)))
    return out
