"""Paste checks on CUDA majors: NVIDIA library wheels installed for two CUDA majors at once, and conda solves that
put nvidia-channel CUDA libraries of one major under a torch (pytorch-cuda) of another. Split from
diagnose_paste.py (one module per group of checks, under the size limit); registered right after it, so the
display order is unchanged."""

from __future__ import annotations

import re
from typing import Any, List, Optional

from ..domain.variants import (
    cuda_of_variant,
    nvidia_wheel,
    variant_tag,
)
from ..domain.versions import base_version, release
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command
from ._paste import nvidia_two_majors, paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


def _majors_fix(ctx: CheckContext, names: List[str]) -> List[str]:
    from ..remedies import pip_command, pip_install
    from ..remedies.python import installer_for

    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    # one pinned install of the wheels for torch's own CUDA major rewrites the files they share in
    # site-packages/nvidia/<lib>/lib: torch stays importable throughout, and no other torch is downloaded
    # (uninstalling first and reinstalling an unpinned torch did both; issue 17)
    keep = _torch_major_wheels(ctx, py, names)
    if not keep:
        return []
    return [pip_install(ctx.facts, py, keep, None, force=True, no_deps=True), pip_command(installer_for(ctx.facts, py), "check")]


def _torch_major_wheels(ctx: CheckContext, py: Any, names: List[str]) -> List[str]:
    """``name==version`` of the wheels among ``names`` for the CUDA major torch was built for: the version torch
    pins, else the installed one (what torch resolved with)."""
    from ..domain.variants import nvidia_wheel, variant_cuda_major

    if py is None:
        return []
    t = py.torch
    pkg = py.package("torch")
    major = None
    if t is not None and t.cuda:
        major = int(str(t.cuda).split(".")[0]) if str(t.cuda).split(".")[0].isdigit() else None
    if major is None:
        tag = variant_tag((t.version if t else None) or (pkg.version if pkg else None) or "")
        major = variant_cuda_major(tag) if tag else None
    if major is None and pkg is not None and not variant_tag(pkg.version):
        # no local tag: a PyPI wheel, whose CUDA is the release's default variant (compat_data/torch.json)
        rel = ctx.compat.torch_release(pkg.version)
        major = variant_cuda_major(rel.default_variant) if rel is not None and rel.default_variant else None
    if major is None:
        return []
    pins = {}
    for line in (pkg.requires or []) if pkg else []:
        head = line.split(";")[0].strip().replace(" ", "")
        if "==" in head:
            name, version = head.split("==", 1)
            pins[name.lower().replace("_", "-")] = version.strip("()")
    out = []
    for name in names:
        w = nvidia_wheel(name)
        if w is None or w[1] != major:
            continue
        version = pins.get(name) or next((p.version for p in py.packages if p.name == name), None)
        if version:
            out.append(f"{name}=={version}")
    return out


NVIDIA_MAJORS = Findings("packages.nvidia-majors", "CUDA_VARIANT_MIXED", kinds=("two-majors",))


@check("packages.nvidia-majors", "Each NVIDIA library wheel installed for one CUDA major",
       categories=("CUDA_VARIANT_MIXED",))
def check_nvidia_majors(ctx: CheckContext) -> List[Finding]:
    """nvidia-X-cu11 and nvidia-X-cu12 both unpack into site-packages/nvidia/X/lib: the last installed wins and
    torch may load a copy that lacks symbols its build needs. An error when a message names that library."""
    if not ctx.facts.pythons or not any(py.packages for py in ctx.facts.pythons):
        raise SkipCheck("no package list")
    if not any(nvidia_wheel(p.name) for py in ctx.facts.pythons for p in py.packages):
        # nothing to judge (a CPU torch, or a paste naming torch alone): no pass without evidence
        raise SkipCheck("no NVIDIA library wheel (nvidia-*-cuNN) in the package list",
                        not_applicable="no NVIDIA library wheels")
    libs = nvidia_two_majors(ctx.facts)
    if not libs:
        return []
    msgs = ctx.facts.paste.messages if ctx.facts.paste else []
    named = [lib for lib in libs if any(re.search(rf"lib{re.escape(lib.split('-')[0])}|{re.escape(lib)}", m, re.I)
                                        and ("undefined symbol" in m or "ImportError" in m or "cannot open" in m)
                                        for m in msgs)]
    out = []
    for lib in libs:
        names = sorted(p.name for py in ctx.facts.pythons for p in py.packages
                       if p.name.lower().replace("_", "-").startswith(f"nvidia-{lib}-cu"))
        out.append(NVIDIA_MAJORS(
            "two-majors", Severity.ERROR if lib in named else Severity.WARNING, confidence="high",
            summary=f"NVIDIA library {lib} is installed for two CUDA majors ({', '.join(names)}): one overwrites the "
                    "other in site-packages/nvidia/" + lib.split("-")[0] + "/lib",
            evidence=[Evidence("pythons[0].packages", names, expected="one CUDA major per NVIDIA library")],
            fix=Fix("Reinstall the wheels of the CUDA major torch uses, pinned, over the shared files (torch stays "
                    "importable; the other major's wheel can stay installed)", _majors_fix(ctx, names)),
        ))
    return out


