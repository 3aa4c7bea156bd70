"""torch import checks: the interpreter answers and torch imports (with the cause of a failed import)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..domain.variants import torch_variant
from ..domain.versions import base_version
from ..model.facts import ProbeStatus, PythonEnv
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import GET_STARTED, command, pip_check, pip_install
from ._planted import with_refused
from ._util import torch_envs_or_skip
from .base import EVERYWHERE, PROBED, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)


_MISSING_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def _python_argv0(py: PythonEnv) -> str:
    """The judged interpreter for fix commands (quoted by remedies.command)."""
    return py.executable or "python"


def _torch_requirement(py: PythonEnv, dist: str) -> str:
    """``dist`` with the version range torch's own Requires-Dist gives it ("typing-extensions>=4.10.0"), so the
    install brings what torch needs; the bare name when torch's metadata does not list it."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    pkg = py.package("torch")
    for line in (pkg.requires or []) if pkg else []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == canonicalize_name(dist) and (req.marker is None or "extra" not in str(req.marker)):
            return f"{req.name}{req.specifier}"
    return dist


def _import_fix(i: int, py: PythonEnv, last: str, version: str, ctx: CheckContext) -> Tuple[Fix, Optional[str]]:
    """(the fix, the root cause's finding code when another check explains the failure)."""
    from ._shadowing import shadow_finding, shadows

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
                   [pip_install(ctx.facts, py, [_torch_requirement(py, module.replace('_', '-'))]),
                    pip_check(ctx.facts, py)]), None
    from ._shadowing import or_origin_fix

    variant = torch_variant(py.torch)
    if not version:  # no torch of unknown version is installed over it: `envdoctor recommend` names one
        return or_origin_fix(py, Fix("Reinstall torch: its version is unknown here, so pick the build with "
                                     "`envdoctor recommend` (it names the pinned install command)",
                                     [command("envdoctor", "recommend")])), None
    return or_origin_fix(py, Fix(f"Reinstall torch {version}" + (f" from the {variant} index" if variant else ""),
                                 [pip_install(ctx.facts, py, [f"torch=={version}"], variant, force=True)])), None


IMPORT = Findings("torch.import", "TORCH_IMPORT_FAILED", kinds=("failed", "crashed", "hung"))


@check("torch.import", "torch imports", categories=("TORCH_IMPORT_FAILED",), applies=EVERYWHERE)
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
        findings.append(IMPORT.error(
            kind, summary=(f"`import torch` fails in {py.executable or 'the interpreter'} "
                     f"(torch {t.version or 'of unknown version'}): {last[:200]}"),
            detail=detail,
            evidence=[Evidence(f"pythons[{i}].torch.import_error", t.import_error),
                      Evidence(f"pythons[{i}].torch.version", t.version,
                               source="torch/version.py" if t.build_files and not t.imported else None)],
            fix=fix,
        ))
    if not judged:
        raise SkipCheck("torch was not imported (--no-torch)", not_applicable="torch not imported (--no-torch)")
    return findings


_UNUSABLE = {
    "not_found": "does not exist",
    "not_executable": "cannot be run",
    "not_python": "is not a Python interpreter",
    "payload_error": "failed inside envdoctor's inspection script",
    "crashed": "crashed",
    "timeout": "hung",
    "exited": "exited without answering",
}


def _no_torch_fix(ctx: CheckContext, py: PythonEnv) -> Fix:
    """Diagnose the interpreter with torch, or install torch: pinned to the newest release with a wheel for this
    Python (a plain `pip install torch` on an old Python silently resolves an old torch; torch.python-version says
    which Pythons the newest torch supports)."""
    from ..remedies.torch_plan import newest_torch_for_python

    fits = newest_torch_for_python(ctx.facts, ctx.compat, py.python_version)
    head = "Diagnose the interpreter that has torch (envdoctor --python /path/to/venv/bin/python), or install torch there"
    if fits is None:
        return Fix(head + f": no torch release in the matrix has a wheel for Python {py.python_version or '(unknown)'}",
                   [], GET_STARTED)
    rel, patch = fits
    return Fix(head + f": torch {patch} is the newest release with a wheel for Python {py.python_version}",
               [pip_install(ctx.facts, py, [f"torch=={patch}"])], GET_STARTED)


# an interpreter that could not be inspected (a kind per failure, as PythonEnv.failure names it) or has no torch
INTERPRETER = Findings("torch.interpreter", "TARGET_PYTHON_UNUSABLE",
                       kinds=tuple(f.replace("_", "-") for f in _UNUSABLE) + ("no-torch", "not-a-torch-environment",
                                                                             "venv-base-missing"),
                       kind_categories={"no-torch": "TORCH_NOT_INSTALLED",
                                        "not-a-torch-environment": "TORCH_NOT_INSTALLED"})


@check("torch.interpreter", "The interpreter to diagnose answers and has torch",
       categories=("TARGET_PYTHON_UNUSABLE", "TORCH_NOT_INSTALLED"), applies=PROBED)
