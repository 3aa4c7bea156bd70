"""The report's summary view, shared by the console and Markdown renderers: the header and verdict, each
check's mark, the per-area lines with their counts, what did not apply, and the findings in the order they
are shown (a consequence under its root cause) with their evidence and the shell their fix is quoted for.

Renderers lay this out; none of them decides what a count, a mark or a verdict is.
"""

from __future__ import annotations

import json
from dataclasses import field
from typing import Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.catalogue import UNRECOGNISED
from ..model.facts import Facts
from ..model.findings import CheckResult, CheckStatus, Finding, Report, Severity
from ..remedies.platform import fix_shell
from .facts_view import fmt

_CHECK_SYMBOLS = {  # (symbol, style)
    "passed": ("✓", "green"),
    CheckStatus.NOTED: ("i", "cyan"),  # ran, but a note or another check's finding speaks against its title
    "warning": ("!", "yellow"),
    "error": ("✗", "red"),
    CheckStatus.SKIPPED: ("-", "dim"),
    CheckStatus.ERRORED: ("E", "magenta"),
}

SEVERITY_SYMBOLS = {
    Severity.ERROR: ("✗", "bold red"),
    Severity.WARNING: ("!", "bold yellow"),
    Severity.INFO: ("i", "cyan"),
}


def check_symbol(check: CheckResult) -> Tuple[str, str]:
    if check.status in (CheckStatus.SKIPPED, CheckStatus.ERRORED, CheckStatus.NOTED):
        return _CHECK_SYMBOLS[check.status]
    severities = {f.severity for f in check.findings}
    if Severity.ERROR in severities:
        return _CHECK_SYMBOLS["error"]
    if Severity.WARNING in severities or check.status == CheckStatus.FAILED:
        return _CHECK_SYMBOLS["warning"]
    return _CHECK_SYMBOLS["passed"]


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def interrupted_probes(report: Report) -> List[str]:
    """The probes a SIGINT/SIGTERM cut short (a partial report), by name."""
    return [p.name for p in report.facts.probes if (p.reason or "").startswith("interrupted by ")]


def verdict(report: Report, where: str = "above") -> str:
    """"2 errors, 1 warning — see fixes above" or "No problems found".

    One root cause is one problem: its consequences are named after it, not counted as errors of their own.
    """
    problems = report.problems
    consequences = sum(1 for f in report.findings if f.caused_by is not None)
    errors = sum(1 for f in problems if f.severity == Severity.ERROR)
    warnings = sum(1 for f in problems if f.severity == Severity.WARNING)
    errored = sum(1 for c in report.checks if c.status == CheckStatus.ERRORED)
    tail = f"; {plural(errored, 'check')} could not run (errored)" if errored else ""
    if consequences:
        tail = f" ({plural(consequences, 'consequence')} listed under {'it' if len(problems) == 1 else 'them'})" \
            + tail
    cut = interrupted_probes(report)
    if cut:  # a partial report: what was not read cannot be called fine
        tail += f"; partial report: interrupted before {', '.join(cut)} finished"
        if not (errors or warnings):
            return f"No problems in what was read before the interruption{tail}"
    if not report.judged and not (errors or warnings):
        n = len(report.checks)
        if not n:
            return f"Nothing could be judged: no check ran{tail}"
        return (f"Nothing could be judged: {'the check' if n == 1 else f'all {n} checks'} skipped, the facts "
                f"{'it needs' if n == 1 else 'they need'} missing (reasons {where}){tail}")
    if report.measured_nothing:  # `bench` with every benchmark skipped: never "No problems found" (issue 40)
        results = report.facts.bench.results
        how = "skipped" if all(r.status == "skipped" for r in results) else "skipped or failed"
        what = f"the one benchmark was {how}" if len(results) == 1 else f"all {len(results)} benchmarks were {how}"
        if not (errors or warnings):
            return f"Nothing was measured: {what} (reasons {where}){tail}"
        tail += f"; nothing was measured: {what}"
    if problems and all(f.category == UNRECOGNISED for f in problems):
        # an error nothing explains: not judged, never "no problems" (checks/diagnose_unexplained.py)
        what = "an error in the paste is" if len(problems) == 1 else f"errors in {len(problems)} of its reports are"
        return f"Not judged: {what} not recognised — paste what the finding asks for {where}{tail}"
    if errors or warnings:
        parts = []
        if errors:
            parts.append(plural(errors, "error"))
        if warnings:
            parts.append(plural(warnings, "warning"))
        return f"{', '.join(parts)} — see fixes {where}{tail}"
    if any(f.category == "HEALTHY" and f.code.startswith("messages.") for f in report.all_findings):
        # the paste shows an error, recognised as the program's (out of memory, a device-side assert): the machine
        # is fine, but "no problems" would deny the error the user pasted
        return f"No environment problem found: the error the paste shows is the program's, not the machine's{tail}"
    return f"No problems found{tail}"


