"""A driver older than the CUDA the paste names for its program, where torch's CUDA is not in the paste (issue 42,
helper archdriver).

driver.cuda-compat judges the driver against torch's CUDA. Many reports run something else (a container built for
"CUDA 13", a conda package for CUDA 9.2, a TensorFlow image that "requires CUDA10") and show the driver beside it:
its version ("default driver is 384.145") or only the CUDA ceiling nvidia-smi prints for it ("nvidia-smi show CUDA
Version: 12.4"). The minimum driver comes from compat_data/cuda_driver.json: before CUDA 11 every minor version has
its own (no minor-version compatibility); from CUDA 11 a major's runtimes all run on that major's minor-version
compatibility floor (525.60.13 for 12.x), so only a driver below the floor, or a ceiling of an older major, is too
old for certain. A driver between the floor and the exact minimum runs the program under minor-version
compatibility: not judged here.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..domain.versions import major_minor, version_ge
from ..model.findings import Evidence, Finding, Fix
from ._paste import paste_or_skip
from ._paste_roles import prov
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

NAMED = Findings("diagnose.driver-named-cuda", "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                 kinds=("below-minimum", "ceiling-below-major"))
# a CUDA ceiling read from nvidia-smi's banner or a line that names nvidia-smi or the driver; an issue template's
# bare "CUDA Version: 11.3" is as often the toolkit
_CEILING_SOURCE = re.compile(r"nvidia-smi|driver", re.I)
SETTLE = "nvidia-smi"


def _key(v: str) -> Tuple[int, int]:
    return major_minor(v) or (0, 0)  # (the versions here come from the paste's readers: always numbers)


def _needed(ctx: CheckContext) -> Tuple[str, str]:
    hit = prov(ctx.facts).get("paste.cuda_needed") or {}
    value = str(hit.get("value") or "")
    if not value:
        raise SkipCheck("the paste names no CUDA version for its program")
    return value, str(hit.get("reader") or hit.get("where") or "")


def _torch_cuda_known(ctx: CheckContext) -> bool:
    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    t = py.torch if py else None
    pkg = py.package("torch") if py else None
    return bool((t is not None and (t.cuda or "+cu" in (t.version or ""))) or
                (pkg is not None and "+cu" in (pkg.version or "")))


def _by_version(ctx: CheckContext, driver: str, needed: str, os: str) -> Optional[Tuple[str, str, str]]:
    """(kind, minimum, source) when the driver version is below what the needed CUDA runs on."""
    major = _key(needed)[0]
    if major >= 11:
        floor = ctx.compat.minor_compat_floor(major, os)
        if floor and version_ge(driver, floor[0]) is False:
            return "below-minimum", floor[0], f"{floor[1]} (every CUDA {major}.x runtime)"
        return None
    req = ctx.compat.cuda_requirement(needed if "." in needed else f"{needed}.0", os)
    if req and req.min_driver and version_ge(driver, req.min_driver) is False:
        return "below-minimum", req.min_driver, str(req.source)
    return None


@check(NAMED, "Driver vs the CUDA the paste names for its program (torch's CUDA not in the paste)")
def check_driver_named_cuda(ctx: CheckContext) -> List[Finding]:
    paste_or_skip(ctx)
    facts = ctx.facts
    if facts.host.wsl:
        raise SkipCheck("under WSL the Windows driver serves CUDA; its number is not the Linux minimum's")
    if _torch_cuda_known(ctx):
        raise SkipCheck("torch's CUDA is in the paste (driver.cuda-compat judges it)")
    needed, needed_where = _needed(ctx)
    d = facts.driver
    os = "windows" if (facts.host.os or "").lower().startswith("windows") else "linux"
    evidence = [Evidence("paste.cuda_needed", needed, source=needed_where)]
    if d.version:
        try:
            got = _by_version(ctx, d.version, needed, os)
        except Exception:  # noqa: BLE001 - no CUDA table: nothing to compare with
            got = None
        if got is None:
            return []
        kind, minimum, source = got
        summary = (f"Driver {d.version} is older than {minimum}, the least driver CUDA {needed} runs on; the paste "
                   f"names CUDA {needed} for its program")
        evidence.insert(0, Evidence("driver.version", d.version, expected=f">= {minimum}", source=source))
    else:
        ceiling = d.cuda_driver_version
        where = str((prov(facts).get("driver.cuda_driver_version") or {}).get("reader") or "")
        if not ceiling or not _CEILING_SOURCE.search(where):
            raise SkipCheck("neither the driver's version nor nvidia-smi's CUDA ceiling is in the paste")
        older = _key(ceiling)[0] < _key(needed)[0] if _key(needed)[0] >= 11 else _key(ceiling) < _key(needed)
        if not older:
            return []
        kind = "ceiling-below-major"
        why = ("a runtime of a newer major needs a newer driver (minor-version compatibility stays within a major)"
               if _key(needed)[0] >= 11 else "before CUDA 11 each version needs its own minimum driver")
        summary = (f"The driver supports CUDA {ceiling} at most (nvidia-smi) and the paste names CUDA {needed} for "
                   f"its program: {why}")
        evidence.insert(0, Evidence("driver.cuda_driver_version", ceiling, expected=f">= {needed}", source=where))
    evidence.append(Evidence("paste.settle", SETTLE))
    return [NAMED.warning(
        kind, confidence="medium", summary=summary,
        detail=("The driver runs CUDA programs up to its own CUDA version (from CUDA 11 on, every runtime of a "
                "major it reaches through minor-version compatibility). The CUDA version is read from the paste's "
                "words (an image, package or toolkit it names), so check that it is what the failing program was "
                "built with. A container cannot bring its own kernel driver: the host's must be upgraded (or the "
                "workload placed on a host whose driver is new enough)."),
        evidence=evidence,
        fix=Fix("Upgrade the host's NVIDIA driver to one that supports the program's CUDA (or use a build of the "
                "program for the CUDA the driver supports)", [SETTLE],
                "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"),
    )]


TOOLKIT = Findings("diagnose.nvcc-above-driver", "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                   kinds=("newer-major", "newer-minor"))


def _ceiling(ctx: CheckContext) -> Tuple[Optional[str], str]:
    """The driver's CUDA ceiling: nvidia-smi's (from its banner or a line naming nvidia-smi or the driver), else
    the one cuda_driver.json's driver_branches give for the driver's branch."""
    d = ctx.facts.driver
    where = str((prov(ctx.facts).get("driver.cuda_driver_version") or {}).get("reader") or "")
    if d.cuda_driver_version and _CEILING_SOURCE.search(where):
        return d.cuda_driver_version, where
    if d.version:
        got = ctx.compat.driver_max_cuda(d.version)
        if got:
            return got[0], f"driver {d.version}: {got[1]}"
    return None, ""


@check(TOOLKIT, "nvcc vs the CUDA the driver supports")
def check_nvcc_above_driver(ctx: CheckContext) -> List[Finding]:
    """nvcc newer than the driver's CUDA ceiling (azure-001: nvcc 12.4 on driver 535, CUDA 12.2; llama-cpp-008 is
    the same cause without the versions): what it builds runs on this driver only under minor-version
    compatibility (same major; no JIT of its PTX), and not at all for a newer major. Of the same major, judged only
    where torch's CUDA is not in the paste: then nvcc's CUDA is the one the paste's programs are built with."""
    paste_or_skip(ctx)
    facts = ctx.facts
    if facts.host.wsl:
        raise SkipCheck("under WSL the Windows driver serves CUDA")
    tk = facts.toolkits.on_path
    if tk is None or not tk.version:
        raise SkipCheck("nvcc's version is not in the paste")
    ceiling, where = _ceiling(ctx)
    if not ceiling:
        raise SkipCheck("neither the driver's version nor its CUDA ceiling is in the paste")
    if _key(tk.version) <= _key(ceiling):
        return []
    major = _key(tk.version)[0] > _key(ceiling)[0]
    if not major and _torch_cuda_known(ctx):
        # torch's CUDA is the program's (driver.cuda-compat judges it); a newer nvcc of its major builds only
        # extensions, which toolchain.nvcc-torch already names
        raise SkipCheck("torch's CUDA is in the paste and nvcc is of the driver's major")
    req = ctx.compat.cuda_requirement(tk.version)
    own = f"; CUDA {tk.version}'s toolkit lists driver >= {req.min_driver}" if req and req.min_driver else ""
    summary = (f"nvcc {tk.version} is newer than the CUDA the driver supports ({ceiling}{own}): "
               + ("programs it builds need a driver of the newer major" if major else
                  "what it builds runs on this driver only under minor-version compatibility (no JIT of its PTX)"))
    ev = [Evidence("toolkits.on_path.version", tk.version, expected=f"<= {ceiling}"),
          Evidence("driver.cuda_driver_version", ceiling, source=where)]
    if req and req.min_driver:
        ev.append(Evidence("driver.version", facts.driver.version, expected=f">= {req.min_driver}", source=req.source))
    return [TOOLKIT.warning(
        "newer-major" if major else "newer-minor", confidence="medium" if major else "low", summary=summary,
        detail=("The driver runs CUDA programs up to its own CUDA version; a program built by a newer toolkit of the "
                "same major runs under minor-version compatibility (cuda_driver.json: minor_version_compatibility "
                "and its limits: PTX of the newer toolkit cannot be JIT-compiled, features that need a newer "
                "driver fail), one of a newer major does not run. Align the two: a driver of the toolkit's release, "
                "or the toolkit of the driver's CUDA."),
        evidence=ev,
        fix=Fix("Upgrade the driver to one that supports the toolkit's CUDA, or install the CUDA toolkit of the "
                "driver's version", ["nvidia-smi", "nvcc --version"],
                "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"),
    )]
