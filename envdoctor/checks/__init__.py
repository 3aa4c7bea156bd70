"""Checks: pure functions from facts (+ compat data) to findings, and the runner over the registry."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import time
from typing import Iterable, List, Optional

from ..model.facts import Facts
from ..model.findings import CheckResult, CheckStatus, Finding, Severity
from .base import Check, CheckContext, SkipCheck, UndeclaredFinding, setting_of


def all_checks() -> List[Check]:
    from .registry import ALL_CHECKS

    return list(ALL_CHECKS)


def select(checks: Iterable[Check], only: Optional[List[str]] = None,
           ignore: Optional[List[str]] = None) -> List[Check]:
    """Filter by check-id globs (``driver.*``); ``only`` keeps, ``ignore`` drops."""
    out = []
    for c in checks:
        if only and not any(fnmatch.fnmatchcase(c.id, pat) for pat in only):
            continue
        if ignore and any(fnmatch.fnmatchcase(c.id, pat) for pat in ignore):
            continue
        out.append(c)
    return out


_PYTHON_PATH = re.compile(r"pythons\[(\d+)\]")


def with_subject(finding: Finding, facts: Facts) -> Finding:
    """The finding with ``subject`` set to the interpreter its evidence is about, when it names exactly one
    (so a report judging several ``--python`` targets says which one each finding concerns)."""
    if finding.subject is not None:
        return finding
    found = {int(m.group(1)) for e in finding.evidence for m in [_PYTHON_PATH.match(e.path or "")] if m}
    if len(found) != 1:
        return finding
    (i,) = found
    if i >= len(facts.pythons):
        return finding
    py = facts.pythons[i]
    subject = py.executable or py.requested_as
    return dataclasses.replace(finding, subject=subject) if subject else finding


def run_checks(facts: Facts, compat, checks: Optional[List[Check]] = None,
               expect_gpu: bool = False, setting: Optional[str] = None, fleet=None) -> List[CheckResult]:
    """Each check over ``facts`` under the per-check guard. A check that does not apply in ``setting`` (default:
    ``setting_of(facts)``; ``Check.applies``) is not run: it is skipped with the reason ``Check.not_here`` gives."""
    ctx = CheckContext(facts=facts, compat=compat, expect_gpu=expect_gpu, fleet=fleet)
    setting = setting or setting_of(facts)
    results = []
    for c in checks if checks is not None else all_checks():
        if not c.applies_to(setting):
            results.append(CheckResult(c.id, c.area, c.title, CheckStatus.SKIPPED, reason=c.not_here(setting),
                                       not_applicable=c.not_here_label(setting)))
            continue
        start = time.perf_counter()
        try:
            findings = [with_subject(f, facts) for f in (c.func(ctx) or [])]
        except SkipCheck as e:
            # a skipped check may say more in notes, never in problems: it judged nothing
            notes = [f for f in e.notes if f.severity == Severity.INFO]
            results.append(CheckResult(c.id, c.area, c.title, CheckStatus.SKIPPED, findings=notes, reason=str(e),
                                       duration_s=time.perf_counter() - start, not_applicable=e.not_applicable))
            continue
        except UndeclaredFinding:  # raised only under the test suite (base.STRICT_ENV): a test must fail on it
            raise
        except Exception as e:  # noqa: BLE001 - the per-check guard: one broken check never hides the rest
            results.append(CheckResult(c.id, c.area, c.title, CheckStatus.ERRORED,
                                       reason=f"{type(e).__name__}: {e}",
                                       duration_s=time.perf_counter() - start))
            continue
        failed = any(Severity.at_least(f.severity, Severity.WARNING) for f in findings)
        results.append(CheckResult(c.id, c.area, c.title,
                                   CheckStatus.FAILED if failed else CheckStatus.PASSED,
                                   findings=findings, duration_s=time.perf_counter() - start))
    return results