def header_line(report: Report) -> str:
    origin = report.facts.origin
    if report.facts.collected_at:
        origin += f", collected {report.facts.collected_at}"
    targets = getattr(report.facts, "targets", None)
    if targets is not None:
        origin += f" + declared targets ({targets.source or 'given'})"
    data = getattr(report, "compat_source", None)
    return (
        f"envdoctor {report.envdoctor_version} · facts: {origin} · "
        f"compat matrix as of {fmt(report.compat_as_of)}" + (f" ({data})" if data else "")
    )


def console_header(report: Report) -> str:
    """header_line, shorter: "envdoctor 0.1.0 · facts: live 2026-12-01 20:24 UTC · compat matrix as of ..."."""
    facts = report.facts
    when = facts.collected_at or ""
    if len(when) >= 16 and when[10:11] == "T" and when.endswith(("+00:00", "Z")):
        when = f"{when[:10]} {when[11:16]} UTC"
    origin = ", ".join(x for x in (facts.origin, when) if x)
    targets = getattr(facts, "targets", None)
    if targets is not None:
        origin += f" + declared targets ({targets.source or 'given'})"
    data = getattr(report, "compat_source", None)
    return (f"envdoctor {report.envdoctor_version} · facts: {origin} · compat matrix as of "
            f"{fmt(report.compat_as_of)}" + (f" ({data})" if data else ""))



def skip_label(check: CheckResult, facts: Facts) -> str | None:
    """The short "did not apply" label of a skipped check (``CheckResult.not_applicable``, as the check or the
    judge said), or None when it is a fact that could not be read."""
    return check.not_applicable if check.status == CheckStatus.SKIPPED else None



# --------------------------------------------------------------------------- the checks


@dataclass(frozen=True)
class AreaLine:
    """flutter doctor's shape: one line per area with what was judged (✓ / ! / ✗ and the counts)."""

    mark: Tuple[str, str]  # (symbol, style) of the worst judged check
    area: str
    counts: str  # "1 error, 3 passed"


@dataclass(frozen=True)
class CheckSummary:
    areas: List[AreaLine]
    not_applied: Optional[str]  # "62 checks did not apply here (judged in pastes only, ...)"
    unread: Optional[str]  # "12 checks could not be judged (facts unknown): torch.import, ..."
    by_area: Dict[str, List[CheckResult]] = field(default_factory=dict)  # every check, in display order


