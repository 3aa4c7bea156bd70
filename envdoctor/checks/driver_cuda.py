"""Driver vs torch's CUDA: is the driver new enough for the CUDA runtime torch ships (minor-version compatibility included)."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from ..domain.arch import sm_name
from ..domain.gpus import gpu_label
from ..domain.variants import local_tag
from ..domain.versions import major_minor, mm_str, version_ge
from ..model.facts import Package, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import COMPAT_DOC, datacenter_gpus
from ..remedies.torch_plan import upgrade_driver_fix
from ._util import torch_builds, torch_label
from .base import EVERYWHERE, NO_DRIVER, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)


CUDA_COMPAT = Findings("driver.cuda-compat", "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                       kinds=("minor-compat", "ptx-needs-newer-driver", "too-old", "unknown-cuda",
                              "unknown-minimum"))


@check(CUDA_COMPAT, "Driver supports torch's CUDA version", applies=EVERYWHERE)
def check_driver_cuda(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    d = facts.driver
    inferred: Dict[int, str] = {}
    envs = []
    for i, py in torch_builds(facts):
        if py.torch and py.torch.cuda:
            envs.append((i, py))
            continue
        guess = _inferred_cuda(ctx, py)
        if guess:
            cuda, note = guess
            inferred[i] = note
            envs.append((i, dataclasses.replace(py, torch=dataclasses.replace(py.torch, cuda=cuda))))
    if not envs:
        raise SkipCheck("no CUDA build of torch to judge (torch absent, CPU or ROCm build)", not_applicable="no CUDA build of torch")
    if d.status == ProbeStatus.ABSENT:
        raise SkipCheck("no NVIDIA driver (see driver.present)", not_applicable=NO_DRIVER)
    if not d.version and not d.cuda_driver_version:
        raise SkipCheck(f"driver version unknown (probe {d.status}: {d.reason or 'not in the facts'})")
    findings: List[Finding] = []
    # a family name ("NVIDIA A100", a declared fleet's "H100") counts when every model it can mean is one
    datacenter = datacenter_gpus(ctx.facts, ctx.compat)
    for i, py in envs:
        t = py.torch
        assert t is not None and t.cuda is not None
        cuda = mm_str(t.cuda)
        label = torch_label(t)
        req = ctx.compat.cuda_requirement(cuda) if cuda else None
        if req is None:
            # A CUDA version newer than the matrix: judge only against the driver's own ceiling.
            ceiling = d.cuda_driver_version or (
                (ctx.compat.driver_max_cuda(d.version) or (None,))[0] if d.version else None)
            cmm, tmm = major_minor(ceiling), major_minor(cuda)
            if cmm and tmm and tmm[0] > cmm[0]:
                # A newer CUDA major always needs a newer driver branch (minor-version compatibility
                # works within one major only), so this is known even beyond the matrix.
                findings.append(_too_old_finding(ctx, i, label, cuda, None, None, d.version, ceiling, datacenter))
            elif not cmm or not tmm or tmm > cmm:
                findings.append(CUDA_COMPAT.info(
                    "unknown-cuda",
                    (f"CUDA {t.cuda} ({label}) is unknown to this matrix (as of {ctx.compat.as_of}); "
                     f"driver {d.version or 'unknown'} not judged"),
                    evidence=[Evidence(f"pythons[{i}].torch.cuda", t.cuda)],
                ))
            continue
        if d.version is None:
            # Only the driver's ceiling is known (a pasted nvidia-smi header or error number).
            ceiling = d.cuda_driver_version
            ev = [Evidence("driver.cuda_driver_version", ceiling), Evidence(f"pythons[{i}].torch.cuda", t.cuda)]
            cmm, tmm = major_minor(ceiling), major_minor(cuda)
            if cmm and tmm and tmm > cmm and (tmm[0] > cmm[0] or tmm[0] < 11):
                findings.append(_too_old_finding(ctx, i, label, cuda, req.min_driver, req.minor_compat_min_driver,
                                                 None, ceiling, datacenter))
            elif cmm and tmm and tmm > cmm:
                findings.append(CUDA_COMPAT.info(
                    "minor-compat",
                    (f"The driver supports CUDA {ceiling}; {label} uses CUDA {cuda}: runs through CUDA "
                     f"minor-version compatibility if the driver is >= {req.minor_compat_min_driver}"),
                    detail=_MINOR_COMPAT_LIMITS,
                    evidence=ev,
                    fix=Fix("Paste the output of `nvidia-smi` to settle the exact driver version"),
                ))
            continue
        if req.min_driver and version_ge(d.version, req.min_driver):
            continue
        if req.min_driver is None:
            # a matrix row whose GA minimum is not confirmed yet: the driver's own ceiling (nvidia-smi's
            # "CUDA Version", or its branch's) at or above this CUDA settles it without the minimum
            ceiling = d.cuda_driver_version or (ctx.compat.driver_max_cuda(d.version) or (None,))[0]
            if ceiling and major_minor(ceiling) and major_minor(cuda) and major_minor(ceiling) >= major_minor(cuda):
                continue
        floor = req.minor_compat_min_driver
        cmajor = major_minor(cuda)[0] if major_minor(cuda) else 0
        if req.min_driver is None and floor is None:
            findings.append(CUDA_COMPAT.info(
                "unknown-minimum",
                (f"The minimum driver for CUDA {cuda} is not confirmed in this matrix (as of "
                 f"{ctx.compat.as_of}); driver {d.version} not judged"),
                evidence=[Evidence(f"pythons[{i}].torch.cuda", t.cuda, source=req.source)],
            ))
            continue
        if cmajor >= 11 and floor and version_ge(d.version, floor):
            # Minor-version compatibility: a 12.x runtime runs on any >= 525.60.13 driver, with limits.
            ptx_only = _ptx_only_gpus(ctx, py)
            if ptx_only:
                findings.append(CUDA_COMPAT.error(
                    "ptx-needs-newer-driver",
                    (f"Driver {d.version} is older than CUDA {cuda} needs "
                     f"({req.min_driver or 'a driver of CUDA ' + cuda + ' or newer'}) and "
                     f"{', '.join(ptx_only)} would need torch's PTX JIT-compiled, which minor-version "
                     "compatibility does not cover"),
                    detail=_MINOR_COMPAT_LIMITS,
                    evidence=[Evidence("driver.version", d.version, expected=f">= {req.min_driver or floor}",
                                       source=req.source),
                              Evidence(f"pythons[{i}].torch.arch_list", t.arch_list)],
                    fix=upgrade_driver_fix(ctx.facts, ctx.compat, req.min_driver, t.version, d.version, datacenter, py),
                ))
                continue
            own = (f"below CUDA {cuda}'s own minimum ({req.min_driver})" if req.min_driver else
                   f"not known to reach CUDA {cuda}'s own minimum (not confirmed in this matrix as of "
                   f"{ctx.compat.as_of})")
            lift = (f"upgrade to driver >= {req.min_driver} to lift the limits" if req.min_driver else
                    f"a driver whose nvidia-smi 'CUDA Version' is {cuda} or newer lifts the limits")
            findings.append(CUDA_COMPAT.info(
                "minor-compat",
                (f"Driver {d.version} is {own} but above the CUDA {cmajor}.x minor-version "
                 f"compatibility floor ({floor}): {label} runs"),
                detail=_MINOR_COMPAT_LIMITS,
                evidence=[Evidence("driver.version", d.version, expected=f">= {floor} (minor-version compatibility)",
                                   source=COMPAT_DOC),
                          Evidence(f"pythons[{i}].torch.cuda", t.cuda, source=req.source)],
                fix=Fix(f"Nothing needed to run prebuilt wheels; {lift}", [], COMPAT_DOC),
            ))
            continue
        findings.append(_too_old_finding(ctx, i, label, cuda, req.min_driver, floor, d.version,
                                         d.cuda_driver_version, datacenter, source=req.source))
    return [_mark_inferred(f, inferred) for f in findings]


def _inferred_cuda(ctx: CheckContext, py) -> Optional[Tuple[str, str]]:
    """(cuda, why) for a torch whose CUDA version the facts lack, from the wheel plain pip installs.

    Only for a pasted report: a live probe reads torch.version.cuda itself. A version with no local tag
    that is not known to be a CPU build came from PyPI, whose Linux x86_64 wheel is the release's default
    variant (compat torch.json default_variant); that is likely, not certain (an index URL may have been used).
    """
    from ..domain.variants import cuda_of_variant
    from ._util import package_variant

    t = py.torch
    if ctx.facts.origin != "paste" or t is None or t.hip or t.arch_list is not None or local_tag(t.version):
        return None
    pkg = py.package("torch") or Package(name="torch", version=t.version or "")
    variant, why, _certain = package_variant(ctx, py, pkg)
    cuda = cuda_of_variant(variant) if variant else None
    return (cuda, why) if cuda else None


def _mark_inferred(f: Finding, inferred: Dict[int, str]) -> Finding:
    for i, note in inferred.items():
        if any(e.path.startswith(f"pythons[{i}].") for e in f.evidence):
            severity = Severity.WARNING if f.severity == Severity.ERROR else f.severity
            return dataclasses.replace(
                f, severity=severity, confidence="medium",
                summary=f.summary + " (torch's CUDA version inferred: " + note + ")",
                evidence=f.evidence + [Evidence(f"pythons[{i}].torch.cuda", None,
                                                expected="paste `python -c \"import torch; print(torch.version.cuda)\"` to settle it",
                                                source=note)])
    return f


_MINOR_COMPAT_LIMITS = (
    "CUDA minor-version compatibility (CUDA 11+) lets an application built with a newer minor release of "
    "the same major run on an older driver of that major, with limits: PTX that is newer than the driver "
    "cannot be JIT-compiled (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), and APIs or features introduced after "
    f"the driver's release are unavailable. Source: {COMPAT_DOC}minor-version-compatibility.html"
)


def _ptx_only_gpus(ctx: CheckContext, py) -> List[str]:
    """GPUs for which torch has PTX but no SASS (they would need the driver to JIT newer PTX)."""
    from ..domain.arch import arch_runs

    t = py.torch
    arch = t.arch_list if t else None
    if not arch:
        return []
    sass_only = [a for a in arch if a.startswith("sm_")]
    out = []
    for g in ctx.facts.driver.gpus:
        cc = g.compute_capability
        if not cc:
            continue
        ok_all, _ = arch_runs(arch, cc)
        ok_sass, _ = arch_runs(sass_only, cc)
        if ok_all and not ok_sass:
            out.append(gpu_label(g, sm_name(cc)))
    return out


def _too_old_finding(ctx: CheckContext, i: int, label: str, cuda: str, min_driver: Optional[str],
                     floor: Optional[str], driver: Optional[str], ceiling: Optional[str], datacenter: bool,
                     source: Optional[str] = None) -> Finding:
    # beyond the matrix (CUDA 99.9) the minimum is unknown: what is known is the newer CUDA major
    need = f">= {min_driver}" if min_driver else (f"a newer driver branch; its minimum driver is not in this "
                                                   f"matrix, as of {ctx.compat.as_of}")
    cmajor = major_minor(cuda)[0] if major_minor(cuda) else 0
    if floor and cmajor >= 11:
        need += f"; minor-version compatibility needs >= {floor}"
    seen = f"Driver {driver}" if driver else f"The driver (supports CUDA {ceiling} at most)"
    ev = [Evidence(f"pythons[{i}].torch.cuda", cuda, source=source)]
    if driver:
        ev.append(Evidence("driver.version", driver, expected=f">= {min_driver or floor}" if min_driver or floor
                           else f"a driver for CUDA {cuda}", source=source))
    if ceiling:
        ev.append(Evidence("driver.cuda_driver_version", ceiling))
    torch_version = ctx.facts.pythons[i].torch.version if ctx.facts.pythons[i].torch else ""
    return CUDA_COMPAT.error(
        "too-old",
        f"{seen} is too old for {label} (CUDA {cuda} needs {need})",
        detail=("torch ships its own CUDA runtime, but that runtime needs a kernel driver at least as new as "
                "NVIDIA lists for it; with an older driver torch.cuda.is_available() is False ('The NVIDIA "
                "driver on your system is too old')."),
        evidence=ev,
        fix=upgrade_driver_fix(ctx.facts, ctx.compat, min_driver or floor, torch_version or "", driver, datacenter,
                                ctx.facts.pythons[i]),
    )
