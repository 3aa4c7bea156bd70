"""Requirement checks: declared PEP 440 requirements and target GPUs (envdoctor assert, preflight) against the facts.

They judge ``facts.targets``; without declared targets (`envdoctor check`, `diagnose`) they skip. The driver
and GPU compatibility of a declared fleet is judged by the ordinary checks (driver.cuda-compat,
torch.gpu-arch, torch.cuda-build, driver.lifecycle) over the declared driver section, not here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, List, Optional, Tuple

from packaging.utils import canonicalize_name

from ..domain.arch import arch_runs, sm_name
from ..domain.variants import cuda_of_variant, nvidia_wheel
from ..domain.versions import base_version, parse_version
from ..model.facts import ProbeStatus, PythonEnv
from ..model.findings import Evidence, Finding, Fix
from ..model.targets import PSEUDO_NAMES, TargetError, parse_requirement, resolve_gpu
from ..remedies import command, pip_install
from ._extension_arch import ArchTarget, judge_extensions
from .base import EVERYWHERE, CheckContext, CheckFunc, Findings, SkipCheck, registrar

if TYPE_CHECKING:  # packaging.requirements costs ~0.1 s to import: loaded when a requirement is parsed
    from packaging.requirements import Requirement

CHECKS: list = []
check = registrar(CHECKS, applies=EVERYWHERE)  # declared requirements: a build too

CATEGORY = "REQUIREMENT_UNMET"

# the declared-version checks, one per declared kind (requirements.python ... requirements.packages)
UNMET = {kind: Findings(f"requirements.{kind}", CATEGORY, kinds=("unmet",))
         for kind in ("python", "torch", "cuda", "cudnn", "packages")}


def _declared(ctx: CheckContext, kind: str) -> List[Tuple[int, Requirement]]:
    """(index in targets.requirements, requirement) of one kind: "python", "torch", "cuda", "cudnn", "packages"."""
    t = ctx.facts.targets
    if t is None:
        raise SkipCheck("no requirements declared (envdoctor assert --require, [tool.envdoctor] require, "
                        "or preflight(require=...))", not_applicable="no requirements declared")
    out = []
    for k, text in enumerate(t.requirements):
        try:
            req = parse_requirement(text)
        except TargetError:
            continue  # rejected as a usage error before judging; a hand-edited snapshot may still hold one
        name = canonicalize_name(req.name)
        rkind = name if name in PSEUDO_NAMES or name == "torch" else "packages"
        if rkind == kind:
            out.append((k, req))
    if not out:
        raise SkipCheck(f"no {kind} requirement declared", not_applicable="no requirements declared")
    return out


def _envs(ctx: CheckContext) -> List[Tuple[int, PythonEnv]]:
    envs = [(i, py) for i, py in enumerate(ctx.facts.pythons) if py.status == ProbeStatus.OK]
    if not envs:
        py = ctx.facts.pythons[0] if ctx.facts.pythons else None
        raise SkipCheck("no interpreter could be inspected" +
                        (f" ({py.status}: {py.reason})" if py is not None else ""))
    return envs


def _contains(req: Requirement, version: str) -> Optional[bool]:
    v = parse_version(version, strict=True)
    if v is None:
        return None
    # an installed version is judged as it is: a dev or rc build inside the range counts
    return req.specifier.contains(v, prereleases=True)


def _spec_text(req: Requirement) -> str:
    return str(req.specifier) or "(any version)"


def _unmet(k: int, req: Requirement, i: int, path: str, seen: Optional[str], summary: str,
           fix: Fix, detail: Optional[str] = None) -> Finding:
    name = canonicalize_name(req.name)
    return UNMET[name if name in PSEUDO_NAMES or name == "torch" else "packages"].error(
        "unmet",
        summary=f"Requirement {str(req)!r} not met: {summary}",
        detail=detail,
        evidence=[Evidence(f"targets.requirements[{k}]", str(req)),
                  Evidence(f"pythons[{i}].{path}", seen, expected=_spec_text(req))],
        fix=fix,
    )


def _judge_version(ctx: CheckContext, kind: str, what: str,
                   read) -> List[Finding]:
    def fix(py: PythonEnv, req: Requirement) -> Fix:
        return _fix_for(ctx, kind, py, req)

    findings = []
    for k, req in _declared(ctx, kind):
        for i, py in _envs(ctx):
            seen, path, why_missing = read(py, req)
            where = py.executable or "the interpreter"
            if seen is None:
                findings.append(_unmet(k, req, i, path, None, f"{why_missing} in {where}", fix(py, req)))
                continue
            ok = _contains(req, seen)
            if ok is None:
                findings.append(_unmet(k, req, i, path, seen, f"{what} {seen!r} is not a PEP 440 version",
                                       fix(py, req)))
            elif not ok:
                findings.append(_unmet(k, req, i, path, seen,
                                       f"{what} is {seen} in {where}, outside {_spec_text(req)}", fix(py, req)))
    return findings


def _fix_for(ctx: CheckContext, kind: str, py: PythonEnv, req: Requirement) -> Fix:
    if kind == "python":
        # a range, not one version: which Python to build on is the user's choice within it
        return Fix(f"Build the environment on a Python {_spec_text(req)}")
    if kind in ("cuda", "cudnn"):
        what = "a CUDA" if kind == "cuda" else "a cuDNN"
        return Fix(f"Install a torch built with {what} {_spec_text(req)} (`envdoctor recommend` names the "
                   "variant and its command)", [command("envdoctor", "recommend")])
    if canonicalize_name(req.name) == "torch":
        return _torch_fix(ctx, py, req)
    # the installed torch is pinned next to it, so that resolving the requirement never swaps torch (issue 17)
    t = base_version(py.torch.version) if py.torch and py.torch.version else None
    keep = [f"torch=={t}"] if t and canonicalize_name(req.name) not in ("torch",) else []
    return Fix(f"Install {req.name}{req.specifier}" + (f", keeping torch {t}" if keep else ""),
               [pip_install(ctx.facts, py, [str(req)] + keep)])


def _torch_fix(ctx: CheckContext, py: PythonEnv, req: Requirement) -> Fix:
    """One pinned torch: the newest release the requirement allows that has a wheel for this Python, with the
    companions that pair with it, from the index of torch's current variant when that release has it."""
    from ..domain.variants import torch_variant
    from ..queries import torch_releases
    from ..remedies.torch_plan import latest_patch, pair_pins, python_supported

    best = None
    for rel in torch_releases(ctx.compat):
        patch = latest_patch(ctx.facts, ctx.compat, rel.minor)
        v = parse_version(patch)
        if v is None or not req.specifier.contains(v, prereleases=True) or \
                python_supported(rel, py.python_version) is False:
            continue
        if best is None or v > parse_version(best[1]):
            best = (rel, patch)
    if best is None:
        return Fix(f"No torch release in the matrix satisfies {str(req)!r} with a wheel for Python "
                   f"{py.python_version or '(unknown)'}: change the requirement or the Python "
                   "(`envdoctor recommend` lists the builds)", [command("envdoctor", "recommend")])
    rel, patch = best
    variant = torch_variant(py.torch) if py.torch else None
    if variant not in (rel.cuda_variants or []) + ["cpu"]:
        variant = None  # PyPI's default build of that release
    return Fix(f"Install torch {patch}, the newest release {str(req)!r} allows with a wheel for Python "
               f"{py.python_version}" + (f", from the {variant} index" if variant else ""),
               [pip_install(ctx.facts, py, pair_pins(ctx.facts, ctx.compat, py, patch), variant, force=bool(py.torch))])


