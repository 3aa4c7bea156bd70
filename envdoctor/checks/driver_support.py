"""Driver lifecycle check: NVIDIA driver branches past their support end, short-lived branches, known defects."""

from __future__ import annotations

import datetime
from typing import List, Optional

from ..compat.health import HealthTable, health_table
from ..domain.versions import driver_branch
from ..model.facts import ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import DriverPlan, datacenter_gpus, driver_install
from ..remedies.driver_branch import GpuBranchLimits, gpu_branch_limits
from .base import EVERYWHERE, Check, CheckContext, Findings, SkipCheck, registrar, section_reason

CHECKS: List[Check] = []
check = registrar(CHECKS)


_MATRIX_URL = "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html"


def _judged_on(collected_at: str, table: HealthTable) -> datetime.date:
    """The day the facts were collected (a snapshot judged later keeps its date), else the table's date."""
    for text in (collected_at, table.as_of):
        try:
            return datetime.date.fromisoformat((text or "")[:10])
        except ValueError:
            continue
    return datetime.date(2000, 1, 1)


def _months_since(month: Optional[str], on: datetime.date) -> int:
    """Whole months from 'YYYY-MM' to ``on``; 0 when unknown."""
    if not month:
        return 0
    try:
        year, mon = (int(x) for x in month.split("-")[:2])
    except ValueError:
        return 0
    return (on.year - year) * 12 + on.month - mon


def _gpu_needs_newer_branch(version: str, branch: int, limits: GpuBranchLimits, fix: Fix) -> List[Finding]:
    """A driver branch older than the first one that supports a GPU here (an RTX 5090 on R550).

    Category DRIVER_OUTDATED, not NO_GPU_VISIBLE: the catalogue's NO_GPU_VISIBLE is about a working setup
    that hides GPUs (CUDA_VISIBLE_DEVICES, containers started without --gpus, MIG) and its fix would send the
    user to the wrong place; here the driver branch itself is too old for the hardware, and the fix is
    DRIVER_OUTDATED's: upgrade to a supported branch (one at or above the GPU's first branch).
    """
    out: List[Finding] = []
    for g in limits.gpus:
        first = g.row.first_branch
        if first is None or branch >= first:
            continue
        sure = g.row.confidence == "high"
        out.append(LIFECYCLE(
            "gpu-newer-than-driver", Severity.ERROR if sure else Severity.WARNING,
            f"Driver {version} (R{branch}) predates GPU {g.index} {g.label}: {g.row.architecture} GPUs need "
            f"R{first} or newer",
            detail="A driver branch released before a GPU architecture does not know its devices: the kernel "
                   "module logs 'NVRM: ... is not supported by the NVIDIA <version> driver release' and CUDA "
                   "finds no usable GPU.",
            evidence=[Evidence("driver.version", version, expected=f">= R{first} for {g.row.architecture}",
                               source=g.row.source),
                      Evidence(g.cc_path, g.cc)],
            fix=fix,
            confidence=None if sure else "medium",
        ))
    return out


LIFECYCLE = Findings("driver.lifecycle", "DRIVER_OUTDATED",
                     kinds=("feature-branch", "gpu-newer-than-driver", "gpu-older-than-driver", "known-defect",
                            "past-eol"),
                     kind_categories={"gpu-older-than-driver": "DRIVER_DROPPED_GPU"})


def _gpu_dropped_by_branch(version: str, branch: int, limits: GpuBranchLimits, fix: Fix) -> List[Finding]:
    """A driver branch newer than the last one that supports a GPU here (a Tesla K80 on R580): the question
    recommend asks too, through the same table and query (compat driver_gpu_support.json, BranchSupport)."""
    out: List[Finding] = []
    for g in limits.gpus:
        last = g.row.last_branch
        if last is None or g.row.supports(branch) is not False or branch <= last:
            continue
        out.append(LIFECYCLE.error(
            "gpu-older-than-driver",
            f"Driver {version} (R{branch}) does not drive GPU {g.index} {g.label}: R{last} is the last branch "
            f"for {g.row.architecture} GPUs",
            detail="NVIDIA ended the architecture's support with that branch: a newer driver's kernel module does "
                   "not bind the GPU, so nvidia-smi lists no such device and CUDA finds none.",
            evidence=[Evidence("driver.version", version, expected=f"<= R{last} for {g.row.architecture}",
                               source=g.row.source),
                      Evidence(g.cc_path, g.cc)],
            fix=fix,
        ))
    return out


