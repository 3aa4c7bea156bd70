"""torch build checks: does the build fit this GPU, is it a CPU build on a GPU box, is there a wheel for this Python."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..domain.arch import sm_name
from ..domain.variants import cuda_of_variant, is_cpu_build, torch_variant, variant_kind
from ..domain.versions import base_version, mm_str, parse_version, version_ge
from ..facts import Facts, ProbeStatus, PythonEnv
from ..findings import Evidence, Finding, Fix, Severity
from ..remedies import command, conda_cuda_note, new_venv, pip_check, pip_install
from ._util import (
    driver_runs_cuda,
    is_nvidia_gpu_description,
    torch_builds,
    torch_envs_or_skip,
    torch_label,
)
from .base import CheckContext, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

GET_STARTED = "https://pytorch.org/get-started/locally/"


def gpu_capabilities(ctx: CheckContext) -> List[Tuple[str, Optional[str], str]]:
    """(label, compute capability or None, fact path) per GPU, from the driver, torch or the GPU table."""
    out = []
    facts = ctx.facts
    for g in facts.driver.gpus:
        cc = g.compute_capability
        path = f"driver.gpus[{g.index}].compute_capability"
        if not cc and g.name:
            # one compute capability even when the name fits several cards (a cut-short "RTX 2080 ...")
            cc = ctx.compat.gpu_compute_capability(g.name)
            if cc:
                path = f"compat gpus: compute capability of {g.name!r}"
        out.append((f"GPU {g.index} ({g.name or 'unknown model'})", cc, path))
    if not out:
        for i, py in enumerate(facts.pythons):
            if py.torch:
                for dev in py.torch.devices:
                    out.append((f"GPU {dev.index} ({dev.name or 'unknown model'})", dev.capability,
                                f"pythons[{i}].torch.devices[{dev.index}].capability"))
                if out:
                    break
    return out


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


def _releases(ctx: CheckContext) -> list:
    getter = getattr(ctx.compat, "torch_releases", None)
    return list(getter()) if getter else []


def _driver_runs(ctx: CheckContext, cuda: Optional[str]) -> Optional[bool]:
    return driver_runs_cuda(ctx.facts.driver, ctx.compat, cuda)


def find_build_for(ctx: CheckContext, cc: str, prefer_minor: Optional[str] = None
                   ) -> Optional[Tuple[str, str, bool]]:
    """(torch version, variant, driver_ok) of the best build that has kernels for ``cc``.

    Prefers the same torch minor, then the newest release; among variants, the newest CUDA the driver runs.
    """
    from ..domain.arch import arch_runs

    candidates = []
    for rel in _releases(ctx):
        for variant, arch in (rel.arch_lists or {}).items():
            if not arch or variant_kind(variant) != "cuda":
                continue
            ok, _ = arch_runs(arch, cc)
            if not ok:
                continue
            cuda = cuda_of_variant(variant)
            driver_ok = _driver_runs(ctx, cuda) if cuda else None
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
    patch = _latest_patch(ctx, rel.minor)
    return patch, variant, driver_ok is not False


def _latest_patch(ctx: CheckContext, minor: str) -> str:
    best = None
    table = getattr(ctx.compat, "companion_rows", None)
    rows = table() if table else []
    for row in rows:
        v = row.torch
        if mm_str(v) == minor and (best is None or parse_version(v) > parse_version(best)):
            best = v
    return best or f"{minor}.*"


def _companion_pins(ctx: CheckContext, torch_version: str) -> List[str]:
    comp = ctx.compat.companions(torch_version) if "*" not in torch_version else None
    pins = [f"torch=={torch_version}"]
    if comp and comp.torchvision:
        pins.append(f"torchvision=={comp.torchvision}")
    return pins


@check("torch.gpu-arch", "torch has kernels for every GPU", categories=("GPU_ARCH_NOT_IN_TORCH_BUILD",))
def check_gpu_arch(ctx: CheckContext) -> List[Finding]:
    from ..domain.arch import arch_runs

    envs = [(i, py) for i, py in torch_builds(ctx.facts) if py.torch and py.torch.cuda]
    if not envs:
        raise SkipCheck("no CUDA build of torch to judge")
    gpus = gpu_capabilities(ctx)
    if not gpus:
        raise SkipCheck("no GPU seen (driver probe: "
                        f"{ctx.facts.driver.status}{': ' + ctx.facts.driver.reason if ctx.facts.driver.reason else ''})")
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
            best = find_build_for(ctx, cc, prefer_minor=mm_str(t.version))
            if best:
                version, variant, driver_ok = best
                pins = _companion_pins(ctx, version)
                fix_summary = f"Install torch {version} built for {variant}, which has kernels for {sm}"
                cmds = [pip_install(ctx.facts, py, pins, variant, force=True)]
                if not driver_ok:
                    fix_summary += " (it also needs a newer driver: see the driver check)"
            else:
                fix_summary = f"No torch build in this matrix (as of {ctx.compat.as_of}) has kernels for {sm}"
                cmds = []
            findings.append(Finding(
                code="torch.gpu-arch/missing",
                category="GPU_ARCH_NOT_IN_TORCH_BUILD",
                severity=Severity.ERROR,
                summary=f"{torch_label(t)} has no kernels for {label}, compute capability {cc} ({sm}): {why}",
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


@check("torch.cuda-build", "torch is a CUDA build on a GPU machine", categories=("TORCH_CPU_ONLY_BUILD",))
def check_cpu_build(ctx: CheckContext) -> List[Finding]:
    envs = torch_envs_or_skip(ctx.facts)
    has, gpu_ev = _has_gpus(ctx.facts)
    if not has:
        # nothing to judge: a CPU build is right on a machine without GPUs (evidence or no check mark)
        if ctx.facts.driver.status in (ProbeStatus.OK, ProbeStatus.ABSENT):
            raise SkipCheck("no NVIDIA GPU seen on this machine: a CPU or CUDA build of torch is equally fine here")
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
        target = None
        if rel:
            runnable = [v for v in rel.cuda_variants if cuda_of_variant(v) and _driver_runs(ctx, cuda_of_variant(v)) is not False]
            if rel.default_variant in runnable:
                target = rel.default_variant
            elif runnable:
                target = max(runnable, key=lambda v: parse_version(cuda_of_variant(v)))
        from .packages import _pair_pins

        # every installed companion moves with torch: a +cpu torchaudio left behind is CUDA_VARIANT_MIXED
        pins = _pair_pins(ctx, py, version)
        cmds = [pip_install(ctx.facts, py, pins, target, force=True)] if target else []
        if py.is_conda:
            cmds.append(conda_cuda_note())
        findings.append(Finding(
            code="torch.cuda-build/cpu-only",
            category="TORCH_CPU_ONLY_BUILD",
            severity=Severity.ERROR,
            summary=(f"torch {t.version} is a CPU-only build (torch.version.cuda is None) "
                     + ("for a declared fleet with " if ctx.facts.driver.source == "declared" else "on a machine with ")
                     + f"{len(ctx.facts.driver.gpus) or 'NVIDIA'} GPU(s)"),
            detail=("A CPU build never uses the GPU: torch.cuda.is_available() is False and .cuda() raises "
                    "'Torch not compiled with CUDA enabled'. pip picks it from the CPU index, a conda 'cpuonly' "
                    "package, or a platform where only CPU wheels exist."),
            evidence=[Evidence(f"pythons[{i}].torch.version", t.version),
                      Evidence(f"pythons[{i}].torch.cuda", t.cuda, expected="a CUDA version")] + gpu_ev,
            fix=Fix(f"Reinstall torch {version} from the {target} index" if target else
                    "Reinstall a CUDA build of torch (see the selector)", cmds, GET_STARTED),
        ))
    if not judged:
        raise SkipCheck("torch's build is unknown: the import failed before it said, and its files were not read")
    return findings


@check("torch.python-version", "A torch wheel exists for this Python", categories=("PYTHON_VERSION_UNSUPPORTED",))
def check_python_version(ctx: CheckContext) -> List[Finding]:
    pys = [(i, py) for i, py in enumerate(ctx.facts.pythons) if py.python_version]
    if not pys:
        raise SkipCheck("no interpreter inspected")
    findings = []
    judged = False
    # the newest release whose Python range is confirmed (the newest may be listed but not yet inspected)
    newest = next((r for r in reversed(_releases(ctx)) if r.python_max), None)
    for i, py in pys:
        pyv = mm_str(py.python_version)
        t = py.torch
        if t and t.version:
            rel = ctx.compat.torch_release(t.version)
            if rel is None or not rel.python_min or not rel.python_max:
                continue
            judged = True
            if parse_version(pyv) < parse_version(rel.python_min) or parse_version(pyv) > parse_version(rel.python_max):
                findings.append(Finding(
                    code="torch.python-version/outside-release",
                    category="PYTHON_VERSION_UNSUPPORTED",
                    severity=Severity.WARNING,
                    summary=(f"Python {py.python_version} is outside torch {rel.minor}'s supported range "
                             f"({rel.python_min} to {rel.python_max}): no official wheel exists for it"),
                    detail="A torch that runs here was built from source or by a third party; its companions "
                           "and extensions may have no matching wheels either.",
                    evidence=[Evidence(f"pythons[{i}].python_version", py.python_version,
                                       expected=f"{rel.python_min} .. {rel.python_max}", source=rel.source)],
                    fix=Fix(f"Use Python {rel.python_max} (or another supported version) for this torch",
                            [new_venv(ctx.facts, py, rel.python_max)]),
                ))
        elif newest and newest.python_max:
            judged = True
            if parse_version(pyv) <= parse_version(newest.python_max):
                continue
            findings.append(Finding(
                code="torch.python-version/too-new",
                category="PYTHON_VERSION_UNSUPPORTED",
                severity=Severity.WARNING,
                summary=(f"Python {py.python_version} is newer than any torch release in this matrix supports "
                         f"(torch {newest.minor}: up to {newest.python_max}, as of {ctx.compat.as_of})"),
                detail="pip will find no wheel ('No matching distribution found for torch').",
                evidence=[Evidence(f"pythons[{i}].python_version", py.python_version,
                                   expected=f"<= {newest.python_max}", source=newest.source)],
                fix=Fix(f"Create the environment with Python {newest.python_max}",
                        [new_venv(ctx.facts, py, newest.python_max)]),
            ))
    if not judged:
        raise SkipCheck("the torch release's supported Python range is not in the compat matrix")
    return findings


_MISSING_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def _python_argv0(py: PythonEnv) -> str:
    """The judged interpreter for fix commands (quoted by remedies.command)."""
    return py.executable or "python"


def _import_fix(i: int, py: PythonEnv, last: str, version: str, ctx: CheckContext) -> Tuple[Fix, Optional[str]]:
    """(the fix, the root cause's finding code when another check explains the failure)."""
    from .libraries import shadow_finding, shadows

    cause = next((s for s in shadows(py, ctx.facts.system_libraries.libraries) if s.explains_import_error), None)
    if cause is not None:
        root = shadow_finding(i, py, cause)
        summary = root.fix.summary if root.fix else "fix the library shadowing"
        return Fix(f"Caused by {root.code}: {summary[0].lower() + summary[1:]}; reinstalling torch does not help",
                   list(root.fix.commands) if root.fix else []), root.code
    failure = py.failure if py.failure_stage == "importing torch" else None
    python = _python_argv0(py)
    if failure == "crashed":
        return Fix("See where the import crashes (Python's faulthandler prints the native stack), then fix or "
                   "reinstall what it names",
                   [command(python, "-X", "faulthandler", "-c", "import torch")]), None
    if failure == "timeout":
        return Fix("See where the import hangs (a network filesystem, a lock, a CUDA library load): run it by "
                   "hand, and give envdoctor more time with --python-timeout if it is only slow",
                   [command(python, "-X", "importtime", "-c", "import torch")]), None
    missing = _MISSING_MODULE.search(last)
    if missing and missing.group(1).split(".")[0] != "torch":
        # pip's --no-deps installs, or a dependency removed later: install exactly what is missing
        module = missing.group(1).split(".")[0]
        return Fix(f"Install the missing dependency {module!r} (or reinstall torch with its dependencies)",
                   [pip_install(ctx.facts, py, [module.replace('_', '-')]), pip_check(ctx.facts, py)]), None
    variant = torch_variant(py.torch)
    return Fix(f"Reinstall torch {version}" + (f" from the {variant} index" if variant else ""),
               [pip_install(ctx.facts, py, [f"torch=={version}"] if version else ["torch"], variant,
                            force=True)]), None


@check("torch.import", "torch imports", categories=("TORCH_IMPORT_FAILED",))
def check_torch_import(ctx: CheckContext) -> List[Finding]:
    # a torch whose version is unknown (no version.py, no metadata) but whose import failed is still judged:
    # a crash while importing it must never end in "No problems found"
    envs = [(i, py) for i, py in enumerate(ctx.facts.pythons)
            if py.torch is not None and (py.torch.version or py.torch.import_error)] or torch_envs_or_skip(ctx.facts)
    paste = ctx.facts.paste
    if paste is not None and not any(py.torch and py.torch.import_error for _, py in envs):
        src = (paste.provenance or {}).get("pythons[0].torch.version") or {}
        if src.get("reader") in (None, "package metadata"):
            raise SkipCheck("the paste shows torch's package, not torch importing")
    findings = []
    judged = False
    for i, py in envs:
        t = py.torch
        if py.torch_inspected is False and not t.import_error:
            continue  # --no-torch: the import was not tried
        judged = True
        if not t.import_error:
            continue
        last = t.import_error.strip().splitlines()[-1] if t.import_error.strip() else t.import_error
        version = base_version(t.version) or ""
        fix, cause = _import_fix(i, py, last, version, ctx)
        failure = py.failure if py.failure_stage == "importing torch" else None
        kind = {"crashed": "crashed", "timeout": "hung"}.get(failure or "", "failed")
        detail = "Nothing else about this torch can be checked until it imports; the build checks use its files."
        if cause:
            detail = f"A consequence of {cause} (the root cause): fix that and this import works. " + detail
        findings.append(Finding(
            code=f"torch.import/{kind}",
            category="TORCH_IMPORT_FAILED",
            severity=Severity.ERROR,
            summary=(f"`import torch` fails in {py.executable or 'the interpreter'} "
                     f"(torch {t.version or 'of unknown version'}): {last[:200]}"),
            detail=detail,
            evidence=[Evidence(f"pythons[{i}].torch.import_error", t.import_error),
                      Evidence(f"pythons[{i}].torch.version", t.version,
                               source="torch/version.py" if t.build_files and not t.imported else None)],
            fix=fix,
        ))
    if not judged:
        raise SkipCheck("torch was not imported (--no-torch)")
    return findings


# --------------------------------------------------------------------------- the interpreter itself

_UNUSABLE = {
    "not_found": "does not exist",
    "not_executable": "cannot be run",
    "not_python": "is not a Python interpreter",
    "payload_error": "failed inside envdoctor's inspection script",
    "crashed": "crashed",
    "timeout": "hung",
    "exited": "exited without answering",
}


@check("torch.interpreter", "The interpreter to diagnose answers and has torch",
       categories=("TARGET_PYTHON_UNUSABLE", "TORCH_NOT_INSTALLED"))
def check_interpreter(ctx: CheckContext) -> List[Finding]:
    """A target that cannot be inspected, or has no torch, is a finding: never an empty, clean report."""
    if ctx.facts.origin == "paste":
        raise SkipCheck("a paste is judged without running an interpreter")
    if not ctx.facts.pythons:
        raise SkipCheck("no interpreter was inspected")
    findings = []
    for i, py in enumerate(ctx.facts.pythons):
        name = py.executable or py.requested_as or "the interpreter"
        t = py.torch
        if py.status == ProbeStatus.SKIPPED:
            continue
        if py.failure and not (t is not None and t.import_error and py.failure_stage == "importing torch"):
            # (a crash or hang inside `import torch` with torch's files read is torch.import's finding)
            what = _UNUSABLE.get(py.failure, "could not be inspected")
            stage = f" while {py.failure_stage}" if py.failure_stage else ""
            findings.append(Finding(
                code=f"torch.interpreter/{py.failure.replace('_', '-')}",
                category="TARGET_PYTHON_UNUSABLE",
                severity=Severity.ERROR,
                summary=f"{name} {what}{stage}: {py.reason or 'no reason given'}",
                detail=("envdoctor learns about torch, its CUDA build and libraries by running this interpreter; "
                        "it did not answer, so none of that is judged and no clean verdict is possible."),
                evidence=[Evidence(f"pythons[{i}].status", py.status),
                          Evidence(f"pythons[{i}].failure", py.failure),
                          Evidence(f"pythons[{i}].reason", py.reason)],
                fix=Fix("Point --python at the Python 3.8+ interpreter your jobs run, and run it by hand to see "
                        "why it fails", [command(name, "-c", "import sys; print(sys.version)")]),
            ))
            continue
        if py.status != ProbeStatus.OK or t is not None:
            continue
        if py.package("torch") is not None:
            continue  # a distribution without a torch package directory: torch.import / packages judge it
        chosen = py.requested_as or ""
        explicit = chosen == "--python" or chosen.startswith("$")
        findings.append(Finding(
            code="torch.interpreter/no-torch",
            category="TORCH_NOT_INSTALLED",
            severity=Severity.ERROR if explicit else Severity.WARNING,
            summary=(f"torch is not installed in {name}"
                     + (f" (chosen as {chosen})" if chosen and chosen != "--python" else "")),
            detail=("No torch package is importable there, so the torch build, CUDA variant and library checks "
                    "have nothing to judge." + ("" if explicit else
                                                " It was picked by default: your torch may live elsewhere.")),
            evidence=[Evidence(f"pythons[{i}].torch", None, expected="an installed torch"),
                      Evidence(f"pythons[{i}].requested_as", py.requested_as)],
            fix=Fix("Diagnose the interpreter that has torch (envdoctor --python /path/to/venv/bin/python), or "
                    "install torch there", [pip_install(ctx.facts, py, ["torch"])], GET_STARTED),
        ))
    return findings
