"""Check plumbing: the Check record, the context checks read, SkipCheck, a registrar and a finding builder."""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.facts import Facts
from ..model.findings import Evidence, Finding, Severity

if TYPE_CHECKING:
    from ..compat.queries import Compat


class Reason(str):
    """A skip reason that carries its "did not apply" label (``not_applicable``): what a helper that words the
    reason for many checks returns (``section_reason`` for an absent driver, ``_util.no_torch_reason``), so that
    each check raising ``SkipCheck(reason)`` with it is counted right without saying so itself."""

    not_applicable: Optional[str] = None

    def __new__(cls, text: str, not_applicable: Optional[str] = None) -> Reason:
        out = super().__new__(cls, text)
        out.not_applicable = not_applicable
        return out


class SkipCheck(Exception):
    """Raised by a check that has nothing to judge; the message says which fact is missing and why.

    The rule (evidence or no check mark): a check passes only on facts it actually judged. When the
    facts it exists to judge are unknown *or not there* (no driver to compare with its libraries, no
    InfiniBand device to pair with GPUDirect, not a container, not WSL), it raises this instead of
    returning ``[]``. ``notes`` are info findings that say more (what to run to get the fact).
    """

    def __init__(self, reason: str, notes: Optional[List[Finding]] = None, not_applicable: Optional[str] = None):
        super().__init__(reason)
        self.notes = list(notes or [])
        # a check that does not apply here (not WSL, no benchmark ran) says so in a few words: the report counts it
        # under "did not apply"; without it the skip is a fact that could not be read ("facts unknown")
        self.not_applicable = not_applicable or getattr(reason, "not_applicable", None)


@dataclass
class CheckContext:
    facts: Facts
    compat: Compat  # the loaded matrix (compat.load_compat); its type is imported for type checkers only
    expect_gpu: bool = False  # the user says NVIDIA GPUs belong here (--expect-gpu, [tool.envdoctor] expect-gpu)
    fleet: Any = None  # checks/fleet.py FleetContext when `envdoctor fleet` judges several machines, else None


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

    def not_here_label(self, setting: str) -> str:
        """The few words of "did not apply here" where it is not run (CheckResult.not_applicable)."""
        if self.applies == PASTE_ONLY:
            return "judged in pastes only"
        if setting == PASTE:
            return "judged on a probed interpreter only"
        if setting == STATIC:
            return "judges a machine, not a build"
        return f"not judged on {setting} facts"

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
            categories = tuple(categories) or check_id.all_categories
            check_id = check_id.check_id
        unknown = set(applies) - set(SETTINGS)
        if unknown or not applies:
            raise ValueError(f"{check_id}: applies={sorted(applies)!r}: give some of {', '.join(SETTINGS)}")

        def deco(func: CheckFunc) -> CheckFunc:
            registry.append(Check(check_id, title, func, tuple(categories), frozenset(applies)))
            return func

        return deco

    return check


# A test run (tests/conftest.py sets this) refuses a finding whose kind or category its builder does not declare;
# a live run emits it unchanged: a user's diagnosis matters more than the catalogue `explain` reads. Read once,
# when envdoctor.checks is imported (a check itself reads no environment).
STRICT_ENV = "ENVDOCTOR_STRICT_FINDINGS"
STRICT_FINDINGS = os.environ.get(STRICT_ENV, "") not in ("", "0")

# every builder made, in order: the registry's catalogue of finding codes (checks/registry.py finding_codes)
DECLARED: List[Findings] = []

PLACEHOLDER = re.compile(r"\{[a-z_]+\}")  # a computed part of a kind template: "{package}"


class UndeclaredFinding(Exception):
    """A check made a finding its ``Findings`` does not declare (its kind, or another category). Raised only
    where STRICT_ENV is set (the test suite), and never turned into an errored check there: the test fails."""


def strict_findings() -> bool:
    return STRICT_FINDINGS


