"""Findings, check results and the report: what checks produce and renderers print."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

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
    PASSED = "passed"  # ran, nothing at warning or error (info findings may exist)
    FAILED = "failed"  # ran, at least one warning or error
    SKIPPED = "skipped"  # could not run: a fact it needs is missing (reason says which and why)
    ERRORED = "errored"  # the check itself crashed: shown, never hiding the others


@dataclass(frozen=True)
class Evidence:
    path: str  # dotted path into the facts: "pythons[0].torch.cuda"
    value: Any = None  # what was seen
    expected: Optional[str] = None  # what would be fine: ">= 525.60.13"
    source: Optional[str] = None  # the compat row / document that says so


@dataclass(frozen=True)
class Fix:
    summary: str  # imperative: "Install the CUDA 12.8 build of torch"
    commands: List[str] = field(default_factory=list)  # copy-pasteable; envdoctor never runs them
    url: Optional[str] = None


@dataclass(frozen=True)
class Finding:
    code: str  # stable, area.check/kind: "driver.cuda-compat/too-old"
    category: str  # UPPER_SNAKE from envdoctor.catalogue.CATEGORIES
    severity: str
    summary: str  # one line, with the numbers
    detail: Optional[str] = None  # why it matters
    evidence: List[Evidence] = field(default_factory=list)
    fix: Optional[Fix] = None
    confidence: Optional[str] = None  # diagnose: "high", "medium", "low"
    subject: Optional[str] = None  # the interpreter the finding is about (its path), when it is about one

    def to_dict(self) -> Dict[str, Any]:
        return to_dict(self)


@dataclass(frozen=True)
class CheckResult:
    id: str  # "driver.cuda-compat"
    area: str  # "driver"
    title: str
    status: str
    findings: List[Finding] = field(default_factory=list)
    reason: Optional[str] = None  # why skipped / the exception text when errored
    duration_s: Optional[float] = None


@dataclass(frozen=True)
class Report:
    facts: Facts
    checks: List[CheckResult]
    envdoctor_version: str
    compat_as_of: Optional[str] = None
    schema_version: int = REPORT_SCHEMA_VERSION
    compat_source: Optional[str] = None  # which matrix: "bundled" or "update 2026.12.05 (~/.cache/envdoctor)"

    @property
    def findings(self) -> List[Finding]:
        order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
        out = [f for c in self.checks for f in c.findings]
        return sorted(out, key=lambda f: (order.get(f.severity, 3), f.code))

    def worst(self) -> Optional[str]:
        worst = None
        for f in self.findings:
            if worst is None or Severity.ORDER[f.severity] > Severity.ORDER[worst]:
                worst = f.severity
        return worst

    def has_at_least(self, threshold: str) -> bool:
        return any(Severity.at_least(f.severity, threshold) for f in self.findings)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON contract (docs/json-schema.md)."""
        return {
            "schema_version": self.schema_version,
            "envdoctor_version": self.envdoctor_version,
            "compat_as_of": self.compat_as_of,
            "compat_source": self.compat_source,
            "facts": self.facts.to_dict(),
            "checks": [to_dict(c) for c in self.checks],
            "findings": [f.to_dict() for f in self.findings],
            "summary": {
                "errors": sum(1 for f in self.findings if f.severity == Severity.ERROR),
                "warnings": sum(1 for f in self.findings if f.severity == Severity.WARNING),
                "infos": sum(1 for f in self.findings if f.severity == Severity.INFO),
                "checks_passed": sum(1 for c in self.checks if c.status == CheckStatus.PASSED),
                "checks_failed": sum(1 for c in self.checks if c.status == CheckStatus.FAILED),
                "checks_skipped": sum(1 for c in self.checks if c.status == CheckStatus.SKIPPED),
                "checks_errored": sum(1 for c in self.checks if c.status == CheckStatus.ERRORED),
            },
        }