def check_interpreter(ctx: CheckContext) -> List[Finding]:
    """A target that cannot be inspected, or has no torch, is a finding: never an empty, clean report."""
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
            broken = _broken_venv(i, py, name, ctx)
            if broken is not None:
                findings.append(broken)
                continue
            what = _UNUSABLE.get(py.failure, "could not be inspected")
            stage = f" while {py.failure_stage}" if py.failure_stage else ""
            findings.append(INTERPRETER.error(
                py.failure.replace("_", "-"), summary=f"{name} {what}{stage}: {py.reason or 'no reason given'}",
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
        if py.own_environment or py.externally_managed:
            findings.append(_not_a_torch_environment(i, py, name))
            continue
        chosen = py.requested_as or ""
        explicit = chosen == "--python" or chosen.startswith("$")
        findings.append(INTERPRETER(
            "no-torch", Severity.ERROR if explicit else Severity.WARNING, category="TORCH_NOT_INSTALLED",
            summary=(f"torch is not installed in {name}"
                     + (f" (chosen as {chosen})" if chosen and chosen != "--python" else "")),
            detail=("No torch package is importable there, so the torch build, CUDA variant and library checks "
                    "have nothing to judge." + ("" if explicit else
                                                " It was picked by default: your torch may live elsewhere.")),
            evidence=[Evidence(f"pythons[{i}].torch", None, expected="an installed torch"),
                      Evidence(f"pythons[{i}].requested_as", py.requested_as)],
            fix=with_refused(_elsewhere_fix(py) or _no_torch_fix(ctx, py), py),
        ))
    return findings


def _broken_venv(i: int, py: PythonEnv, name: str, ctx: CheckContext) -> Optional[Finding]:
    """A venv whose interpreter link leads nowhere (its base Python was removed or moved): the venv, its
    site-packages and torch are still there, so the fix repairs the links rather than judging another Python."""
    from ..remedies import repair_venv, untrusted_note, venv_python_word
    from ..remedies.platform import platform_of

    venv = py.venv
    if venv is None or py.failure not in ("not_found", "not_executable"):
        return None
    dead = [link for link in venv.links if link.resolves is False]
    if not dead:
        return None
    last = dead[-1]  # bin/python -> python3.12 -> /base/bin/python3.12: the one naming the base comes last
    base = next((link.target for link in dead if link.target and "/" in link.target), last.target)
    home = f" (pyvenv.cfg home = {venv.home}, " + ("which is gone)" if venv.home_exists is False else "still there)") \
        if venv.home else ""
    word = venv_python_word(venv)
    found = venv.same_minor_python is not None
    version = venv.version or "its version (pyvenv.cfg names none)"
    return INTERPRETER.error(
        "venv-base-missing",
        summary=(f"{name} is a link to {base}, which no longer exists: the base Python of the venv {venv.root} was "
                 f"removed or moved{home}"),
        detail=(f"The venv's packages are still in {venv.root}, built for Python {version}; only its interpreter "
                "links are dead. Re-pointing them at a live Python of the same minor version repairs it without "
                "reinstalling anything" + ("." if found else "." if venv.same_minor_untrusted else
                                            f"; no {word} was found on PATH: install Python {version} first.")
                + untrusted_note(venv)),
        evidence=[Evidence(f"pythons[{i}].venv.links", [f"{link.path} -> {link.target}" for link in dead],
                           expected="links to an existing interpreter"),
                  Evidence(f"pythons[{i}].venv.home", venv.home, source=f"{venv.root}/pyvenv.cfg"),
                  Evidence(f"pythons[{i}].venv.version", venv.version, source=f"{venv.root}/pyvenv.cfg"),
                  Evidence(f"pythons[{i}].venv.same_minor_python", venv.same_minor_python)],
        fix=Fix(f"Remove the dead links and rebuild them with {word}: `venv --upgrade` keeps the installed packages",
                repair_venv(venv, platform_of(ctx.facts, py).shell),
                "https://docs.python.org/3/library/venv.html"),
    )


def _elsewhere_fix(py: PythonEnv) -> Optional[Fix]:
    """envdoctor pointed at the interpreters with torch it saw, when it saw any."""
    found = list(py.torch_elsewhere or [])
    if not found:
        return None
    return Fix("Judge the interpreter your jobs run: " + ("this one has torch" if len(found) == 1 else
                                                         "these have torch"),
               [command("envdoctor", "--python", exe) for exe in found[:3]])


def _not_a_torch_environment(i: int, py: PythonEnv, name: str) -> Finding:
    """envdoctor's own environment, or a system Python that pip may not install into (PEP 668), without torch:
    the wrong interpreter was judged, not a broken one. One severity however it was chosen, and the fix points
    --python at the interpreters with torch envdoctor saw rather than at installing torch here."""
    what = "envdoctor's own environment" if py.own_environment else \
        "a system Python that the distribution manages, PEP 668"
    chosen = py.requested_as or ""
    how = f", chosen as {chosen}" if chosen and chosen != "--python" else ""
    found = list(py.torch_elsewhere or [])
    fix = _elsewhere_fix(py)
    if fix is None:
        fix = Fix("Judge the interpreter your jobs run; none with torch was seen (active conda envs, venvs "
                  "under the cwd and home, python3 on PATH)", ["envdoctor --python /path/to/venv/bin/python"])
    fix = with_refused(fix, py)
    return INTERPRETER.warning(
        "not-a-torch-environment", category="TORCH_NOT_INSTALLED",
        summary=f"Judged {name} ({what}{how}): it has no torch, so torch was not judged",
        detail="Not where torch lives; the driver, toolkit and host facts above still hold.",
        evidence=[Evidence(f"pythons[{i}].own_environment" if py.own_environment else
                           f"pythons[{i}].externally_managed", True),
                  Evidence(f"pythons[{i}].torch", None, expected="an installed torch"),
                  Evidence(f"pythons[{i}].torch_elsewhere", found or None)],
        fix=fix,
    )
