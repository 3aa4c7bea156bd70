"""Settling a judgement: the findings of one cause grouped into one (``group_by_cause``), each consequence linked to its root cause (``caused_by``, catalogue.CAUSES) and each
check's status settled against every finding (no check mark without evidence, none against a finding).

The judge's last step (``judging.judge``), for the report and for each machine of a several-machine paste on its
own: a Report is what the judge made of the checks, so one loaded from JSON (``Report.from_dict``) is shown as it
was judged, never judged again, and a Report built by hand is taken as given (``settle`` makes one settled).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

from ..model.catalogue import CATEGORIES, CAUSES, NEUTRAL_CATEGORIES
from ..model.findings import SEVERITY_RANK as _RANK
from ..model.findings import CheckResult, CheckStatus, Finding, Fix, Severity, same_subject, subjects_of


def settle(checks: List[CheckResult]) -> List[CheckResult]:
    """``checks`` with the findings of one cause grouped, their consequences linked and their statuses settled."""
    return settle_statuses(link_causes(group_by_cause(checks)))


def _cause_key(check_id: str, f: Finding) -> Optional[tuple]:
    """What makes findings one cause: the same check, category and interpreters, and either the cause the check
    names or the same fix (its commands, else its summary). None: not grouped (a note, or nothing to key on)."""
    if f.severity == Severity.INFO or f.caused_by is not None:
        return None
    subjects = tuple(sorted((k, tuple(sorted(v))) for k, v in subjects_of(f).items()))
    if f.cause:
        return (check_id, f.category, subjects, "cause", f.cause)
    if f.fix is None or not (f.fix.commands or f.fix.summary):
        return None
    return (check_id, f.category, subjects, "fix", tuple(f.fix.commands) or f.fix.summary)


def merge_findings(members: List[Finding]) -> Finding:
    """One finding for several of one cause: the worst member's code, detail and fix (with any command another
    member adds), its summary the cause the check named (else the first summary and how many more), every
    member's item listed and every member's evidence kept (the JSON names every file)."""
    members = sorted(members, key=lambda f: _RANK.get(f.severity, 3))  # stable: check order within a severity
    head = members[0]
    items = [i for f in members for i in (f.items or [f.item or f.summary])]
    summary = (f"{head.cause} ({len(items)})" if head.cause else
               f"{head.summary} (and {len(items) - 1} more with the same fix, listed)")
    commands = list(dict.fromkeys(c for f in members if f.fix for c in f.fix.commands))
    fix = dataclasses.replace(head.fix, commands=commands) if head.fix is not None else None
    evidence = list(dict.fromkeys(e for f in members for e in f.evidence))
    return dataclasses.replace(head, summary=summary, evidence=evidence, fix=fix, items=items, item=None)


def group_by_cause(checks: List[CheckResult]) -> List[CheckResult]:
    """Each check's findings of one cause (``_cause_key``) as one finding listing them (``merge_findings``): ten
    CUDA libraries shadowed through one LD_LIBRARY_PATH entry are one problem with one fix, not ten copies.
    Idempotent: a grouped finding is alone with its key (a report read back from JSON groups to itself)."""
    out = []
    for c in checks:
        groups: Dict[Any, List[Finding]] = {}
        order: List[Any] = []
        for n, f in enumerate(c.findings):
            key = _cause_key(c.id, f)
            key = key if key is not None else ("alone", n)
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(f)
        if len(order) == len(c.findings):
            out.append(c)
            continue
        out.append(dataclasses.replace(c, findings=[groups[k][0] if len(groups[k]) == 1 else merge_findings(groups[k])
                                                    for k in order]))
    return out


def _fix_covers(root: Finding, f: Finding, root_first: bool) -> bool:
    """Does running ``root``'s fix run all of ``f``'s (its commands a subset of the root's): then ``f`` does not
    survive the root's fix and is its consequence. Equal fixes: the first in check order is the root."""
    if root.fix is None or f.fix is None or not f.fix.commands:
        return False
    mine, theirs = set(f.fix.commands), set(root.fix.commands)
    if not mine <= theirs or _RANK.get(f.severity, 3) < _RANK.get(root.severity, 3):
        return False
    return mine != theirs or root_first


def _pointing_fix(root: Finding, f: Finding) -> Optional[Fix]:
    """A consequence's fix points at its cause: fixing the root first is what to do. Its own commands are kept
    (the console shows none under the root; a script reading the JSON sees them after the pointer), so that a
    report read back links the same way."""
    if f.fix is None or f.fix.summary.startswith(POINTER):
        return f.fix
    what = root.fix.summary if root.fix is not None else root.summary
    return Fix(f"{POINTER}{root.code}: fix that first ({what[0].lower() + what[1:]}); if this remains, then: "
               f"{f.fix.summary}", list(f.fix.commands), f.fix.url)


POINTER = "Follows from "


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

    rank = {id(f): n for n, f in enumerate(serious)}
    up: Dict[int, Finding] = {}  # a finding's parent: CAUSES first, then a fix that runs its fix
    for f in serious:
        r = next((r for r in serious if r is not f and f.category in CAUSES.get(r.category, ())
                  and same_subject(r, f)), None)
        if r is not None:
            up[id(f)] = r

    def reaches(node: Optional[Finding], target: Finding) -> bool:
        seen = set()
        while node is not None and id(node) not in seen:
            if node is target:
                return True
            seen.add(id(node))
            node = up.get(id(node))
        return False

    for f in serious:
        if id(f) in up:
            continue
        # a finding whose fix another's fix runs (a warning its own fix would not outlive), unless that one
        # already follows from it (no cycle: the root of a CAUSES link stays the root)
        r = next((r for r in serious if r is not f and same_subject(r, f)
                  and _fix_covers(r, f, rank[id(r)] < rank[id(f)]) and not reaches(r, f)), None)
        if r is not None:
            up[id(f)] = r

    def parent(f: Finding) -> Optional[Finding]:
        return up.get(id(f))

    def top_of(node: Optional[Finding], seen: set) -> Optional[Finding]:
        top = None
        while node is not None and id(node) not in seen:  # CAUSES is acyclic (tested); the guard is cheap
            seen.add(id(node))
            top = node
            node = parent(node)
        return top

    roots: Dict[int, Optional[Finding]] = {}
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
        roots[id(f)] = top
    out_findings: Dict[int, List[Finding]] = {}
    for ci, _fi, f in flat:
        root = roots.get(id(f))
        linked = f if root is None else dataclasses.replace(f, caused_by=root.code, fix=_pointing_fix(root, f))
        out_findings.setdefault(ci, []).append(linked)
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
