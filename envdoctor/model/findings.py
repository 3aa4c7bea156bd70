"""Findings, check results and the report: what checks produce and renderers print."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional

from ..domain.fastclass import dataclass
from .catalogue import UNRECOGNISED
from .facts import Facts, to_dict

REPORT_SCHEMA_VERSION = 1


class Severity:
    ERROR = "error"  # the stack will not work, or will silently run far below what you pay for
    WARNING = "warning"  # it works, but something will bite (slower, fragile, breaks on rebuild)
    INFO = "info"  # worth knowing; nothing to fix

    ORDER = {INFO: 0, WARNING: 1, ERROR: 2}

    @classmethod
    def at_least(cls, severity: str, threshold: str) -> bool:
        return cls.ORDER[severity] >= cls.ORDER[threshold]


class CheckStatus:
    # ran and judged its subject fine: no finding of its own but HEALTHY affirmations (the evidence of the
    # pass), and no finding elsewhere in the report about its subject
    PASSED = "passed"
    # ran, nothing at warning or error of its own, but its own notes ("persistence mode off", "cannot tell whether
    # it is an HDD") or another check's problem in its category (a message signature) say something about its
    # subject: not a pass, and not shown under its title, which would claim the opposite (``reason`` says what)
    NOTED = "noted"
    FAILED = "failed"  # ran, at least one warning or error
    SKIPPED = "skipped"  # judged nothing: a fact it needs is missing or not there (reason says which and why)
    ERRORED = "errored"  # the check itself crashed: shown, never hiding the others


@dataclass(frozen=True)
class Evidence:
    path: str  # dotted path into the facts: "pythons[0].torch.cuda"
    value: Any = None  # what was seen
    expected: Optional[str] = None  # what would be fine: ">= 525.60.13"
    source: Optional[str] = None  # the compat row / document that says so

    def __hash__(self) -> int:
        # the value is whatever was seen (a list of throttle reasons, a topology matrix, a dict of params): hashed
        # through a frozen copy, so evidence can be de-duplicated and kept in sets whatever its value (issue 39:
        # merging two findings whose evidence held a list ended the run with exit 3)
        return hash((self.path, frozen(self.value), self.expected, self.source))


def frozen(value: Any) -> Any:
    """A hashable stand-in for ``value`` that is equal where the values are equal: lists and tuples as tuples,
    dicts as the frozenset of their items (dict equality ignores order), sets as frozensets, anything else
    unhashable by its type and repr."""
    if isinstance(value, (list, tuple)):
        return (type(value) is list, tuple(frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((frozen(k), frozen(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(frozen(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return (type(value).__qualname__, repr(value))
    return value


@dataclass(frozen=True)
class Fix:
    summary: str  # imperative: "Install the CUDA 12.8 build of torch"
    commands: List[str] = field(default_factory=list)  # copy-pasteable; envdoctor never runs them
    url: Optional[str] = None


@dataclass(frozen=True)
class Finding:
    code: str  # stable, area.check/kind: "driver.cuda-compat/too-old"
    category: str  # UPPER_SNAKE from envdoctor.model.catalogue.CATEGORIES
    severity: str
    summary: str  # one line, with the numbers
    detail: Optional[str] = None  # why it matters
    evidence: List[Evidence] = field(default_factory=list)
    fix: Optional[Fix] = None
    confidence: Optional[str] = None  # diagnose: "high", "medium", "low"
    subject: Optional[str] = None  # the interpreter the finding is about (its path), when it is about one
    # an info is a note, never a problem: its category is NOTE and ``about`` keeps the problem category
    # the note relates to (a script filtering on CPU_STARVED must not see "no GPU to judge the ratio")
    about: Optional[str] = None
    # the code of the root-cause finding this one follows from (set by the Report from
    # catalogue.CAUSES, or because its fix is part of the other's); a consequence is listed under its root and
    # not counted as a problem of its own
    caused_by: Optional[str] = None
    # findings of one cause are one finding (group_by_cause): ``cause`` is what a check says they share (the
    # headline of the group: "LD_LIBRARY_PATH entry /opt/cuda/lib64 shadows torch's CUDA libraries"), ``item``
    # what this one adds to it (a file); a grouped finding lists its members' items in ``items``
    cause: Optional[str] = None
    item: Optional[str] = None
    items: List[str] = field(default_factory=list)
    # what a scheduler can do about it (model/actions.py's vocabulary: none, reconfigure, restart-process,
    # reset-gpu, reboot-node, drain-node); left None, the catalogue's (catalogue.action_for) is filled in
    action: Optional[str] = None

    def __post_init__(self) -> None:
        from .actions import check_action
        from .catalogue import NEUTRAL_CATEGORIES, NOTE, action_for

        if self.severity == Severity.INFO and self.category not in NEUTRAL_CATEGORIES:
            object.__setattr__(self, "about", self.about or self.category)
            object.__setattr__(self, "category", NOTE)
        object.__setattr__(self, "action", check_action(self.action) if self.action is not None
                           else action_for(self.code, self.category, self.severity))

    def to_dict(self) -> Dict[str, Any]:
        return to_dict(self)


@dataclass(frozen=True)
class CheckResult:
    id: str  # "driver.cuda-compat"
    area: str  # "driver"
    title: str
    status: str
    findings: List[Finding] = field(default_factory=list)
    reason: Optional[str] = None  # why skipped / the exception text when errored / what was noted instead
    duration_s: Optional[float] = None
    # skipped because it does not apply here, in a few words ("not WSL", "judged in pastes only"), as the check
    # (or the judge, for a check not run in this setting) said; None: skipped because its facts are unknown
    not_applicable: Optional[str] = None

    @property
    def headline(self) -> str:
        """What a checklist shows for it: the title (a claim), except for a NOTED check, whose title would claim
        what its notes contradict: then what was noted."""
        return self.reason if self.status == CheckStatus.NOTED and self.reason else self.title


def _judged(checks: List[CheckResult]) -> bool:
    return any(c.status in (CheckStatus.PASSED, CheckStatus.NOTED, CheckStatus.FAILED) for c in checks)


@dataclass(frozen=True)
class MachineReport:
    """One machine of a paste that holds several machines' reports: its label ("report 1 of 2 (001.txt)"), its
    own facts and its own check results, settled among themselves by the judge (a finding on one machine never
    links to, or notes a check of, another). ``Report.machines`` holds them; the renderers show each as a
    section."""

    label: str
    facts: Facts
    checks: List[CheckResult] = field(default_factory=list)

    @property
    def findings(self) -> List[Finding]:
        return order_findings(self.checks)

    @property
    def problems(self) -> List[Finding]:
        return [f for f in self.findings if f.caused_by is None and f.severity != Severity.INFO]

    @property
    def judged(self) -> bool:
        return _judged(self.checks)

    def to_dict(self) -> Dict[str, Any]:
        return {"label": self.label, "facts": self.facts.to_dict(), "checks": [to_dict(c) for c in self.checks],
                "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True)
class Report:
    facts: Facts
    checks: List[CheckResult]
    envdoctor_version: str
    compat_as_of: Optional[str] = None
    schema_version: int = REPORT_SCHEMA_VERSION
    compat_source: Optional[str] = None  # which matrix: "bundled" or "update 2026.12.05 (~/.cache/envdoctor)"
    # a paste of several machines' reports: each machine judged on its own (``checks`` then holds what is judged
    # of the paste as a whole, nothing today); the verdict and the exit code count every machine
    machines: List[MachineReport] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """Whether any check judged anything: False when every check was skipped (a one-line paste, an empty
        snapshot), which is not a clean bill of health. Any machine of a several-machine paste counts."""
        return _judged(self.checks) or any(m.judged for m in self.machines)

    @property
    def all_findings(self) -> List[Finding]:
        """The report's own findings, then each machine's (``Report.machines``), in machine order."""
        return self.findings + [f for m in self.machines for f in m.findings]

    @property
    def measured_nothing(self) -> bool:
        """Benchmarks were run (``envdoctor bench``) and not one measured anything: every one skipped (no GPU, no
        torch) or failed. The checks that judged the rest passing is no clean bill of health for what was asked."""
        results = self.facts.bench.results
        return bool(results) and not any(r.status == "ok" for r in results)

    def fails(self, threshold: str) -> bool:
        """The exit-code rule: a finding at or above ``threshold``, or nothing judged at all (no check judged
        anything, or every benchmark asked for was skipped)."""
        return self.has_at_least(threshold) or not self.judged or self.measured_nothing

    @property
    def findings(self) -> List[Finding]:
        """Root causes first (worst first, then in check order), each followed by its consequences."""
        return order_findings(self.checks)

    def consequences_of(self, finding: Finding) -> List[Finding]:
        return [f for f in self.findings if f.caused_by == finding.code and f is not finding]

    @property
    def problems(self) -> List[Finding]:
        """Warnings and errors that are not the consequence of another finding: what the verdict counts (every
        machine's too)."""
        return [f for f in self.findings if f.caused_by is None and f.severity != Severity.INFO] + \
            [f for m in self.machines for f in m.problems]

    def worst(self) -> Optional[str]:
        worst = None
        for f in self.all_findings:
            if worst is None or Severity.ORDER[f.severity] > Severity.ORDER[worst]:
                worst = f.severity
        return worst

    def has_at_least(self, threshold: str) -> bool:
        return any(Severity.at_least(f.severity, threshold) for f in self.all_findings)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON contract (docs/json-schema.md). ``machines`` only when the paste held several machines."""
        out = self._to_dict()
        if self.machines:
            out["machines"] = [m.to_dict() for m in self.machines]
        return out

    def to_json(self, indent: Optional[int] = 2) -> str:
        import json

        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> Report:
        """A report back from its JSON (``to_dict``): facts, check results and machines; the findings lists and
        the summary are derived, so they are not read. A report written before ``machines`` existed loads
        with none. FactsError on anything malformed."""
        from .facts import FactsError, from_dict

        if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
            raise FactsError("not an envdoctor report: no 'facts' object")

        def checks(items: Any, path: str) -> List[CheckResult]:
            if not isinstance(items, list):
                raise FactsError(f"{path}: expected a list")
            return [from_dict(CheckResult, c, f"{path}[{i}]") for i, c in enumerate(items)]

        machines = []
        for i, m in enumerate(data.get("machines") or []):
            if not isinstance(m, dict) or not isinstance(m.get("label"), str):
                raise FactsError(f"machines[{i}]: expected an object with a 'label'")
            machines.append(MachineReport(m["label"], Facts.from_dict(m.get("facts")),
                                          checks(m.get("checks") or [], f"machines[{i}].checks")))
        version = data.get("schema_version")
        return cls(facts=Facts.from_dict(data["facts"]), checks=checks(data.get("checks") or [], "checks"),
                   envdoctor_version=str(data.get("envdoctor_version") or ""),
                   compat_as_of=data.get("compat_as_of"),
                   schema_version=version if isinstance(version, int) else REPORT_SCHEMA_VERSION,
                   compat_source=data.get("compat_source"), machines=machines)

    @classmethod
    def from_json(cls, text: str) -> Report:
        import json

        from .facts import FactsError

        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise FactsError(f"not valid JSON: {e.msg.rstrip()} (line {e.lineno}, column {e.colno})") from None

    def _to_dict(self) -> Dict[str, Any]:
        findings = self.all_findings
        checks = list(self.checks) + [c for m in self.machines for c in m.checks]
        return {
            "schema_version": self.schema_version,
            "envdoctor_version": self.envdoctor_version,
            "compat_as_of": self.compat_as_of,
            "compat_source": self.compat_source,
            "facts": self.facts.to_dict(),
            "checks": [to_dict(c) for c in self.checks],
            "findings": [f.to_dict() for f in self.findings],
            "summary": {  # every machine's findings and checks counted
                "errors": sum(1 for f in findings if f.severity == Severity.ERROR),
                "warnings": sum(1 for f in findings if f.severity == Severity.WARNING),
                "infos": sum(1 for f in findings if f.severity == Severity.INFO),
                "root_causes": len(self.problems),
                "consequences": sum(1 for f in findings if f.caused_by is not None),
                "checks_passed": sum(1 for c in checks if c.status == CheckStatus.PASSED),
                "checks_noted": sum(1 for c in checks if c.status == CheckStatus.NOTED),
                "checks_failed": sum(1 for c in checks if c.status == CheckStatus.FAILED),
                "checks_skipped": sum(1 for c in checks if c.status == CheckStatus.SKIPPED),
                "checks_errored": sum(1 for c in checks if c.status == CheckStatus.ERRORED),
                "judged": self.judged,
                # error lines of a paste no finding explains (UNRECOGNISED_ERROR root causes): "not judged"
                "not_recognised": sum(1 for f in self.problems if f.category == UNRECOGNISED),
            },
        }


SEVERITY_RANK = _RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}  # worst first


def subjects_of(f: Finding) -> Dict[str, set]:
    """What a finding is about: the interpreters (``pythons[i]`` in its evidence); none named means the whole
    machine. (A machine of a several-machine paste is its own ``MachineReport``: nothing to match here.)"""
    out: Dict[str, set] = {}
    for e in f.evidence:
        if e.path.startswith("pythons["):
            out.setdefault("python", set()).add(e.path[len("pythons["):].split("]", 1)[0])
    return out


def same_subject(root: Finding, consequence: Finding) -> bool:
    """Whether two findings may be about the same thing (never two different interpreters)."""
    a, b = subjects_of(root), subjects_of(consequence)
    return all(a[k] & b[k] for k in a.keys() & b.keys())


def order_findings(checks: List[CheckResult]) -> List[Finding]:
    """Root causes first: groups (a root and its consequences) by their worst severity, then check order."""
    flat = [(ci, f) for ci, c in enumerate(checks) for f in c.findings]
    roots = [(ci, f) for ci, f in flat
             if f.caused_by is None or not any(r.code == f.caused_by and r.caused_by is None for _, r in flat)]
    members: Dict[int, List[Finding]] = {id(f): [f] for _, f in roots}
    for _, f in flat:
        if any(f is r for _, r in roots):
            continue
        # codes repeat across interpreters: the first root with that code about the same interpreter
        root = next(r for _, r in roots if r.code == f.caused_by and same_subject(r, f)) \
            if any(r.code == f.caused_by and same_subject(r, f) for _, r in roots) else \
            next(r for _, r in roots if r.code == f.caused_by)
        members[id(root)].append(f)
    groups = []
    for ci, f in roots:
        group = members[id(f)]
        worst = min(_RANK.get(m.severity, 3) for m in group)
        groups.append(((worst, ci, f.code), group))
    groups.sort(key=lambda g: g[0])
    return [m for _, group in groups for m in group]