@dataclass(frozen=True)
class Findings:
    """One check's finding builder, so a check reads as its rule, and the declaration of what it can report.

    ``found = Findings("gpu.throttle", "GPU_THROTTLED", kinds=("thermal", "power"))`` then ``found.warning(
    "thermal", summary, evidence=[...], fix=...)`` is ``Finding("gpu.throttle/thermal", "GPU_THROTTLED",
    Severity.WARNING, summary, ...)``. ``kinds`` are every kind the check can make (the part after "/" in the
    code); a kind the check computes from data is a template with one ``{placeholder}`` per computed part
    (``"{package}"``, ``"{xid}"``, ``"{name}-below-expected"``) standing for a word without "/". A check that
    emits another category (``category=``) lists it in ``categories``. ``explain`` reads these declarations
    (checks/registry.py ``finding_codes``); making anything else is an ``UndeclaredFinding`` under the test
    suite.
    """

    check_id: str  # the code's part before "/"
    category: str  # the default category ("" where every finding names its own, from ``categories``)
    kinds: Tuple[str, ...] = ()
    categories: Tuple[str, ...] = ()  # the other categories it emits, besides ``category``
    check: str = ""  # the registered check that makes these findings, where its id is not ``check_id``
    # kind -> its category, for a kind whose category is not ``category`` (one of ``categories``): the finding
    # gets it without ``category=``, and `explain CODE` shows it first
    kind_categories: Dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(self.kinds))
        object.__setattr__(self, "categories", tuple(dict.fromkeys(tuple(self.categories)
                                                                  + tuple(self.kind_categories.values()))))
        # the module that made it (the registry test: every builder in envdoctor belongs to a registered check)
        object.__setattr__(self, "made_in", sys._getframe(2).f_globals.get("__name__", ""))
        DECLARED.append(self)

    @property
    def all_categories(self) -> Tuple[str, ...]:
        return tuple(dict.fromkeys(c for c in (self.category,) + self.categories if c))

    @property
    def owner(self) -> str:
        """The id of the check that makes these findings."""
        return self.check or self.check_id

    def category_of(self, kind: str) -> str:
        """The category a finding of ``kind`` carries when its maker names none."""
        return self.kind_categories.get(kind) or self.category

    def declares(self, kind: str) -> bool:
        """Whether ``kind`` is one of the declared kinds or matches one of their templates."""
        return any(kind_matches(k, kind) for k in self.kinds)

    def __call__(self, kind: str, severity: str, summary: str, *, category: Optional[str] = None,
                 evidence: Optional[List[Evidence]] = None, **rest: Any) -> Finding:
        category = category or self.category_of(kind)
        if strict_findings() and (not self.declares(kind) or category not in self.all_categories):
            raise UndeclaredFinding(
                f"{self.check_id}/{kind} ({category}) is not declared by its builder Findings({self.check_id!r}, "
                f"{self.category!r}, kinds={self.kinds!r}, categories={self.categories!r}): add it there")
        return Finding(f"{self.check_id}/{kind}", category, severity, summary,
                       evidence=evidence if evidence is not None else [], **rest)

    def error(self, kind: str, summary: str, **rest: Any) -> Finding:
        return self(kind, Severity.ERROR, summary, **rest)

    def warning(self, kind: str, summary: str, **rest: Any) -> Finding:
        return self(kind, Severity.WARNING, summary, **rest)

    def info(self, kind: str, summary: str, **rest: Any) -> Finding:
        return self(kind, Severity.INFO, summary, **rest)


def kind_matches(declared: str, kind: str) -> bool:
    """Whether ``kind`` is the declared kind, or one its template stands for."""
    return declared == kind or bool(PLACEHOLDER.search(declared) and _template(declared).fullmatch(kind))


@functools.cache
def _template(kind: str) -> re.Pattern[str]:
    """A kind template as a pattern: each ``{placeholder}`` one word without "/" (a package, an Xid, an id)."""
    parts = PLACEHOLDER.split(kind)
    return re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*".join(re.escape(p) for p in parts))


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


def section_reason(section: Any, what: str) -> Reason:
    """'<what> unknown: probe <status>: <reason>' for a skipped check's reason."""
    status = getattr(section, "status", None)
    reason = getattr(section, "reason", None)
    text = f"{what} unknown"
    if status:
        text += f" (probe {status}"
        text += f": {reason})" if reason else ")"
    return Reason(text, _absent_driver(section))


def require_section(section: Any, what: str) -> Any:
    """The facts section when its probe succeeded; else SkipCheck saying why ``what`` is unknown (no NVIDIA
    driver at all: the check did not apply)."""
    if getattr(section, "status", None) != "ok":
        raise SkipCheck(section_reason(section, what))
    return section


def _absent_driver(section: Any) -> Optional[str]:
    from ..model.facts import Driver, ProbeStatus

    return NO_DRIVER if isinstance(section, Driver) and section.status == ProbeStatus.ABSENT else None


NO_DRIVER = "no NVIDIA driver"
NO_GPU = "no NVIDIA GPU"


def no_gpu_here(facts: Facts) -> Optional[str]:
    """NO_GPU where the facts show no NVIDIA hardware at all (no GPU from the driver, no PCI device of vendor
    0x10de: queries.nvidia_hardware), for a check about GPUs that skips; None otherwise (unknown is unknown)."""
    from ..queries import nvidia_hardware

    return NO_GPU if not facts.driver.gpus and nvidia_hardware(facts) is False else None


def first(items: List[Any]) -> Optional[Any]:
    return items[0] if items else None