def _package(py: PythonEnv, req: Requirement) -> Tuple[Optional[str], str, str]:
    pkg = py.package(req.name)
    if pkg is not None:
        return pkg.version, f"packages.{canonicalize_name(req.name)}", ""
    if canonicalize_name(req.name) == "torch" and py.torch and py.torch.version:
        return py.torch.version, "torch.version", ""
    return None, f"packages.{canonicalize_name(req.name)}", f"{req.name} is not installed"


def _python(py: PythonEnv, _req: Requirement) -> Tuple[Optional[str], str, str]:
    return py.python_version, "python_version", "the Python version is unknown"


def _cuda(py: PythonEnv, _req: Requirement) -> Tuple[Optional[str], str, str]:
    t = py.torch
    if t is not None and t.cuda:
        return t.cuda, "torch.cuda", ""
    pkg = py.package("torch")
    variant = (pkg.variant if pkg else None)
    if (t is None or t.import_error) and variant and cuda_of_variant(variant):
        return cuda_of_variant(variant), "packages.torch.variant", ""
    if t is None and pkg is None:
        return None, "torch.cuda", "torch (whose CUDA build this judges) is not installed"
    return None, "torch.cuda", f"torch {(t.version if t else None) or pkg.version} is not a CUDA build"


def cudnn_text(value: Optional[int]) -> Optional[str]:
    """torch.backends.cudnn.version(): 90100 -> "9.1.0" (cuDNN 9: major*10000); 8902 -> "8.9.2" (cuDNN 8: *1000)."""
    if value is None:
        return None
    if value >= 10000:
        return f"{value // 10000}.{value % 10000 // 100}.{value % 100}"
    return f"{value // 1000}.{value % 1000 // 100}.{value % 100}"