# conda packages of NVIDIA's channel whose version's major is the CUDA major they belong to: every cuda-*
# component (cuda-cudart 11.8.89, cuda-nvrtc 12.1.105), libcublas (11.11.x is CUDA 11.8, 12.1.x is CUDA 12.1),
# libcusparse (11.7.x is CUDA 11.8, 12.x is CUDA 12) and libnvjitlink (12.x only); cuFFT/cuRAND/cuSOLVER count
# their own majors and are left out (https://anaconda.org/nvidia/repo)
_CONDA_CUDA_MAJOR = re.compile(r"^(?:cuda-(?!version$|python$)[a-z0-9-]+|libcublas(?:-dev)?|libcusparse(?:-dev)?|"
                               r"libnvjitlink(?:-dev)?)$")


def _conda_torch_cuda(py: Any) -> Optional[tuple]:
    """(CUDA major, what says so) of the torch a conda environment asks for: pytorch-cuda, or torch's build."""
    pc = py.package("pytorch-cuda")
    if pc is not None and release(pc.version):
        return release(pc.version)[0], f"pytorch-cuda {pc.version}"
    t = py.package("torch")
    cuda = cuda_of_variant(t.variant) if t is not None and t.variant else None
    if cuda:
        return int(cuda.split(".")[0]), f"torch {t.version} ({t.variant_evidence or t.variant})"
    return None


CONDA_MAJORS = Findings("diagnose.conda-cuda-majors", "CUDA_VARIANT_MIXED", kinds=("mixed",))


@check("diagnose.conda-cuda-majors", "A conda solve keeps NVIDIA's CUDA libraries on torch's CUDA major",
       categories=("CUDA_VARIANT_MIXED",), applies=PASTE_ONLY)
def check_conda_cuda_majors(ctx: CheckContext) -> List[Finding]:
    """A conda plan or list whose nvidia-channel CUDA libraries (cuda-*, libcublas, libcusparse ...) belong to
    another CUDA major than the pytorch-cuda (or torch build) they sit under: the solve mixed two CUDA majors,
    and torch fails to load the library of its own major (an ImportError naming it follows from this)."""
    paste_or_skip(ctx)
    out: List[Finding] = []
    judged = False
    for i, py in enumerate(ctx.facts.pythons):
        libs = [p for p in py.packages if p.installer == "conda" and _CONDA_CUDA_MAJOR.match(p.name)
                and release(p.version)]
        if not libs:
            continue
        want = _conda_torch_cuda(py)
        majors = sorted({release(p.version)[0] for p in libs})
        if want is None and len(majors) < 2:
            continue
        judged = True
        major, why = want if want else (None, "")
        other = [p for p in libs if major is not None and release(p.version)[0] != major] if major is not None \
            else [p for p in libs if release(p.version)[0] != majors[-1]]
        if not other:
            continue
        named = [m for m in (ctx.facts.paste.messages if ctx.facts.paste else [])
                 if any(re.search(rf"\b{re.escape(p.name.split('-dev')[0].replace('cuda-', ''))}", m, re.I)
                        for p in other) and re.search(r"\.so|\.dll|cannot open|undefined symbol", m)]
        listing = ", ".join(f"{p.name} {p.version}" for p in other[:6])
        summary = (f"The conda solve mixes CUDA majors: {listing} under {why} (CUDA {major})" if major is not None
                   else f"The conda environment holds NVIDIA CUDA libraries of CUDA majors {majors}: {listing}")
        ev = [Evidence(f"pythons[{i}].packages.{p.name}", p.version, expected=f"CUDA {major}.x" if major else None)
              for p in other[:6]]
        if want:
            ev.insert(0, Evidence(f"pythons[{i}].packages.pytorch-cuda", why))
        ev += [Evidence("paste.messages", m[:300]) for m in named[:2]]
        pc = py.package("pytorch-cuda")
        target = (f"pytorch-cuda={pc.version}" if pc is not None and pc.version else
                  f"pytorch-cuda={major}" if major is not None else "pytorch-cuda=<one CUDA version>")
        t = py.package("pytorch") or py.package("torch")
        version = base_version(t.version) if t is not None and t.version else None
        torch_spec = f"pytorch={version}" if version else "pytorch"  # keep the release: only the CUDA solve changes
        out.append(CONDA_MAJORS(
            "mixed", Severity.ERROR if (want or named) else Severity.WARNING,
            confidence="high" if want else "medium", summary=summary,
            detail="conda resolved NVIDIA-channel libraries for another CUDA major than torch's; torch then loads "
                   "a library of the wrong major (or none), and `import torch` fails naming it.",
            evidence=ev,
            fix=Fix("Recreate the environment from one CUDA major, pinning it and taking pytorch and the CUDA "
                    "libraries from the same channels (strict channel priority)",
                    [command("conda", "install", torch_spec, target, "-c", "pytorch", "-c", "nvidia",
                             "--strict-channel-priority"),
                     "conda list | grep -e cuda -e cublas -e cusparse   # one major only"],
                    "https://pytorch.org/get-started/previous-versions/")))
    if not judged:
        raise SkipCheck("no conda CUDA libraries with torch's CUDA in the paste")
    return out
