"""Torch build planning for fixes: which torch build and companion pins to install, and the driver-or-torch fix.

Detection lives in the checks; these planners answer "what to install instead" from the facts and the compat
tables, and return pins, commands and Fix records that the checks attach to their findings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

from ..domain.arch import arch_runs
from ..domain.variants import cuda_of_variant, torch_variant, variant_kind
from ..domain.versions import base_version, driver_branch, mm_str, parse_version
from ..model.facts import Facts, PythonEnv
from ..model.findings import Fix
from ..queries import driver_runs_cuda, gpu_capabilities, torch_releases
from .driver import COMPAT_DOC, datacenter_gpus, driver_install
from .driver_branch import branch_plan, gpu_branch_limits, newest_patch, newest_torch_for
from .python import pip_install

if TYPE_CHECKING:
    from ..compat import Compat

COMPANIONS = ("torchvision", "torchaudio")


def alternative_variant(facts: Facts, compat: Compat, torch_version: str, driver: str) -> Optional[str]:
    """The newest CUDA variant of this torch release that this driver runs and that has kernels for
    every GPU here (an older CUDA build often lacks the newest architectures: 1.12 cu102 has no sm_80)."""
    rel = compat.torch_release(torch_version)
    if rel is None:
        return None
    ccs = [cc for _, cc, _ in gpu_capabilities(facts, compat) if cc]

    def fits(variant: str) -> bool:
        arch = compat.torch_arch_list(torch_version, variant)
        return not arch or all(arch_runs(arch, cc)[0] for cc in ccs)

    runnable = [v for v in rel.cuda_variants
                if driver_runs_cuda(facts.driver, compat, cuda_of_variant(v)) and fits(v)]
    return max(runnable, key=lambda v: parse_version(cuda_of_variant(v))) if runnable else None


def legacy_gpu_alternative(facts: Facts, compat: Compat, py, torch_version: str,
                            driver: Optional[str]) -> Tuple[str, List[str]]:
    """What to do when no driver runs this torch's CUDA on these GPUs: this torch in a CUDA variant the
    driver runs, else the newest torch the GPUs' last branch runs with kernels for them, else a newer GPU."""

    limits = gpu_branch_limits(facts, compat)
    hi = limits.hi
    if hi is None:
        return "", []
    alt = alternative_variant(facts, compat, torch_version, driver) if driver else None
    if alt:
        version = base_version(torch_version) or ""
        pins = pair_pins(facts, compat, py, version) if py is not None else [f"torch=={version}"]
        return (f"; install the {alt} build of torch {version}, which this driver runs and which has kernels "
                "for it"), [pip_install(facts, py, pins, alt, force=True)]
    ccs = [x.cc for x in limits.gpus]
    best = newest_torch_for(facts, compat, hi, ccs)
    if best is None:
        who = limits.hi_gpu.label if limits.hi_gpu else "this GPU"
        return (f"; no torch release with kernels for {who} runs on R{hi}: this torch needs a newer GPU (or "
                "cloud instance)"), []
    minor, variant = best
    version = newest_patch(facts, compat, minor)
    pins = pair_pins(facts, compat, py, version) if py is not None else [f"torch=={version}"]
    commands = [pip_install(facts, py, pins, variant, force=True)]
    note = ""
    if driver_branch(driver) != hi:
        # R{hi} is the last branch for this GPU
        plan = driver_install(facts, hi, server=datacenter_gpus(facts, compat))
        commands[:0] = plan.commands
        note = f" ({plan.note})" if plan.note else ""
    return (f"; install a torch build that R{hi} runs and that has kernels for it - the newest is torch "
            f"{version} ({variant}) - or use a newer GPU (or cloud instance) for newer torch releases{note}"), commands


def upgrade_driver_fix(facts: Facts, compat: Compat, min_driver: Optional[str], torch_version: str,
                        driver: Optional[str], datacenter: bool, py=None) -> Fix:
    branch, impossible = branch_plan(facts, compat, min_driver)
    if impossible:
        text, commands = legacy_gpu_alternative(facts, compat, py, torch_version, driver)
        # no cuda-compat note: forward compatibility needs a branch that supports the GPU too
        return Fix(f"No driver upgrade helps: {impossible}{text}", commands, COMPAT_DOC)
    plan = driver_install(facts, branch, server=datacenter) if branch is not None else None
    commands = list(plan.commands) if plan else []
    summary = (f"Upgrade the NVIDIA driver to {min_driver} or newer (e.g. the supported R{branch} branch)"
               if min_driver else "Upgrade the NVIDIA driver")
    if plan and plan.note:
        summary += f" ({plan.note})"
    if driver:
        alt = alternative_variant(facts, compat, torch_version, driver)
        if alt:

            version = base_version(torch_version) or ""
            # reinstall the companions with it: a cu118 torch next to a cu121 torchvision is CUDA_VARIANT_MIXED
            pins = pair_pins(facts, compat, py, version) if py is not None else [f"torch=={version}"]
            summary += f", or install the {alt} build of torch, which this driver supports"
            commands.append(pip_install(facts, py, pins, alt, force=True))
    if datacenter:
        summary += ("; on data-center GPUs the CUDA forward-compatibility package (cuda-compat) is a third "
                    "way")
    return Fix(summary, commands, COMPAT_DOC)


