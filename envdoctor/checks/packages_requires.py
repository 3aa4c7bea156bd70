"""packages.requires-dist: every Requires-Dist of torch and of each installed distribution that depends on torch (a
companion, an extension, a trainer such as deepspeed or accelerate), judged against what is installed: what `pip
check` says, with the package that asks and the version that meets it.

Another install that downgrades a shared dependency (typing-extensions, numpy, sympy) passes every torch check and
then fails at `import torch` ("cannot import name 'TypeIs' from 'typing_extensions'") or deep inside a run. The CUDA
library wheels are packages.torch-requires' (their failures are named in CUDA terms); torch and its companions'
pairing is packages.companions' and packages.extensions'. Markers are evaluated for the judged interpreter
(torch_requires.marker_environment); a requirement behind an extra is not a requirement of the installed set.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from packaging.utils import canonicalize_name

from ..domain.versions import base_version, parse_version
from ..model.facts import Package, ProbeStatus, PythonEnv
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import pip_install
from ._markers import marker_environment
from .base import CheckContext, Findings, SkipCheck, registrar

if TYPE_CHECKING:
    from packaging.requirements import Requirement

CHECKS: list = []
check = registrar(CHECKS)

CATEGORY = "DEPENDENCY_UNMET"
# judged elsewhere, in their own terms: the CUDA wheels (packages.torch-requires) and the torch set's pairing
# (packages.companions, packages.extensions)
TORCH_SET = frozenset({"torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm"})
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])")
_TORCH = re.compile(r"^\s*torch(?![A-Za-z0-9._-])", re.I)

REQUIRES_DIST = Findings("packages.requires-dist", CATEGORY, kinds=("{package}",))


def _elsewhere(name: str) -> bool:
    return name in TORCH_SET or name.startswith(("nvidia-", "cuda-"))


def depends_on_torch(pkg: Package) -> bool:
    """torch itself, or a distribution whose Requires-Dist names torch outside an extra (the payload's rule,
    _payload/dists.depends_on_torch)."""
    return pkg.name == "torch" or any(_TORCH.match(r) and "extra" not in r.partition(";")[2]
                                      for r in pkg.requires or [])


def _unmet(py: PythonEnv, machine: Optional[str]) -> Tuple[Dict[str, List[Tuple[Package, Requirement, str]]], int]:
    """{required name: [(the distribution that asks, its requirement, the line)]} of the requirements not met,
    and how many requirements were judged."""
    from packaging.requirements import InvalidRequirement, Requirement

    env = marker_environment(py, machine)
    out: Dict[str, List[Tuple[Package, Requirement, str]]] = {}
    judged = 0
    for pkg in py.packages:
        if pkg.requires is None or not depends_on_torch(pkg):
            continue
        for line in pkg.requires:
            lead = _NAME.match(line)
            marker = line.partition(";")[2]
            if lead is None or _elsewhere(canonicalize_name(lead.group(1))) or "extra" in marker:
                continue  # (read before the slow parse: most lines of a trainer's metadata are extras)
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            try:
                if req.marker is not None and not req.marker.evaluate(dict(env, extra="")):
                    continue
            except Exception:  # an unknown marker variable in a hand-edited snapshot: not judged
                continue
            judged += 1
            name = canonicalize_name(req.name)
            have = py.package(name)
            version = parse_version(have.version) if have is not None else None
            if have is not None and (version is None or req.specifier.contains(version, prereleases=True)):
                continue
            out.setdefault(name, []).append((pkg, req, line))
    return out, judged


@check("packages.requires-dist", "Every requirement of torch and of the packages that depend on it is installed",
       categories=(CATEGORY,))
def check_requires_dist(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    judged = 0
    for i, py in enumerate(ctx.facts.pythons):
        if py.status != ProbeStatus.OK or py.package("torch") is None:
            continue
        unmet, n = _unmet(py, ctx.facts.host.machine)
        judged += n
        for name, asks in sorted(unmet.items()):
            if ctx.facts.paste is not None and py.package(name) is None and not _error_names(py, name) \
                    and not _missing_said(ctx.facts.paste.messages, name):
                continue  # a paste lists what it shows, not all that is installed: absent there is unknown
            findings.append(_finding(ctx, i, py, name, asks))
    if not judged and not findings:
        raise SkipCheck("no Requires-Dist of torch or of a package that depends on it was read (a source build, "
                        "or facts from an older envdoctor)", not_applicable="no requirements read")
    return findings


def _error_names(py: PythonEnv, name: str) -> Optional[str]:
    """The import error (torch's, or the one recorded for ``name``) when it names ``name``, else None.

    A pasted `pip show torch` lists torch's requirements by name ("Requires: filelock, fsspec, ...") and nothing
    else of the environment (issue 42, round 15: vllm-019, pytorch3d-004), so a requirement the paste does not
    list is judged missing only where an error names it (No module named 'filelock')."""
    t = py.torch
    error = (t.import_error if t is not None and t.import_error else None) or py.import_errors.get(name)
    named = bool(error) and re.search(re.escape(name.replace("-", "_")) + "|" + re.escape(name), error or "", re.I)
    return error if named else None


def _missing_said(messages: List[str], name: str) -> bool:
    """A pasted message says the module is missing: "No module named 'typing_extensions'"."""
    module = re.escape(name.replace("-", "_"))
    return any(re.search(r"No module named ['\"]?" + module + r"\b", m, re.I) for m in messages)


def _finding(ctx: CheckContext, i: int, py: PythonEnv, name: str,
             asks: List[Tuple[Package, Requirement, str]]) -> Finding:
    from packaging.specifiers import SpecifierSet

    have = py.package(name)
    spec = SpecifierSet()
    for _pkg, req, _line in asks:
        spec &= req.specifier
    want = f"{name}{spec}" if str(spec) else name
    who = ", ".join(dict.fromkeys(f"{p.name} {p.version}" for p, _r, _l in asks))
    where = py.executable or "the interpreter"
    t = py.torch
    error = (t.import_error if t is not None and t.import_error else None) or py.import_errors.get(name)
    named = _error_names(py, name) is not None
    if have is None:
        severity = Severity.ERROR
        state = f"{name} is not installed in {where}"
        breaks = f"importing {asks[0][0].name} (or the first module that needs {name}) fails with ModuleNotFoundError"
    else:
        severity = Severity.ERROR if named else Severity.WARNING
        state = f"{name} {have.version} in {where} does not meet it"
        breaks = ("code written for the required version uses names the installed one lacks: an ImportError or "
                  "AttributeError at import, or later inside a run")
    evidence = [Evidence(f"pythons[{i}].packages.{name}", have.version if have else None, expected=str(spec) or
                         "installed", source=f"Requires-Dist of {p.name} {p.version}: {line}")
                for p, _req, line in asks]
    if named:
        evidence.append(Evidence(f"pythons[{i}].torch.import_error" if t is not None and t.import_error else
                                 f"pythons[{i}].import_errors.{name}", (error or "").strip().splitlines()[-1][:300]))
    # the installed torch pinned beside it: resolving the requirement never swaps torch (issue 17)
    tver = base_version((t.version if t is not None else None) or py.package("torch").version)
    keep = [f"torch=={tver}"] if tver else []
    return REQUIRES_DIST(
        name, severity, subject=py.executable,
        summary=f"{who} require(s) {want}: {state}",
        detail=(f"pip installs a distribution's requirements with it, but a later install (another package's "
                f"pin, a --no-deps install, a downgrade by hand) can leave {name} outside them without an error; "
                f"then {breaks}. `pip check` lists the same."),
        evidence=evidence,
        fix=Fix(f"Install {want} into {where}" + (f", keeping torch {tver}" if tver else "") +
                " (torch itself is not reinstalled)", [pip_install(ctx.facts, py, [want] + keep)]),
    )