def _cudnn(py: PythonEnv, _req: Requirement) -> Tuple[Optional[str], str, str]:
    t = py.torch
    if t is not None and t.cudnn_version:
        return cudnn_text(t.cudnn_version), "torch.cudnn_version", ""
    for p in py.packages:
        w = nvidia_wheel(p.name)
        if w is not None and w[0] == "cudnn":
            return base_version(p.version) or p.version, f"packages.{p.name}", ""
    return None, "torch.cudnn_version", "no cuDNN found (torch reports none and no nvidia-cudnn wheel is installed)"


def _version_check(kind: str, what: str, reader) -> CheckFunc:
    def judge(ctx: CheckContext) -> List[Finding]:
        return _judge_version(ctx, kind, what, reader)

    judge.__name__ = f"check_{kind}"
    return judge


# (declared kind, what the summary calls the installed value, its reader, the check's title), in report order
for _kind, _what, _reader, _title in (
        ("python", "Python", _python, "Declared Python requirement holds"),
        ("torch", "torch", _package, "Declared torch requirement holds"),
        ("cuda", "torch's CUDA", _cuda, "Declared CUDA requirement holds (the torch build's CUDA)"),
        ("cudnn", "cuDNN", _cudnn, "Declared cuDNN requirement holds"),
        ("packages", "the installed version", _package, "Declared package requirements hold")):
    check(f"requirements.{_kind}", _title, categories=(CATEGORY,))(_version_check(_kind, _what, _reader))


def _declared_gpus_or_skip(ctx: CheckContext):
    """The declared targets when they name GPUs; else SkipCheck saying where GPUs are declared."""
    t = ctx.facts.targets
    if t is None or not t.target_gpus:
        raise SkipCheck("no target GPUs declared (--target-gpus, [tool.envdoctor] target-gpus, "
                        "preflight(target_gpus=...))", not_applicable="no requirements declared")
    return t


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


TARGET_GPUS = Findings("requirements.target-gpus", CATEGORY, kinds=("unknown", "absent", "ptx-only"),
                       categories=("GPU_ARCH_NOT_IN_TORCH_BUILD",))


@check("requirements.target-gpus", "Declared target GPUs: present, and served by SASS rather than PTX",
       categories=(CATEGORY, "GPU_ARCH_NOT_IN_TORCH_BUILD"))