def target_variant(facts: Facts, compat: Compat, py: PythonEnv, torch_version: str) -> Optional[str]:
    """Which variant the fix should install: keep torch's, unless torch is CPU on a GPU box."""
    tv = torch_variant(py.torch)
    if tv == "cpu" and facts.driver.gpus:
        rel = compat.torch_release(torch_version)
        if rel and rel.default_variant:
            return rel.default_variant
    return tv


def pair_pins(facts: Facts, compat: Compat, py: PythonEnv, torch_version: str) -> List[str]:
    pins = [f"torch=={torch_version}"]
    comp = compat.companions(torch_version)
    for name in COMPANIONS:
        if py.package(name) is not None:
            want = getattr(comp, name, None) if comp else None
            pins.append(f"{name}=={want}" if want else name)
    return pins


def find_build_for(facts: Facts, compat: Compat, cc: str, prefer_minor: Optional[str] = None
                   ) -> Optional[Tuple[str, str, bool]]:
    """(torch version, variant, driver_ok) of the best build that has kernels for ``cc``.

    Prefers the same torch minor, then the newest release; among variants, the newest CUDA the driver runs.
    """
    candidates = []
    for rel in torch_releases(compat):
        for variant, arch in (rel.arch_lists or {}).items():
            if not arch or variant_kind(variant) != "cuda":
                continue
            ok, _ = arch_runs(arch, cc)
            if not ok:
                continue
            cuda = cuda_of_variant(variant)
            driver_ok = driver_runs_cuda(facts.driver, compat, cuda) if cuda else None
            candidates.append((rel, variant, cuda, driver_ok))
    if not candidates:
        return None

    def key(c):
        rel, variant, cuda, driver_ok = c
        return (
            driver_ok is not False,
            prefer_minor is not None and rel.minor == prefer_minor,
            parse_version(rel.minor),
            variant == rel.default_variant,
            parse_version(cuda or "0"),
        )

    rel, variant, _cuda, driver_ok = max(candidates, key=key)
    patch = latest_patch(facts, compat, rel.minor)
    return patch, variant, driver_ok is not False


def latest_patch(facts: Facts, compat: Compat, minor: str) -> str:
    best = None
    table = getattr(compat, "companion_rows", None)
    rows = table() if table else []
    for row in rows:
        v = row.torch
        if mm_str(v) == minor and (best is None or parse_version(v) > parse_version(best)):
            best = v
    return best or f"{minor}.*"


def companion_pins(facts: Facts, compat: Compat, torch_version: str) -> List[str]:
    comp = compat.companions(torch_version) if "*" not in torch_version else None
    pins = [f"torch=={torch_version}"]
    if comp and comp.torchvision:
        pins.append(f"torchvision=={comp.torchvision}")
    return pins


def cuda_build_for(facts: Facts, compat: Compat, rel) -> Optional[str]:
    """The CUDA variant of torch release ``rel`` to reinstall in place of a CPU build: the release's default
    variant when the driver runs it, else the newest CUDA variant it runs (one not known to fail counts)."""
    if not rel:
        return None
    runnable = [v for v in rel.cuda_variants
                if cuda_of_variant(v) and driver_runs_cuda(facts.driver, compat, cuda_of_variant(v)) is not False]
    if rel.default_variant in runnable:
        return rel.default_variant
    return max(runnable, key=lambda v: parse_version(cuda_of_variant(v))) if runnable else None


def python_supported(rel, python: Optional[str]) -> Optional[bool]:
    """Does torch release ``rel`` publish wheels for Python ``python`` ("3.9")? None when its range is unknown."""
    if rel is None or not rel.python_min or not rel.python_max or not python:
        return None
    v = parse_version(mm_str(python))
    if v is None:
        return None
    return parse_version(rel.python_min) <= v <= parse_version(rel.python_max)


def newest_torch_for_python(facts: Facts, compat: Compat, python: Optional[str]) -> Optional[Tuple[object, str]]:
    """(release row, newest known patch) of the newest torch release with wheels for ``python``, per the matrix's
    Python ranges (compat_data/torch.json, each row cited); None when no release in it has one."""

    fits = [r for r in torch_releases(compat) if python_supported(r, python)]
    if not fits:
        return None
    rel = max(fits, key=lambda r: parse_version(r.minor))
    return rel, latest_patch(facts, compat, rel.minor)
