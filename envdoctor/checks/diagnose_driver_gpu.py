"""Paste check: a report of a driver that does not drive an old GPU, when the paste shows no driver version.

The live lifecycle check (checks/driver_support.py, gpu-older-than-driver) compares the installed driver with the
last branch of the GPU's architecture (compat_data/driver_gpu_support.json: Fermi ends at R390, Kepler at R470,
Maxwell to Volta at R580). A pasted report often has no driver version to compare, yet says what happened in
words: the driver "ignored the GPU", "does not work" on it, the desktop fell back to VESA. With a GPU the paste
names, the same table gives the answer when

- the report names a driver branch newer than the GPU's last one ("nvidia-driver-535" for a GTX 760), or
- it names no branch, and no branch still supported (compat_data/health.json, on the paste's date or the table's)
  drives the GPU: whatever current driver was installed does not drive it (a GTX 580 today).

A warning, not an error: the driver that is installed is not shown (the finding asks for it).
"""

from __future__ import annotations

import datetime
from typing import Any, List, Optional

from ..compat.health import health_table
from ..model.findings import Evidence, Finding, Fix
from ..remedies import datacenter_gpus, driver_install
from ..remedies.driver_branch import gpu_branch_limits
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

_LEGACY_URL = "https://www.nvidia.com/en-us/drivers/unix/legacy-gpu/"
_SETTLE = "nvidia-smi; cat /proc/driver/nvidia/version; sudo dmesg | grep NVRM"

DROPPED = Findings("diagnose.driver-gpu", "DRIVER_DROPPED_GPU", kinds=("named-branch", "no-supported-branch"))


def _on(collected_at: Optional[str], as_of: str) -> datetime.date:
    for text in (collected_at, as_of):
        try:
            return datetime.date.fromisoformat((text or "")[:10])
        except ValueError:
            continue
    return datetime.date.today()


@check(DROPPED, "The driver the report names drives the GPU it names", applies=PASTE_ONLY)
def check_driver_gpu(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Any = paste.provenance or {}
    if ctx.facts.driver.version:
        raise SkipCheck("the paste shows the driver version: the lifecycle check compares it",
                        not_applicable="driver version shown")
    refuses = prov.get("paste.driver_refuses_gpu")
    if not refuses:
        raise SkipCheck("the report does not say the driver fails to drive the GPU")
    limits = gpu_branch_limits(ctx.facts, ctx.compat)
    last, gpu = limits.hi, limits.hi_gpu
    if last is None or gpu is None:
        raise SkipCheck("no GPU named whose architecture has a last driver branch")
    named = [int(b) for b in str((prov.get("paste.driver_branches") or {}).get("value") or "").split() if b.isdigit()]
    words = Evidence("paste.driver_refuses_gpu", refuses.get("value"), source=refuses.get("reader"))
    ev_gpu = Evidence(gpu.cc_path, gpu.cc, expected=f"{gpu.row.architecture}: last branch R{last}",
                      source=gpu.row.source)
    plan = driver_install(ctx.facts, last, server=datacenter_gpus(ctx.facts, ctx.compat))
    fix = Fix(f"Install the R{last} driver (its newest release), the last branch for {gpu.row.architecture} GPUs, "
              f"and hold it so updates do not move past it" + (f" ({plan.note})" if plan.note else "")
              + f"; or use a newer GPU. To confirm, paste `{_SETTLE}`.",
              commands=plan.commands, url=_LEGACY_URL)
    newer = [b for b in named if b > last]
    if newer:
        return [DROPPED.warning(
            "named-branch",
            f"GPU {gpu.label} is driven only up to R{last}; the report names R{max(newer)}, which does not "
            f"drive it",
            detail=f"NVIDIA ended {gpu.row.architecture} support with R{last}: a newer branch's kernel module "
                   "ignores the GPU (nvidia-smi finds no device, the desktop falls back to another driver), "
                   "as the report says. The installed driver is not shown: its version settles it.",
            evidence=[Evidence("paste.driver_branches", named, expected=f"<= R{last}",
                               source=(prov.get("paste.driver_branches") or {}).get("reader")), ev_gpu, words],
            fix=fix, confidence="medium")]
    if named:
        return []  # every branch it names drives the GPU: the words are about something else
    try:
        table = health_table(ctx.compat)
    except LookupError as e:
        raise SkipCheck(f"driver lifecycle data unknown: {e}") from None
    on = _on(ctx.facts.collected_at, table.as_of)
    supported = [b.branch for b in table.supported_branches(on)]
    if not supported or min(supported) <= last:
        return []  # a supported branch still drives it: the driver installed may well be one
    return [DROPPED.warning(
        "no-supported-branch",
        f"No driver branch supported on {on.isoformat()} drives GPU {gpu.label}: R{last} was its last, and "
        "the report says the driver does not drive it",
        detail=f"NVIDIA ended {gpu.row.architecture} support with R{last}; the supported branches "
               f"(R{min(supported)} and newer) ignore the GPU. The installed driver is not shown: its version "
               "settles it.",
        evidence=[ev_gpu, words], fix=fix, confidence="low")]
