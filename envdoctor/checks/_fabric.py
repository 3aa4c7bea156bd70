"""NVLink fabric health as NVML reports it for a GPU registered on an NVSwitch fabric (interconnect.py)."""

from __future__ import annotations

from typing import List

from ..model.facts import Gpu
from ..model.findings import Evidence, Finding, Fix
from ._gpus import gpu_path
from .base import Findings

# NVML fabric health (nvmlGpuFabricInfo_v2/v3 healthMask and healthSummary): what a registered GPU's fabric reports
# about itself. A route that is unhealthy or a wrong configuration loses NVLink paths (an error); degraded bandwidth,
# a route or access-timeout recovery, or a LIMITED_CAPACITY summary leave the fabric up at less than full speed.
_HEALTH_ERRORS = ("route_unhealthy", "incorrect_configuration")
_HEALTH_WORDS = {"degraded_bandwidth": "degraded bandwidth", "route_recovery": "route recovery in progress",
                 "route_unhealthy": "route unhealthy", "access_timeout_recovery": "access-timeout recovery"}


def _health_words(g: Gpu) -> List[str]:
    words = [_HEALTH_WORDS.get(h, h.replace("incorrect_configuration:", "incorrect configuration: ").replace("_", " "))
             for h in (g.fabric_health or [])]
    if g.fabric_health_summary in ("unhealthy", "limited_capacity") and not words:
        words.append(f"summary {g.fabric_health_summary.replace('_', ' ')}")
    return words


def fabric_health(findings: Findings, url: str, on_fabric: List[Gpu]) -> List[Finding]:
    """interconnect.fabric-manager's verdict on what registered GPUs' fabric health reports."""
    sick = [g for g in on_fabric if _health_words(g)]
    if not sick:
        return []
    errors = [g for g in sick if g.fabric_health_summary == "unhealthy"
              or any(h.startswith(_HEALTH_ERRORS) for h in (g.fabric_health or []))]
    severe = bool(errors)
    make = findings.error if severe else findings.warning
    return [make(
        "unhealthy" if severe else "degraded",
        f"NVLink fabric {'unhealthy' if severe else 'degraded'} on {len(sick)} GPU(s): "
        + "; ".join(f"GPU {g.index}: {', '.join(_health_words(g))}" for g in sick),
        detail="The GPU is registered on the fabric, but its fabric health reports "
               + ("lost routes or a wrong configuration: some NVLink paths are missing"
                  if severe else "reduced capacity: NVLink traffic runs below full bandwidth"),
        evidence=[Evidence(gpu_path(g, "fabric_health"), list(g.fabric_health or []), expected="[] (no condition)",
                           source="NVML nvmlDeviceGetGpuFabricInfoV healthMask") for g in sick]
                 + [Evidence(gpu_path(g, "fabric_health_summary"), g.fabric_health_summary, expected="healthy")
                    for g in sick if g.fabric_health_summary],
        fix=Fix("Report the fabric health to the provider or cluster operator (NVLink switch trays, fabric manager "
                "log); reset the GPUs once the fabric is repaired",
                commands=["nvidia-smi -q | grep -A 12 -i fabric", "nvidia-smi nvlink --status"],
                url=url),
    )]
