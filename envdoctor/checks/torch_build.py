"""torch build checks: does the build fit this GPU, is it a CPU build on a GPU box, is there a wheel for this Python."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..domain.arch import sm_name
from ..domain.pci import is_nvidia_gpu_description
from ..domain.variants import is_cpu_build, torch_variant
from ..domain.versions import base_version, mm_str, parse_version, version_ge
from ..model.facts import Facts, ProbeStatus, PythonEnv
from ..model.findings import Evidence, Finding, Fix
from ..queries import gpu_capabilities, torch_releases
from ..remedies import GET_STARTED, conda_cuda_note, new_venv, pip_install
from ..remedies.torch_plan import (
    companion_pins,
    cuda_build_for,
    find_build_for,
    latest_patch,
    newest_torch_for_python,
    pair_pins,
    python_supported,
)
from ._shadowing import or_origin_fix
from ._util import (
    torch_builds,
    torch_envs_or_skip,
    torch_label,
)
from .base import EVERYWHERE, NO_GPU, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)


def _arch_list(ctx: CheckContext, py: PythonEnv) -> Tuple[Optional[List[str]], str]:
    t = py.torch
    if t is None:
        return None, ""
    if t.arch_list:
        if t.arch_list_source == "fatbin":
            lib = t.build_files.native_library if t.build_files else None
            return list(t.arch_list), f"kernels compiled into {lib or 'libtorch_cuda.so'} (.nv_fatbin)"
        return list(t.arch_list), "torch.cuda.get_arch_list()"
    variant = torch_variant(py.torch)
    if variant and t.version:
        arch = ctx.compat.torch_arch_list(t.version, variant)
        if arch:
            return list(arch), f"compat matrix: torch {mm_str(t.version)} {variant}"
    return None, ""


GPU_ARCH = Findings("torch.gpu-arch", "GPU_ARCH_NOT_IN_TORCH_BUILD", kinds=("missing",))


@check(GPU_ARCH, "torch has kernels for every GPU", applies=EVERYWHERE)
def check_gpu_arch(ctx: CheckContext) -> List[Finding]:
    from ..domain.arch import arch_runs

    envs = [(i, py) for i, py in torch_builds(ctx.facts) if py.torch and py.torch.cuda]
    if not envs:
        raise SkipCheck("no CUDA build of torch to judge", not_applicable="no CUDA build of torch")
    gpus = gpu_capabilities(ctx.facts, ctx.compat)
    if not gpus:
        raise SkipCheck("no GPU seen (driver probe: "
                        f"{ctx.facts.driver.status}{': ' + ctx.facts.driver.reason if ctx.facts.driver.reason else ''})", not_applicable=NO_GPU if ctx.facts.driver.status in ("ok", "absent") else None)
    findings: List[Finding] = []
    unjudged: List[str] = []
    judged = 0
    for i, py in envs:
        t = py.torch
        arch, arch_source = _arch_list(ctx, py)
        incompatible_warning = next((w for w in (t.warnings or []) if "not compatible with the current PyTorch" in w),
                                    None)
        for label, cc, cc_path in gpus:
            if not cc:
                unjudged.append(f"{label}: compute capability unknown")
                continue
            if arch is None:
                # no arch list: a CUDA that cannot target this compute capability at all means no build of
                # it has kernels for the GPU (arch_support: first/last CUDA per CC)
                ok_cuda, why = _cuda_targets(ctx, t.cuda, cc)
                if ok_cuda is None:
                    unjudged.append(f"{label}: torch's architecture list unknown")
                    continue
                judged += 1
                if ok_cuda:
                    continue
                garch, gsource = [], f"CUDA {t.cuda} cannot target compute capability {cc} ({why})"
                ok = False
            else:
                judged += 1
                garch, gsource = arch, arch_source
                ok, why = arch_runs(arch, cc)
            if ok:
                continue
            sm = sm_name(cc)
            ev = [Evidence(cc_path, cc),
                  Evidence(f"pythons[{i}].torch.arch_list", garch, expected=f"{sm} (SASS) or PTX <= compute_{sm[3:]}",
                           source=gsource)]
            if incompatible_warning:
                ev.append(Evidence(f"pythons[{i}].torch.warnings", incompatible_warning))
            best = find_build_for(ctx.facts, ctx.compat, cc, prefer_minor=mm_str(t.version))
            if best:
                version, variant, driver_ok = best
                pins = companion_pins(ctx.facts, ctx.compat, version)
                fix_summary = f"Install torch {version} built for {variant}, which has kernels for {sm}"
                cmds = [pip_install(ctx.facts, py, pins, variant, force=True)]
                if not driver_ok:
                    fix_summary += " (it also needs a newer driver: see the driver check)"
            else:
                fix_summary = f"No torch build in this matrix (as of {ctx.compat.as_of}) has kernels for {sm}"
                cmds = []
            findings.append(GPU_ARCH.error(
                "missing",
                f"{torch_label(t)} has no kernels for {label}, compute capability {cc} ({sm}): {why}",
                detail=("Each torch build carries machine code (SASS) for a list of GPU architectures plus "
                        "optional PTX that the driver can JIT-compile for newer GPUs. With neither, every CUDA "
                        "kernel fails with 'no kernel image is available for execution on the device'."),
                evidence=ev,
                fix=Fix(fix_summary, cmds, GET_STARTED),
            ))
    if not judged and not findings:
        raise SkipCheck("; ".join(dict.fromkeys(unjudged)) or "nothing to judge")
    return findings


def _cuda_targets(ctx: CheckContext, cuda: Optional[str], cc: str) -> Tuple[Optional[bool], str]:
    """Can CUDA ``cuda`` compile for compute capability ``cc`` at all? None when the table does not say."""
    sup = ctx.compat.arch_support(cc)
    if sup is None or not cuda:
        return None, ""
    if sup.last_cuda and version_ge(cuda, sup.last_cuda) and not version_ge(sup.last_cuda, cuda):
        return False, f"CUDA {sup.last_cuda} was the last to support {sup.sm or cc}"
    if sup.first_cuda and version_ge(sup.first_cuda, cuda) and not version_ge(cuda, sup.first_cuda):
        return False, f"{sup.sm or cc} needs CUDA {sup.first_cuda} or newer"
    if sup.last_cuda or sup.first_cuda:
        return None, ""  # the CUDA can target it, but whether this build did is not in the facts
    return None, ""


def _has_gpus(facts: Facts) -> Tuple[bool, List[Evidence]]:
    d = facts.driver
    if d.gpus:
        return True, [Evidence("driver.gpus", [g.name for g in d.gpus])]
    for link in facts.topology.pcie_links:
        if is_nvidia_gpu_description(link.description):
            return True, [Evidence("topology.pcie_links", link.description)]
    return False, []


CUDA_BUILD = Findings("torch.cuda-build", "TORCH_CPU_ONLY_BUILD", kinds=("cpu-only",))


@check(CUDA_BUILD, "torch is a CUDA build on a GPU machine", applies=EVERYWHERE)
def check_cpu_build(ctx: CheckContext) -> List[Finding]:
    envs = torch_envs_or_skip(ctx.facts)
    has, gpu_ev = _has_gpus(ctx.facts)
    if not has:
        # nothing to judge: a CPU build is right on a machine without GPUs (evidence or no check mark)
        if ctx.facts.driver.status in (ProbeStatus.OK, ProbeStatus.ABSENT):
            raise SkipCheck("no NVIDIA GPU seen on this machine: a CPU or CUDA build of torch is equally fine here", not_applicable=NO_GPU)
        raise SkipCheck("whether this machine has NVIDIA GPUs is unknown")
    findings = []
    judged = False
    for i, py in envs:
        t = py.torch
        if t.cuda or t.hip:
            judged = True
            continue
        if t.import_error and t.build_files is None:
            continue  # an import failure with no build files read says nothing about the build
        cpu = is_cpu_build(t)
        if cpu is None:
            # the build is unknown (a paste without a local tag or torch.version.cuda): PyPI's Linux wheel is a
            # CUDA build and an --index-url may have chosen either, so no CPU-only verdict from this
            continue
        judged = True
        if not cpu:
            continue
        version = base_version(t.version) or ""
        rel = ctx.compat.torch_release(version) if version else None
        target = cuda_build_for(ctx.facts, ctx.compat, rel)
        # every installed companion moves with torch: a +cpu torchaudio left behind is CUDA_VARIANT_MIXED
        pins = pair_pins(ctx.facts, ctx.compat, py, version)
        cmds = [pip_install(ctx.facts, py, pins, target, force=True)] if target else []
        if py.is_conda:
            cmds.append(conda_cuda_note())
        findings.append(CUDA_BUILD.error(
            "cpu-only",
            (f"torch {t.version} is a CPU-only build (torch.version.cuda is None) "
             + ("for a declared fleet with " if ctx.facts.driver.source == "declared" else "on a machine with ")
             + f"{len(ctx.facts.driver.gpus) or 'NVIDIA'} GPU(s)"),
            detail=("A CPU build never uses the GPU: torch.cuda.is_available() is False and .cuda() raises "
                    "'Torch not compiled with CUDA enabled'. pip picks it from the CPU index, a conda 'cpuonly' "
                    "package, or a platform where only CPU wheels exist."),
            evidence=[Evidence(f"pythons[{i}].torch.version", t.version),
                      Evidence(f"pythons[{i}].torch.cuda", t.cuda, expected="a CUDA version")] + gpu_ev,
            fix=or_origin_fix(py, Fix(f"Reinstall torch {version} from the {target} index" if target else
                                      "Reinstall a CUDA build of torch (see the selector)", cmds, GET_STARTED)),
        ))
    if not judged:
        raise SkipCheck("torch's build is unknown: the import failed before it said, and its files were not read")
    return findings


PYTHON_VERSION = Findings("torch.python-version", "PYTHON_VERSION_UNSUPPORTED",
                          kinds=("outside-release", "too-new", "too-old"))


@check(PYTHON_VERSION, "A torch wheel exists for this Python", applies=EVERYWHERE)
def check_python_version(ctx: CheckContext) -> List[Finding]:
    pys = [(i, py) for i, py in enumerate(ctx.facts.pythons) if py.python_version]
    if not pys:
        raise SkipCheck("no interpreter inspected")
    findings = []
    judged = False
    for i, py in pys:
        t = py.torch
        if t and t.version:
            rel = ctx.compat.torch_release(t.version)
            if rel is None or not rel.python_min or not rel.python_max:
                continue
            judged = True
            if python_supported(rel, py.python_version) is False:
                findings.append(PYTHON_VERSION.warning(
                    "outside-release",
                    (f"Python {py.python_version} is outside torch {rel.minor}'s supported range "
                     f"({rel.python_min} to {rel.python_max}): no official wheel exists for it"),
                    detail="A torch that runs here was built from source or by a third party; its companions "
                           "and extensions may have no matching wheels either.",
                    evidence=[Evidence(f"pythons[{i}].python_version", py.python_version,
                                       expected=f"{rel.python_min} .. {rel.python_max}", source=rel.source)],
                    fix=Fix(f"Use Python {rel.python_max} (or another supported version) for this torch",
                            [new_venv(ctx.facts, py, rel.python_max)]),
                ))
            continue
        asked, how = _asked_releases(ctx)
        if not asked:
            continue
        judged = True
        if any(python_supported(r, py.python_version) for r in asked):
            continue
        too_new = all(python_supported(r, py.python_version) is False and
                      parse_version(mm_str(py.python_version)) > parse_version(r.python_max) for r in asked)
        if not too_new and (ctx.facts.origin == "paste" or py.package("torch") is not None):
            # an older Python has wheels of older releases: only where torch is known to be absent (a paste that
            # does not show torch may still have one) does a plain `pip install torch` pick one of them
            continue
        findings.append(_no_wheel(ctx, i, py, asked, how))
    if not judged:
        raise SkipCheck("the torch release's supported Python range is not in the compat matrix")
    return findings


def _asked_releases(ctx: CheckContext) -> Tuple[list, str]:
    """The torch releases the user asks for: those a declared torch requirement allows, else the newest release
    whose Python range is known (what a plain `pip install torch` wants)."""
    from packaging.utils import canonicalize_name

    from ..model.targets import TargetError, parse_requirement

    known = [r for r in torch_releases(ctx.compat) if r.python_min and r.python_max]
    if not known:
        return [], ""
    for text in (ctx.facts.targets.requirements if ctx.facts.targets else []):
        try:
            req = parse_requirement(text)
        except TargetError:
            continue
        if canonicalize_name(req.name) == "torch" and str(req.specifier):
            allowed = [r for r in known if any(req.specifier.contains(parse_version(p), prereleases=True)
                                               for p in (latest_patch(ctx.facts, ctx.compat, r.minor), r.minor + ".0")
                                               if parse_version(p) is not None)]
            return allowed, f"the declared requirement {text!r}"
    newest = max(known, key=lambda r: parse_version(r.minor))
    return [newest], f"the newest torch release (torch {newest.minor}, as of {ctx.compat.as_of})"


def _no_wheel(ctx: CheckContext, i: int, py: PythonEnv, asked: list, how: str):
    pyv = mm_str(py.python_version) or py.python_version
    newest = max(asked, key=lambda r: parse_version(r.minor))
    ranges = "; ".join(f"torch {r.minor}: Python {r.python_min} to {r.python_max}" for r in asked[-3:])
    too_new = parse_version(pyv) > parse_version(newest.python_max)
    fits = newest_torch_for_python(ctx.facts, ctx.compat, py.python_version)
    evidence = [Evidence(f"pythons[{i}].python_version", py.python_version,
                         expected=f"{newest.python_min} .. {newest.python_max}", source=newest.source)]
    if fits is not None:
        rel, patch = fits
        evidence.append(Evidence("compat.torch", f"torch {rel.minor}", source=rel.source,
                                 expected=f"newest release with wheels for Python {pyv}"))
    if not asked or len(asked) == 1 and how.startswith("the newest"):
        said = f"{how} supports Python {newest.python_min} to {newest.python_max}"
    else:
        said = f"no torch release {how} allows has wheels for it ({ranges})"
    if too_new:
        summary = f"Python {py.python_version} is newer than any torch release in this matrix supports: {said}"
        detail = "pip will find no wheel ('No matching distribution found for torch')."
        fix = Fix(f"Create the environment with Python {newest.python_max}",
                  [new_venv(ctx.facts, py, newest.python_max)])
    else:
        older = f"torch {fits[1]}, the newest with a wheel for Python {pyv}" if fits else "no torch at all"
        if how.startswith("the newest"):
            summary = (f"Python {py.python_version} is older than {how} supports ({newest.python_min} to "
                       f"{newest.python_max}): `pip install torch` here installs {older}")
        else:
            summary = (f"Python {py.python_version}: {said}; the newest torch with a wheel for it is "
                       + (fits[1] if fits else "none in the matrix"))
        detail = ("pip silently resolves an older release whose wheels still support this Python; companions, "
                  "extensions and CUDA builds of the newer release are then out of reach.")
        cmds = [pip_install(ctx.facts, py, [f"torch=={fits[1]}"])] if fits else []
        fix = Fix((f"Build the environment on Python {newest.python_min} or newer for torch {newest.minor} "
                   f"(`{new_venv(ctx.facts, py, newest.python_min)}`)"
                   + (f", or pin torch {fits[1]}, the newest release for Python {pyv}" if fits else "")), cmds)
    if too_new:
        return PYTHON_VERSION.warning("too-new", summary, detail=detail, evidence=evidence, fix=fix)
    return PYTHON_VERSION.warning("too-old", summary, detail=detail, evidence=evidence, fix=fix)


# --------------------------------------------------------------------------- the interpreter itself


