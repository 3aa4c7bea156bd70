"""Executable .pth lines: an ``import ...`` line in a site-packages .pth file runs at every start-up; one that puts
another site-packages (or a directory holding torch) ahead of the interpreter's own changes what every import finds."""

from __future__ import annotations

from typing import List

from ..model.facts import PthExecLine
from ..model.findings import Evidence, Finding, Fix
from ..remedies import pth_line_removal
from .base import PROBED, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

PTH = Findings("torch.pth-exec", "PTH_EXEC_SYS_PATH", kinds=("reorders-sys-path",))
SITE_DOC = "https://docs.python.org/3/library/site.html"


def _offending(line: PthExecLine):
    """The entries the line put ahead of the interpreter's own site-packages that hold packages (another
    site-packages, or torch): what the line does decides, not its file name (distutils-precedence.pth adds an
    import hook, an __editable__ finder a path hook entry, _virtualenv.pth patches distutils: none of them put
    a site-packages first)."""
    return [a for a in line.added if a.before_own_site and (a.site_packages or a.holds_torch)]


def removal(line: PthExecLine) -> List[str]:
    return [pth_line_removal(line.file, line.line_no, line.file_lines)]


@check(PTH, "No .pth file's code puts another site-packages before the interpreter's own",
       categories=("PTH_EXEC_SYS_PATH",), applies=PROBED)
def check_pth_exec(ctx: CheckContext) -> List[Finding]:
    findings: List[Finding] = []
    judged = False
    for i, py in enumerate(ctx.facts.pythons):
        if py.pth_exec is None:
            continue
        judged = True
        name = py.executable or "the interpreter"
        for k, line in enumerate(py.pth_exec):
            bad = _offending(line)
            if not bad or line.line_no < 1:
                continue
            what = ", ".join(f"{a.path} (sys.path[{a.index}]" + (", holds torch)" if a.holds_torch else ")")
                             for a in bad)
            torch_first = any(a.holds_torch for a in bad)
            findings.append(PTH.error(
                "reorders-sys-path",
                summary=(f"{line.file} line {line.line_no} runs code at every start of {name} that puts {what} "
                         "before its own site-packages"),
                detail=("site.py executes a .pth line that starts with `import`; this one inserts another "
                        "directory of packages ahead of the environment's own, so "
                        + ("the torch there is imported instead of the environment's." if torch_first else
                           "its copies of packages win over the environment's.")
                        + " Reinstalling into the environment does not change that."),
                evidence=[Evidence(f"pythons[{i}].pth_exec[{k}].line", line.line, source=f"{line.file}:{line.line_no}"),
                          Evidence(f"pythons[{i}].pth_exec[{k}].added", [a.path for a in bad],
                                   expected="no entry ahead of " + ", ".join(py.site_packages or ["site-packages"]))],
                fix=Fix((f"Remove {line.file} (this line is all it holds)" if line.file_lines == 1 else
                         f"Delete line {line.line_no} of {line.file}"), removal(line), SITE_DOC),
            ))
    if not judged:
        raise SkipCheck("the .pth files' executable lines were not replayed (the interpreter did not answer, or "
                        "older facts)")
    return findings
