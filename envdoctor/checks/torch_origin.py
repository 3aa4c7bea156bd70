"""Which torch is imported, and why: the interpreter's own site-packages, or a copy that PYTHONPATH, the user site,
a .pth file or a sys.path edit puts first (then every other torch fact is about that copy, not the environment)."""

from __future__ import annotations

from typing import List

from ..model.findings import Evidence, Finding, Fix, Severity
from ._shadowing import ORIGIN_VIA, foreign_torch, origin_fix, own_torch
from .base import CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

CATEGORY = "PYTHON_PACKAGE_SHADOWED"
# a kind per way torch got first on sys.path (ModuleOrigin.via)
ORIGIN = Findings("torch.origin", CATEGORY, kinds=tuple(ORIGIN_VIA))


@check("torch.origin", "torch is imported from the interpreter's own site-packages", categories=(CATEGORY,))
def check_origin(ctx: CheckContext) -> List[Finding]:
    judged = False
    findings: List[Finding] = []
    for i, py in enumerate(ctx.facts.pythons):
        o = py.torch_origin
        if o is None or o.location is None:
            continue
        judged = True
        foreign = foreign_torch(py)
        if foreign is None:
            continue
        own = own_torch(py)
        if o.via == "user-site" and own is None and not py.is_venv:
            continue  # `pip install --user torch` into a system Python: the documented place for it
        t = py.torch
        first = next((c for c in o.copies if c.index == o.entry_index), None)
        version = (t.version if t else None) or (first.version if first else None) or "of unknown version"
        where = py.executable or "the interpreter"
        via = ORIGIN_VIA.get(o.via or "other", o.via)
        if o.via == "pth" and o.pth_file:
            via = f"the .pth file {o.pth_file}"
        hidden = (f"; its own site-packages holds torch {own.version or '(version unknown)'}, which is never imported"
                  if own is not None else "; its own site-packages has no torch")
        summary = (f"{where} imports torch {version} from {o.entry} (put first on sys.path by {via}), not from its "
                   f"own site-packages{hidden}")
        evidence = [Evidence(f"pythons[{i}].torch_origin.location", o.location,
                             expected="a directory in " + (", ".join(o.site_packages) or "site-packages")),
                    Evidence(f"pythons[{i}].torch_origin.via", o.via, source=f"sys.path[{o.entry_index}] = {o.entry}")]
        if o.via == "PYTHONPATH":
            evidence.append(Evidence(f"pythons[{i}].env.PYTHONPATH", (py.env or {}).get("PYTHONPATH")))
        if own is not None:
            evidence.append(Evidence(f"pythons[{i}].torch_origin.copies", own.entry,
                                     source=f"torch {own.version} at sys.path[{own.index}], after the one imported"))
        fix_summary, commands = origin_fix(py)
        # hiding the environment's own torch is an error; living on another directory's torch is a warning where
        # a job without that variable has no torch, and a note for a .pth or finder an editable (source) install
        # of torch writes on purpose
        severity = Severity.ERROR if own is not None else (
            Severity.WARNING if o.via in ("PYTHONPATH", "user-site", "current-directory") else Severity.INFO)
        findings.append(ORIGIN(
            o.via or "other", severity,  # an info becomes a NOTE about it
            summary=summary,
            detail=("Every torch fact in this report (its version, CUDA build, companions, libraries) is about the "
                    "copy imported from there, not the environment's. Reinstalling torch into the environment "
                    "changes nothing while that entry comes first, and pip itself sees the other copy as "
                    "installed. A stale PYTHONPATH to another venv, a `pip install --user` in ~/.local, or a "
                    ".pth file left by `conda develop` / an editable install are the usual causes."),
            evidence=evidence,
            fix=Fix(fix_summary, commands, "https://docs.python.org/3/library/sys_path_init.html"),
        ))
    if not judged:
        raise SkipCheck("where torch is imported from was not read (no torch, or facts from an older envdoctor)")
    return findings