@check(LIFECYCLE, "Driver branch is still supported", applies=EVERYWHERE)
def lifecycle(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    if d.status != ProbeStatus.OK and not d.version:
        raise SkipCheck(section_reason(d, "driver version"))
    branch = driver_branch(d.version)
    if branch is None:
        raise SkipCheck("driver version unknown: the probe did not read it")
    host = ctx.facts.host
    if ctx.facts.origin == "paste" and ((host.os or "").lower().startswith("windows") or host.wsl):
        # Windows drivers are numbered and released on their own schedule: the Linux branch table says nothing
        raise SkipCheck(f"a Windows driver ({d.version}): the Linux branch lifecycle does not apply")
    try:
        table = health_table(ctx.compat)
    except LookupError as e:
        raise SkipCheck(f"driver lifecycle data unknown: {e}") from None
    on = _judged_on(ctx.facts.collected_at or "", table)
    # only branches that drive every GPU here (compat driver_gpu_support.json): R580 is no answer for a
    # Tesla K80 (Kepler ends at R470), R550 none for an RTX 5090 (Blackwell starts at R570)
    limits = gpu_branch_limits(ctx.facts, ctx.compat)
    supported = [b for b in table.supported_branches(on) if limits.allows(b.branch)]
    targets = ", ".join(f"R{b.branch} {b.designation} (until {b.end_of_life})" for b in supported)
    # the oldest LTSB still supported: the longest hardware coverage (R580 is the last branch for
    # Maxwell-Volta) while still receiving fixes
    lts = min((b.branch for b in supported if b.designation == "LTSB"), default=None)
    if lts is None:
        lts = min((b.branch for b in supported), default=None)
    if supported:
        plan = driver_install(ctx.facts, lts, server=datacenter_gpus(ctx.facts, ctx.compat)) if lts else DriverPlan()
        fix = Fix(f"Upgrade to a supported branch: {targets}" + (f" ({plan.note})" if plan.note else ""),
                  commands=plan.commands, url=_MATRIX_URL)
    elif limits.hi is not None and limits.hi_gpu is not None:
        hi = limits.hi
        fix = Fix(f"No supported branch drives {limits.hi_gpu.label}: R{hi} is the last branch for it. "
                  f"{'Stay on' if branch <= hi else 'Install'} the newest R{hi} release, or move to a newer GPU (or cloud instance) to get a supported "
                  "driver",
                  commands=[] if branch == hi else driver_install(ctx.facts, hi, server=datacenter_gpus(ctx.facts, ctx.compat)).commands,
                  url=_MATRIX_URL)
    else:
        fix = Fix("Upgrade to a supported branch", url=_MATRIX_URL)
    out: List[Finding] = _gpu_needs_newer_branch(d.version or "", branch, limits, fix)
    out += _gpu_dropped_by_branch(d.version or "", branch, limits, fix)
    row = table.branch(branch)
    ev = Evidence("driver.version", d.version)
    if row is not None:
        past = row.past_eol(on)
        if past:
            when = f"ended {row.end_of_life}" if row.end_of_life else f"ended before {row.eol_before}"
            # An ended branch still runs what it ran (DRIVER_TOO_OLD_FOR_TORCH_CUDA judges CUDA support): a
            # note, until it has missed two years of fixes (an LTSB's whole life is three years, per
            # NVIDIA's driver lifecycle), when it becomes a warning.
            sev = Severity.WARNING if _months_since(row.end_of_life, on) > 24 else Severity.INFO
            if ctx.facts.origin == "paste" and not ctx.facts.collected_at:
                sev = Severity.INFO  # a paste of unknown date: its driver's age today says nothing of then
            out.append(LIFECYCLE(
                "past-eol", sev,
                f"Driver {d.version} is on branch R{branch} ({row.designation}), whose support {when}",
                detail="NVIDIA no longer ships bug or security fixes for it, and new CUDA releases need newer "
                       "branches.",
                evidence=[Evidence("driver.version", d.version,
                                   expected=f"a supported branch as of {on.isoformat()}", source=row.source)],
                fix=fix,
            ))
        elif row.designation == "NFB":
            out.append(LIFECYCLE.info(
                "feature-branch",
                f"Driver {d.version} is on R{branch}, a short-lived New Feature Branch"
                + (f" (supported until {row.end_of_life})" if row.end_of_life else ""),
                evidence=[Evidence("driver.version", d.version, source=row.source)],
                fix=fix,
            ))
    else:
        floor = table.thresholds.get("driver_branches_below_are_eol")
        newest = max((b.branch for b in table.driver_branches), default=0)
        if floor is not None and branch < floor:
            out.append(LIFECYCLE.info(
                "past-eol",
                f"Driver {d.version} is on branch R{branch}, older than every supported branch (R{int(floor)}+ "
                "and the LTSB/PB rows listed)",
                evidence=[Evidence("driver.version", d.version, expected=f">= R{int(floor)}",
                                   source=table.threshold_sources.get("driver_branches_below_are_eol"))],
                fix=fix,
            ))
        elif branch < newest:
            # between listed branches and not listed: NVIDIA lists only LTSB and PB branches, so this is a
            # New Feature Branch (or a GeForce-only branch) with a short life
            out.append(LIFECYCLE.info(
                "feature-branch",
                f"Driver {d.version} is on R{branch}, not a data-center Production or Long Term Support branch "
                "(a short-lived feature branch)",
                evidence=[ev], fix=fix,
            ))
    for defect in table.defects(d.version or ""):
        out.append(LIFECYCLE(
            "known-defect", Severity.WARNING if defect.severity == "warning" else Severity.INFO,
            f"Driver {d.version} has a known defect fixed in {defect.fixed_in}: {defect.summary}",
            evidence=[Evidence("driver.version", d.version, expected=f">= {defect.fixed_in}", source=defect.source)],
            fix=Fix(f"Update within the branch to {defect.fixed_in} or later", url=_MATRIX_URL),
        ))
    return out
