"""Check plumbing: the Check record, the context checks read, SkipCheck, and a registrar."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from ..facts import Facts
from ..findings import Finding


class SkipCheck(Exception):
    """Raised by a check whose facts are missing; the message says which fact and why."""


@dataclass
class CheckContext:
    facts: Facts
    compat: Any  # envdoctor.compat.Compat (typed loosely so checks stay importable without data)
    expect_gpu: bool = False  # the user says NVIDIA GPUs belong here (--expect-gpu, [tool.envdoctor] expect-gpu)


CheckFunc = Callable[[CheckContext], List[Finding]]


@dataclass(frozen=True)
class Check:
    id: str  # "driver.cuda-compat"
    title: str  # "Driver supports torch's CUDA"
    func: CheckFunc
    categories: tuple = ()  # the categories it can emit (list-checks, explain)

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]


def registrar(registry: List[Check]):
    """``check = registrar(CHECKS)`` then ``@check("area.name", "Title", categories=(...))``."""

    def check(check_id: str, title: str, categories: tuple = ()):
        def deco(func: CheckFunc) -> CheckFunc:
            registry.append(Check(check_id, title, func, tuple(categories)))
            return func

        return deco

    return check


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


def first(items: List[Any]) -> Optional[Any]:
    return items[0] if items else None