def check_target_gpus(ctx: CheckContext) -> List[Finding]:
    t = _declared_gpus_or_skip(ctx)
    d = ctx.facts.driver
    declared = d.source == "declared"
    findings: List[Finding] = []
    targets = []
    for k, given in enumerate(t.target_gpus):
        try:
            targets.append((k, resolve_gpu(ctx.compat, given)))
        except TargetError as e:
            findings.append(TARGET_GPUS.error(
                "unknown", summary=str(e), evidence=[Evidence(f"targets.target_gpus[{k}]", given)],
                fix=Fix("Name the GPU as the matrix does, or give its architecture (sm_90)",
                        [command("envdoctor", "matrix", "gpu", given)])))
    if not declared:
        # live machine (preflight): every declared GPU must be here
        for k, gt in targets:
            hit = [g for g in d.gpus if g.compute_capability == gt.cc or
                   (g.name and ctx.compat.gpu_compute_capability(g.name) == gt.cc)]
            if gt.how != "sm_XX":
                hit = [g for g in hit if g.name and _norm(gt.given) in _norm(g.name)] or \
                      [g for g in hit if g.name and gt.model and _norm(gt.model) in _norm(g.name)]
            if hit:
                continue
            seen = [g.name for g in d.gpus]
            findings.append(TARGET_GPUS.error(
                "absent", summary=(f"Target GPU {gt.label} was declared but this machine has "
                         + (f"{', '.join(str(s) for s in seen)}" if seen else
                            f"no NVIDIA GPU visible (driver probe {d.status}"
                            + (f": {d.reason}" if d.reason else "") + ")")),
                detail="preflight() judges the machine it runs on: the declared GPUs must be there.",
                evidence=[Evidence(f"targets.target_gpus[{k}]", gt.given, expected=f"compute capability {gt.cc}",
                                   source=gt.source),
                          Evidence("driver.gpus", seen)],
                fix=Fix("Run on a machine with the declared GPUs, or change target_gpus")))
    # PTX-only coverage runs, but JIT-compiles every kernel on first use (minutes at start-up, a large
    # ComputeCache); https://developer.nvidia.com/blog/cuda-pro-tip-understand-fat-binaries-jit-caching/
    judged = 0
    for i, py in enumerate(ctx.facts.pythons):
        arch = py.torch.arch_list if py.torch else None
        if not arch or not (py.torch and py.torch.cuda):
            continue
        judged += 1
        sass = [a for a in arch if a.lower().startswith("sm_")]
        for k, gt in targets:
            runs, _ = arch_runs(arch, gt.cc)
            if runs and not arch_runs(sass, gt.cc)[0]:
                findings.append(TARGET_GPUS.warning(
                    "ptx-only", category="GPU_ARCH_NOT_IN_TORCH_BUILD",
                    summary=(f"torch {py.torch.version} has no SASS for target {gt.label}: it runs through PTX "
                             "JIT-compiled by the driver on first use"),
                    detail=("JIT compilation of every kernel can take minutes at start-up on each new machine "
                            "and fills the JIT cache (~/.nv/ComputeCache, CUDA_CACHE_MAXSIZE); a build with "
                            "SASS for this architecture avoids both."),
                    evidence=[Evidence(f"targets.target_gpus[{k}]", gt.given),
                              Evidence(f"pythons[{i}].torch.arch_list", arch,
                                       expected=sm_name(gt.cc))],
                    fix=Fix("Install a torch build with SASS for this GPU (`envdoctor recommend --gpu ...`), "
                            "or set CUDA_CACHE_MAXSIZE large enough and keep the cache on a volume",
                            [command("envdoctor", "recommend", "--gpu", gt.given)])))
    if not judged and not findings:
        # nothing to say SASS about: a ✓ here would claim coverage no build was shown to give (a CPU torch, no
        # torch, or an arch list that was not read); torch.cuda-build / torch.interpreter judge those themselves
        raise SkipCheck(("the target GPUs are present; " if not declared and targets else "")
                        + "SASS coverage not judged: no inspected interpreter has a CUDA build of torch with a "
                        "known arch list")
    return findings


EXTENSIONS_GPUS = Findings("requirements.extensions-gpus", CATEGORY, kinds=("missing", "ptx-only", "partial"))


@check("requirements.extensions-gpus", "Declared target GPUs are served by the installed CUDA extensions",
       categories=(CATEGORY, "THIRD_PARTY_EXTENSION_MISMATCH"))
def check_extensions_gpus(ctx: CheckContext) -> List[Finding]:
    """flash-attn, xformers, torchvision's _C ... judged per target GPU: SASS, or PTX that JITs (a warning)."""
    t = _declared_gpus_or_skip(ctx)
    targets = []
    for k, given in enumerate(t.target_gpus):
        try:
            gt = resolve_gpu(ctx.compat, given)
        except TargetError:
            continue  # requirements.target-gpus reports it
        targets.append(ArchTarget(f"target GPU {given}", gt.cc,
                                  Evidence(f"targets.target_gpus[{k}]", given, source=gt.source)))
    if not targets:
        raise SkipCheck("no declared target GPU is known to the matrix (see requirements.target-gpus)")
    if all(py.extensions is None for py in ctx.facts.pythons):
        raise SkipCheck("the extensions' libraries were not read (facts from an older envdoctor)")
    findings, judged, unjudged = judge_extensions(ctx, targets, EXTENSIONS_GPUS)
    if not judged and not findings:
        raise SkipCheck("; ".join(unjudged) or "no installed distribution that depends on torch ships CUDA kernels")
    return findings
