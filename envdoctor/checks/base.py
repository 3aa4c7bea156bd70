"""Check plumbing: the Check record, the context checks read, SkipCheck, a registrar and a finding builder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

from ..facts import Facts
from ..findings import Evidence, Finding, Severity


class SkipCheck(Exception):
    """Raised by a check that has nothing to judge; the message says which fact is missing and why.

    The rule (evidence or no check mark): a check passes only on facts it actually judged. When the
    facts it exists to judge are unknown *or not there* (no driver to compare with its libraries, no
    InfiniBand device to pair with GPUDirect, not a container, not WSL), it raises this instead of
    returning ``[]``. ``notes`` are info findings that say more (what to run to get the fact).
    """

    def __init__(self, reason: str, notes: Optional[List[Finding]] = None):
        super().__init__(reason)
        self.notes = list(notes or [])


@dataclass
class CheckContext:
    facts: Facts
    compat: Any  # envdoctor.compat.Compat (typed loosely so checks stay importable without data)
    expect_gpu: bool = False  # the user says NVIDIA GPUs belong here (--expect-gpu, [tool.envdoctor] expect-gpu)


CheckFunc = Callable[[CheckContext], List[Finding]]

# Where a check applies: the facts it is judged on.
LIVE = "live"  # this machine, probed now (`check`, `preflight()`)
SNAPSHOT = "snapshot"  # a machine's facts recorded earlier (`check --facts`)
PASTE = "paste"  # facts read from pasted text (`diagnose`, `check --facts` on a paste's facts)
STATIC = "static"  # an environment judged at build time against a declared fleet (`assert`, preflight on a CPU box):
#                    the interpreters are probed, the driver and GPUs are declared; no check about the machine runs
SETTINGS = (LIVE, SNAPSHOT, PASTE, STATIC)
MACHINE = frozenset({LIVE, SNAPSHOT, PASTE})  # the default: a check about a machine, wherever its facts come from
EVERYWHERE = frozenset(SETTINGS)  # judges the interpreter's packages or declared targets: a build too
PASTE_ONLY = frozenset({PASTE})  # judges what only pasted text carries (messages, a paste's thin facts)
PROBED = frozenset({LIVE, SNAPSHOT})  # a machine as a probe reads it (an interpreter that was run), not a paste

# Why a check that does not apply was not run (``Check.not_here``): a report on a machine lists it as skipped with
# this reason (the console counts it under "did not apply here"); `assert` leaves it out.
_PASTES_ONLY = "judges pasted reports only (`envdoctor diagnose`); a live probe reads these facts itself"
_NO_INTERPRETER = "a paste is judged without running an interpreter"
_NOT_A_BUILD = "judges a machine, not a build against declared targets"


def setting_of(facts: Facts) -> str:
    """Where ``facts`` are judged, from the facts alone: PASTE for a paste; STATIC for a build with a declared fleet
    (`assert`: the driver section is the declared targets); SNAPSHOT for recorded facts; LIVE otherwise."""
    if facts.origin == "paste":
        return PASTE
    if facts.driver.source == "declared" and facts.targets is not None:
        return STATIC
    return SNAPSHOT if facts.origin == "snapshot" else LIVE


@dataclass(frozen=True)
class Check:
    id: str  # "driver.cuda-compat"
    title: str  # "Driver supports torch's CUDA"
    func: CheckFunc
    categories: tuple = ()  # the categories it can emit (list-checks, explain)
    applies: frozenset = MACHINE  # where it is judged (LIVE, SNAPSHOT, PASTE, STATIC): the judge runs it only there

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]

    def applies_to(self, setting: str) -> bool:
        return setting in self.applies

    def not_here(self, setting: str) -> str:
        """The skip reason where it does not apply."""
        if self.applies == PASTE_ONLY:
            return _PASTES_ONLY
        if setting == PASTE:
            return _NO_INTERPRETER
        if setting == STATIC:
            return _NOT_A_BUILD
        return f"applies to {', '.join(s for s in SETTINGS if s in self.applies)} facts only, not {setting}"


def registrar(registry: List[Check], applies: frozenset = MACHINE):
    """``check = registrar(CHECKS)`` then ``@check("area.name", "Title", categories=(...))``, or
    ``@check(FOUND, "Title")`` with the check's ``Findings`` builder (its id and category). ``applies=`` says
    where it is judged (default ``MACHINE``: live, a snapshot or a paste; ``EVERYWHERE`` adds `assert`'s build);
    ``registrar(CHECKS, applies=...)`` sets it for a whole module."""
    default = applies

    def check(check_id: str | Findings, title: str, categories: tuple = (), applies: frozenset = default):
        if isinstance(check_id, Findings):  # @check(FOUND, "Title"): the id and category come from the builder
            categories = tuple(categories) or (check_id.category,)
            check_id = check_id.check_id
        unknown = set(applies) - set(SETTINGS)
        if unknown or not applies:
            raise ValueError(f"{check_id}: applies={sorted(applies)!r}: give some of {', '.join(SETTINGS)}")

        def deco(func: CheckFunc) -> CheckFunc:
            registry.append(Check(check_id, title, func, tuple(categories), frozenset(applies)))
            return func

        return deco

    return check


@dataclass(frozen=True)
class Findings:
    """One check's finding builder, so a check reads as its rule.

    ``found = Findings("gpu.throttle", "GPU_THROTTLED")`` then ``found.warning("thermal", summary, evidence=[...],
    fix=...)`` is ``Finding("gpu.throttle/thermal", "GPU_THROTTLED", Severity.WARNING, summary, ...)``; a check
    that emits a second category passes ``category=``.
    """

    check_id: str
    category: str

    def __call__(self, kind: str, severity: str, summary: str, *, category: Optional[str] = None,
                 evidence: Optional[List[Evidence]] = None, **rest: Any) -> Finding:
        return Finding(f"{self.check_id}/{kind}", category or self.category, severity, summary,
                       evidence=evidence if evidence is not None else [], **rest)

    def error(self, kind: str, summary: str, **rest: Any) -> Finding:
        return self(kind, Severity.ERROR, summary, **rest)

    def warning(self, kind: str, summary: str, **rest: Any) -> Finding:
        return self(kind, Severity.WARNING, summary, **rest)

    def info(self, kind: str, summary: str, **rest: Any) -> Finding:
        return self(kind, Severity.INFO, summary, **rest)


class Cases:
    """What one rule caught across GPUs or links, a line of text and its evidence each: one finding reports them
    all, its summary joining the lines ("; ") and its evidence theirs in order. ``key`` keeps what the fix needs
    (a bus id to query)."""

    def __init__(self) -> None:
        self._items: List[Tuple[str, List[Evidence], Any]] = []

    def add(self, text: str, evidence: List[Evidence], key: Any = None) -> None:
        self._items.append((text, list(evidence), key))

    def __bool__(self) -> bool:
        return bool(self._items)

    @property
    def text(self) -> str:
        return "; ".join(t for t, _, _ in self._items)

    @property
    def evidence(self) -> List[Evidence]:
        return [e for _, ev, _ in self._items for e in ev]

    @property
    def keys(self) -> List[Any]:
        return [k for _, _, k in self._items if k is not None]

    def report(self, make: Callable[..., Finding], kind: str, summary: str, **rest: Any) -> List[Finding]:
        """``[make(kind, summary with "{}" replaced by the lines, evidence=theirs, **rest)]``, or ``[]`` when the
        rule caught nothing: ``out += down.report(NVLINK.error, "inactive", "NVLink links down: {}", fix=...)``."""
        if not self._items:
            return []
        head, _, tail = summary.partition("{}")
        return [make(kind, head + self.text + tail, evidence=self.evidence, **rest)]


def skip_unless(condition: Any, reason: str) -> None:
    if not condition:
        raise SkipCheck(reason)


def section_reason(section: Any, what: str) -> str:
    """'<what> unknown: probe <status>: <reason>' for a skipped check's reason."""
    status = getattr(section, "status", None)
    reason = getattr(section, "reason", None)
    text = f"{what} unknown"
    if status:
        text += f" (probe {status}"
        text += f": {reason})" if reason else ")"
    return text


def require_section(section: Any, what: str) -> Any:
    """The facts section when its probe succeeded; else SkipCheck saying why ``what`` is unknown."""
    if getattr(section, "status", None) != "ok":
        raise SkipCheck(section_reason(section, what))
    return section


def first(items: List[Any]) -> Optional[Any]:
    return items[0] if items else None
