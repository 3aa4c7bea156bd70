"""The probe registry: each probe names the facts section it fills and runs with a ProbeContext; one guard for all."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import importlib
import time
from typing import Any, Callable, List, Mapping, Optional, Tuple

from envdoctor.domain.fastclass import dataclass
from envdoctor.model.facts import ProbeRun, ProbeStatus
from envdoctor.probes.sysroot import SysRoot


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may touch: the Runner (every command), the SysRoot (every file), the environment, the options."""

    runner: Any
    fs: SysRoot
    env: Mapping[str, str]
    options: Any = None  # app.CollectOptions (typed loosely: probes must not import app)


def _always(ctx: ProbeContext) -> bool:
    return True


@dataclass(frozen=True)
class Probe:
    name: str  # its ProbeRun name in Facts.probes
    section: str  # the Facts field it fills
    run: Callable[[ProbeContext], Any]
    failed: Callable[[str], Any]  # the section's value when the probe crashed or did not finish
    # a probe that fills a part of another probe's section: (that section's value, this result) -> the section
    merge: Optional[Callable[[Any, Any], Any]] = None
    enabled: Callable[[ProbeContext], bool] = _always


PROBES: List[Probe] = []

# The modules whose @probe functions make up `envdoctor collect`, in the order their sections are listed.
PROBE_MODULES = (
    "envdoctor.probes.driver",
    "envdoctor.probes.topology",
    "envdoctor.probes.cuda_toolkit",
    "envdoctor.probes.cudnn",
    "envdoctor.probes.host",
    "envdoctor.probes.storage",
    "envdoctor.probes.python_env",
    "envdoctor.probes.kernel_log",
)


def probe(name: str, section: Optional[str] = None, failed: Optional[Callable[[str], Any]] = None,
          merge: Optional[Callable[[Any, Any], Any]] = None,
          enabled: Callable[[ProbeContext], bool] = _always) -> Callable[[Callable[[ProbeContext], Any]], Any]:
    """Register ``func(ctx)`` as the probe ``name`` filling ``section`` (default: ``name``)."""
    if failed is None:
        raise TypeError(f"probe {name!r}: say what its section is when it fails (failed=...)")

    def deco(func: Callable[[ProbeContext], Any]) -> Callable[[ProbeContext], Any]:
        if any(p.name == name for p in PROBES):
            raise ValueError(f"probe {name!r} registered twice")
        PROBES.append(Probe(name, section or name, func, failed, merge, enabled))
        return func

    return deco


def all_probes() -> List[Probe]:
    for mod in PROBE_MODULES:
        importlib.import_module(mod)
    order = {m: i for i, m in enumerate(PROBE_MODULES)}
    return sorted(PROBES, key=lambda p: order.get(p.run.__module__, len(order)))


CRASHED = "probe crashed"  # how a probe's failed section says it crashed (node-health answers UNKNOWN then)


def guard(name: str, func: Callable[[], Any], failed: Callable[[str], Any]) -> Tuple[Any, ProbeRun]:
    """Run one probe (or one item of a list probe); a crash becomes a 'failed' section with the exception as reason.

    The only catch-all around probe code: probes themselves raise on a bug, and this turns the bug into a fact.
    """
    start = time.monotonic()
    try:
        value = func()
    except Exception as e:  # noqa: BLE001 - the probe guard: one broken probe never hides the others
        reason = f"{CRASHED}: {type(e).__name__}: {e}"
        return failed(reason), ProbeRun(name, ProbeStatus.FAILED, reason, time.monotonic() - start)
    status = getattr(value, "status", ProbeStatus.OK)
    reason = getattr(value, "reason", None)
    if isinstance(value, list):  # a list of sections (interpreters, links)
        statuses = [getattr(v, "status", ProbeStatus.OK) for v in value]
        status = ProbeStatus.OK if all(s == ProbeStatus.OK for s in statuses) else (
            statuses[0] if statuses else ProbeStatus.OK)
        reason = "; ".join(r for r in (getattr(v, "reason", None) for v in value) if r) or None
    return value, ProbeRun(name, status, reason, time.monotonic() - start)


def guarded(func: Callable[[], Any], failed: Callable[[str], Any], name: str = "probe") -> Any:
    """The guarded value alone, for callers outside collect (recommend, assert) that run one probe."""
    return guard(name, func, failed)[0]
