"""What the bench check modules share: throttle names, result selection, severity (pure)."""

from __future__ import annotations

from typing import Any, List

from ..model.facts import Facts, ProbeStatus
from ..model.findings import Severity
from .base import SkipCheck

HARD_THROTTLES = ("sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown", "hw_power_brake_slowdown")
THROTTLE_TEXT = {"sw_thermal_slowdown": "SW Thermal Slowdown", "hw_thermal_slowdown": "HW Thermal Slowdown",
                  "sw_power_cap": "SW Power Cap", "hw_slowdown": "HW Slowdown",
                  "hw_power_brake_slowdown": "HW Power Brake Slowdown"}


def bench_results(facts: Facts, names: Any) -> List[Any]:
    if facts.bench.status == ProbeStatus.SKIPPED and not facts.bench.results:
        raise SkipCheck("no benchmark ran (`envdoctor bench` or `envdoctor check --bench` runs them)", not_applicable="no benchmark ran")
    return [(i, r) for i, r in enumerate(facts.bench.results) if r.name in names]


def severity(verdict: str) -> str:
    return Severity.ERROR if verdict == "error" else Severity.WARNING
