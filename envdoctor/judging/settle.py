"""Settling a judgement: each consequence linked to its root cause (``caused_by``, catalogue.CAUSES) and each
check's status settled against every finding (no check mark without evidence, none against a finding).

The judge's last step (``judging.judge``), for the report and for each machine of a several-machine paste on its
own: a Report is what the judge made of the checks, so one loaded from JSON (``Report.from_dict``) is shown as it
was judged, never judged again, and a Report built by hand is taken as given (``settle`` makes one settled).
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

from ..catalogue import CATEGORIES, CAUSES, NEUTRAL_CATEGORIES
from ..findings import CheckResult, CheckStatus, Finding, Severity, same_subject


def settle(checks: List[CheckResult]) -> List[CheckResult]:
    """``checks`` with their consequences linked and their statuses settled."""
    return settle_statuses(link_causes(checks))


def link_causes(checks: List[CheckResult]) -> List[CheckResult]:
    """Set ``caused_by`` on every finding that follows from another one (catalogue.CAUSES).

    A consequence points at its topmost root: no driver because the container has no GPU runtime, and
    no GPU visible because there is no driver, both point at the container. The root is the first such
    finding in check order; findings about different interpreters (``pythons[i]``) are never linked. A note
    (info) goes under a problem that causes the category its ``about`` names.
    """
    flat = [(ci, fi, dataclasses.replace(f, caused_by=None))
            for ci, c in enumerate(checks) for fi, f in enumerate(c.findings)]
    serious = [f for _, _, f in flat if f.severity != Severity.INFO]

    def parent(f: Finding) -> Optional[Finding]:
        for r in serious:
            if r is not f and f.category in CAUSES.get(r.category, ()) and same_subject(r, f):
                return r
        return None

    def top_of(node: Optional[Finding], seen: set) -> Optional[Finding]:
        top = None
        while node is not None and id(node) not in seen:  # CAUSES is acyclic (tested); the guard is cheap
            seen.add(id(node))
            top = node
            node = parent(node)
        return top

    roots: Dict[int, Optional[str]] = {}
    for _, _, f in flat:
        if f.severity != Severity.INFO:
            top = top_of(parent(f), {id(f)})
        else:
            # a note about what follows from a problem goes under it: "no NVIDIA driver" as a note next to
            # the container started without the GPU runtime (not one of the same category: two data paths'
            # storage notes are about different paths)
            near = next((r for r in serious if f.about and same_subject(r, f) and
                         f.about in CAUSES.get(r.category, ())), None)
            top = top_of(parent(near), {id(near)}) or near if near is not None else None
        roots[id(f)] = top.code if top is not None else None
    out_findings: Dict[int, List[Finding]] = {}
    for ci, _fi, f in flat:
        out_findings.setdefault(ci, []).append(dataclasses.replace(f, caused_by=roots.get(id(f))))
    return [dataclasses.replace(c, findings=out_findings.get(ci, [])) for ci, c in enumerate(checks)]


AFFIRMATIONS = frozenset({"HEALTHY"})  # an info of this category is a check's evidence that it passed


def _check_subjects() -> Dict[str, frozenset]:
    """check id -> the problem categories its title makes a claim about (its declared categories). A check
    that may emit every category (the message-signature matcher) claims none: it reports other checks' subjects."""
    from ..checks.registry import ALL_CHECKS  # lazily: judging.machine_setting needs no check imported

    every = set(CATEGORIES)
    return {c.id: frozenset() if every <= set(c.categories) else frozenset(c.categories) - NEUTRAL_CATEGORIES
            for c in ALL_CHECKS}


def _more(n: int) -> str:
    return f" (+{n} more)" if n else ""


def settle_statuses(checks: List[CheckResult]) -> List[CheckResult]:
    """No check mark without evidence, none against a finding: a check that ran and emitted nothing at warning
    or error is PASSED only when it emitted nothing but HEALTHY affirmations and no other check found a problem
    in its category (a signature quoting "nvidia-smi not found" against "Container has GPU access"); otherwise
    it is NOTED, its reason saying what was noted (renderers show that in place of the title's claim). A
    problem counts against another check only when its own check does not claim that category (a check
    emitting a category it shares with its peers, INTERCONNECT, speaks of its own subject). A machine of a
    several-machine paste is settled on its own (``judge``), so nothing here matches machines."""
    subjects = _check_subjects()
    problems = [(c.id, f) for c in checks for f in c.findings if f.severity != Severity.INFO]
    out = []
    for c in checks:
        if c.status != CheckStatus.PASSED:
            out.append(c)
            continue
        own = [f for f in c.findings if f.category not in AFFIRMATIONS]
        if own:
            out.append(dataclasses.replace(c, status=CheckStatus.NOTED,
                                           reason=own[0].summary + _more(len(own) - 1)))
            continue
        mine = subjects.get(c.id, frozenset())
        against = [f for cid, f in problems if cid != c.id and f.category in mine
                   and f.category not in subjects.get(cid, frozenset())]
        if against:
            out.append(dataclasses.replace(c, status=CheckStatus.NOTED, reason=(
                f"{against[0].summary} ({against[0].code})" + _more(len(against) - 1))))
            continue
        out.append(c)
    return out
