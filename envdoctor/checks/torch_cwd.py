"""Files in the working directory named like a module ``import torch`` loads (issue 38: found by doing, not by a list
of names): a ``numbers.py``, ``queue.py``, ``typing.py`` or ``numpy/`` there is what a run started from that
directory imports first, so torch's own import, or its DataLoader, fails there while it works everywhere else.

The payload imports torch without the directory on sys.path and then compares the directory's entries with the
modules that import loaded (``PythonEnv.cwd_shadows``): the check needs no list of dangerous names, and a file
named like a module torch never loads (a ``test.py``) is not reported.
"""

from __future__ import annotations

import posixpath
from typing import List

from ..model.findings import Evidence, Finding, Fix
from ..remedies import rename_local
from ..remedies.platform import platform_of
from .base import CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

CATEGORY = "PYTHON_PACKAGE_SHADOWED"
CWD = Findings("torch.cwd-shadow", CATEGORY, kinds=("module",))


@check(CWD, "no file in the working directory hides a module torch imports", categories=(CATEGORY,))
def check_cwd_shadow(ctx: CheckContext) -> List[Finding]:
    judged = False
    findings: List[Finding] = []
    for i, py in enumerate(ctx.facts.pythons):
        seen = py.cwd_shadows
        if seen is None:
            continue
        judged = True
        # torch itself and its dependents in the directory: the smoke tier's resolve step names those (with the
        # version the installed one has), so they are not said twice
        covered = {m.get("module") for step in (py.smoke.steps if py.smoke else []) if step.name == "resolve"
                   for m in step.detail.get("modules") or []}
        shadows = [s for s in seen.shadows if s.module not in covered]
        if not shadows:
            continue
        cwd = seen.cwd or "the working directory"
        names = [s.module for s in shadows]
        shown = ", ".join(f"{posixpath.basename(s.path.rstrip('/'))} (hides {s.module} from {s.hides or '?'})"
                          for s in shadows[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        shell = platform_of(ctx.facts, py).shell
        cmds = rename_local([s.path for s in shadows], seen.cwd or ".", shell)
        findings.append(CWD.error(
            "module",
            summary=(f"a run started in {cwd} imports {', '.join(names[:4])}{' ...' if len(names) > 4 else ''} "
                     f"from that directory, not the modules `import torch` loads: {shown}"),
            detail=("Python puts the script's directory (the working directory for `python -c`, notebooks and "
                    "`python -m`) first on sys.path, ahead of the standard library and site-packages. envdoctor "
                    "imported torch without that directory and then found these files named like modules the import "
                    "loaded: started from here, `import torch` (or the DataLoader, or torch.compile) loads the local "
                    "file instead and fails with ImportError, AttributeError or 'partially initialized module'. A "
                    "script run from another directory, or the directory's own script imported by path, is not "
                    "affected."),
            evidence=[Evidence(f"pythons[{i}].cwd_shadows.shadows", [s.path for s in shadows],
                               expected="no file named like a module torch imports", source=cwd),
                      Evidence(f"pythons[{i}].cwd_shadows.hides", [s.hides for s in shadows])],
            fix=Fix("Rename the local files (and the imports of them in your own code), or start the run from "
                    "another directory", cmds, "https://docs.python.org/3/library/sys_path_init.html"),
            subject=py.executable))
    if not judged:
        if not any(py.torch is not None and py.torch.imported for py in ctx.facts.pythons):
            raise SkipCheck("torch was not imported (no torch, or --no-torch): nothing to compare the working "
                            "directory with", not_applicable="torch not imported")
        raise SkipCheck("the working directory was not compared with what `import torch` loads (facts from an "
                        "older envdoctor)")
    return findings