def check_summary(report: Report) -> CheckSummary:
    """The per-area lines, then one line for the checks that did not apply and one for those whose facts
    could not be read."""
    areas: Dict[str, List[CheckResult]] = {}
    for check in report.checks:
        areas.setdefault(check.area, []).append(check)
    rank = {"✓": 0, "-": 0, "!": 2, "E": 2, "✗": 3}
    lines: List[AreaLine] = []
    not_applied: Dict[str, int] = {}
    unread: List[str] = []
    for area, checks in areas.items():
        counts = {"error": 0, "warning": 0, "errored": 0, "noted": 0, "passed": 0}
        worst = ("✓", "green")
        for check in checks:
            if check.status == CheckStatus.SKIPPED:
                label = skip_label(check, report.facts)
                if label is None:
                    unread.append(check.id)
                else:
                    not_applied[label] = not_applied.get(label, 0) + 1
                continue
            symbol = check_symbol(check)
            if rank.get(symbol[0], 1) > rank.get(worst[0], 1):
                worst = symbol
            if check.status == CheckStatus.ERRORED:
                counts["errored"] += 1
            elif symbol[0] == "✗":
                counts["error"] += 1
            elif symbol[0] == "!":
                counts["warning"] += 1
            elif check.status == CheckStatus.NOTED:  # judged, with a note a ✓ would contradict
                counts["noted"] += 1
            else:
                counts["passed"] += 1
        if not any(counts.values()):
            continue  # nothing judged here: counted in the lines below
        parts = [plural(counts["error"], "error")] if counts["error"] else []
        parts += [plural(counts["warning"], "warning")] if counts["warning"] else []
        errored = [c for c in checks if c.status == CheckStatus.ERRORED]
        parts += [f"{len(errored)} could not run ({'; '.join(f'{c.id}: {c.reason}' for c in errored)})"] \
            if errored else []
        parts += [f"{counts['noted']} noted"] if counts["noted"] else []
        parts += [f"{counts['passed']} passed"] if counts["passed"] else []
        lines.append(AreaLine(worst, area, ", ".join(parts)))
    na_line = None
    if not_applied:
        n = sum(not_applied.values())
        why = ", ".join(label for label, _ in sorted(not_applied.items(), key=lambda kv: -kv[1]))
        na_line = f"{plural(n, 'check')} did not apply here ({why})"
    unread_line = f"{plural(len(unread), 'check')} could not be judged (facts unknown): {', '.join(unread)}" \
        if unread else None
    return CheckSummary(lines, na_line, unread_line, areas)


def check_counts(report: Report) -> Tuple[int, int]:
    """(checks that could not be judged for want of facts, checks that did not apply): the counts of the two
    lists ``check_summary`` says in full."""
    unread = na = 0
    for check in report.checks:
        if check.status == CheckStatus.SKIPPED:
            if skip_label(check, report.facts) is None:
                unread += 1
            else:
                na += 1
    return unread, na


def check_note(check: CheckResult) -> Optional[str]:
    """Why a check has no verdict of its own: "skipped: <reason>" or "check errored: <reason>"."""
    if check.status == CheckStatus.SKIPPED:
        return f"skipped: {check.reason or 'no reason given'}"
    if check.status == CheckStatus.ERRORED:
        return f"check errored: {check.reason or 'no reason given'}"
    return None


# --------------------------------------------------------------------------- the findings


@dataclass(frozen=True)
class EvidenceLine:
    text: str  # 'driver.version = "525.60.13"'
    expected: Optional[str]
    source: Optional[str]


def _quoted(value: str) -> str:
    """A quoted evidence string as the reader sees it: a dash or an accent stays itself (not "\\u2014"), while a
    control or format character (C1 controls, bidi overrides) a paste carried in is still shown escaped, never
    sent to the terminal."""
    import unicodedata

    return "".join(c if unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")
                   else json.dumps(c)[1:-1] for c in json.dumps(value, ensure_ascii=False))


def evidence_lines(finding: Finding) -> List[EvidenceLine]:
    return [EvidenceLine(f"{ev.path} = {_quoted(ev.value) if isinstance(ev.value, str) else fmt(ev.value)}",
                         ev.expected or None, ev.source or None) for ev in finding.evidence]


@dataclass(frozen=True)
class FindingView:
    finding: Finding
    follows: bool  # a consequence, shown under its root cause (fixing the root fixes it), not on its own
    consequences: List[Finding]  # the findings that follow from this one
    shell: str  # what the fix commands are quoted for (remedies.shell POSIX or POWERSHELL)

    @property
    def evidence(self) -> List[EvidenceLine]:
        return evidence_lines(self.finding)


def finding_views(report: Report) -> List[FindingView]:
    """The findings in the order they are shown, each with how it relates to the others."""
    findings = report.findings
    codes = {f.code for f in findings}
    return [FindingView(f, f.caused_by is not None and f.caused_by in codes,
                        [c for c in findings if c.caused_by == f.code and c is not f],
                        fix_shell(report.facts, f.subject)) for f in findings]


def several_pythons(facts: Facts) -> bool:
    """Several interpreters were judged: each finding says which one it (and its fix) is about."""
    return len(facts.pythons) > 1
