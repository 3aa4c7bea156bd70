"""Driver branch planning: which branches drive the GPUs here, and which branch a fix should install.

Reads compat_data/driver_gpu_support.json and health.json through the compat object. Used by the driver fixes
(checks/driver_cuda.py, remedies/torch_plan.py) and the lifecycle check (checks/driver_support.py): a suggested
branch must support every GPU here. NVIDIA moved Kepler to the R470 legacy branch and made R580 the last
branch for Maxwell, Pascal and Volta; new architectures need a first branch (Blackwell: R570).
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, List, Optional, Tuple

from ..compat.driver_gpu import BranchSupport, driver_gpu_table
from ..domain.arch import sm_name
from ..domain.fastclass import dataclass
from ..domain.versions import driver_branch, major_minor, parse_version, version_ge
from ..model.facts import Facts

if TYPE_CHECKING:
    from ..compat import Compat


@dataclass(frozen=True)
class GpuOnBranch:
    index: int
    name: str
    cc: str
    cc_path: str  # where the compute capability came from
    row: BranchSupport

    @property
    def label(self) -> str:
        return f"{self.name} ({self.row.architecture}, {sm_name(self.cc)})"


@dataclass(frozen=True)
class GpuBranchLimits:
    gpus: List[GpuOnBranch] = field(default_factory=list)
    lo: Optional[int] = None  # every GPU here needs at least this branch (confirmed first branches only)
    hi: Optional[int] = None  # no branch newer than this supports every GPU here
    lo_gpu: Optional[GpuOnBranch] = None
    hi_gpu: Optional[GpuOnBranch] = None

    def allows(self, branch: int) -> bool:
        return (self.lo is None or branch >= self.lo) and (self.hi is None or branch <= self.hi)


def gpu_branch_limits(facts: Facts, compat: Compat) -> GpuBranchLimits:
    """The branch range every GPU in facts.driver.gpus shares; empty limits when nothing is known."""
    try:
        table = driver_gpu_table(compat)
    except LookupError:
        return GpuBranchLimits()
    seen = set()
    gpus: List[GpuOnBranch] = []
    for g in facts.driver.gpus:
        cc, path = g.compute_capability, f"driver.gpus[{g.index}].compute_capability"
        if not cc and g.name:
            cc = compat.gpu_compute_capability(g.name)
            path = f"compat gpus: compute capability of {g.name!r}"
        row = table.for_cc(cc)
        if row is None or cc is None:
            continue
        key = (g.name, cc)
        if key in seen:
            continue
        seen.add(key)
        gpus.append(GpuOnBranch(g.index, g.name or "unknown model", cc, path, row))
    lo_gpu = max((x for x in gpus if x.row.first_branch is not None),
                 key=lambda x: x.row.first_branch or 0, default=None)
    hi_gpu = min((x for x in gpus if x.row.last_branch is not None),
                 key=lambda x: x.row.last_branch or 0, default=None)
    return GpuBranchLimits(gpus, lo_gpu.row.first_branch if lo_gpu else None,
                           hi_gpu.row.last_branch if hi_gpu else None, lo_gpu, hi_gpu)


def branch_max_cuda(facts: Facts, compat: Compat, branch: int) -> Optional[str]:
    """The newest CUDA a branch supports natively ("11.4" for R470), from compat cuda_driver.json."""
    got = compat.driver_max_cuda(str(branch))
    return got[0] if got else None


def branch_runs_cuda(facts: Facts, compat: Compat, branch: int, cuda: Optional[str]) -> bool:
    """Does the newest release of ``branch`` run prebuilt CUDA ``cuda`` wheels (natively, or for CUDA 11+
    through minor-version compatibility, whose floor is a branch of the same major)?"""
    mm = major_minor(cuda)
    if not mm:
        return False
    ceiling = branch_max_cuda(facts, compat, branch)
    cmm = major_minor(ceiling)
    if cmm and mm <= cmm:
        return True
    req = compat.cuda_requirement(cuda)
    if req is None:
        return False
    need = req.minor_compat_min_driver if mm[0] >= 11 else None
    if need is None:
        need = req.min_driver
    # any release of the branch at or above the floor's branch: compare branch numbers
    return bool(need) and version_ge(f"{branch}.999.999", need)


def newest_torch_for(facts: Facts, compat: Compat, branch: int, ccs: List[str]) -> Optional[Tuple[str, str]]:
    """(torch minor, variant) of the newest torch release with a CUDA variant that ``branch`` runs and whose
    wheel has kernels (SASS, or PTX it can JIT) for every compute capability in ``ccs``; only variants with a
    known arch list count."""
    from ..domain.arch import arch_runs
    from ..domain.variants import cuda_of_variant

    best: Optional[Tuple[str, str]] = None
    for rel in compat.torch_releases():
        for variant in rel.cuda_variants:
            arch = rel.arch_lists.get(variant)
            if not arch or not all(arch_runs(arch, cc)[0] for cc in ccs):
                continue
            if not branch_runs_cuda(facts, compat, branch, cuda_of_variant(variant)):
                continue
            key = (parse_version(rel.minor), parse_version(cuda_of_variant(variant) or "0"))
            if best is None or key > (parse_version(best[0]), parse_version(cuda_of_variant(best[1]) or "0")):
                best = (rel.minor, variant)
    return best


def newest_patch(facts: Facts, compat: Compat, minor: str) -> str:
    """"2.7.1" for "2.7" when the companion table knows the patches; else the minor itself."""
    patches = [c.torch for c in compat.companion_rows() if major_minor(c.torch) == major_minor(minor)
               and c.torch.count(".") == 2]
    return max(patches, key=parse_version) if patches else minor


def target_branch(facts: Facts, compat: Compat, min_driver: Optional[str]) -> Optional[int]:
    """The oldest still-supported production/LTS branch at or above what ``min_driver`` needs that also
    supports every GPU here (compat driver_gpu_support.json); None when no branch does both.

    Installing exactly the minimum's branch (e.g. 530 for CUDA 12.1) often names a short-lived feature
    branch that distributions no longer ship; a supported branch that is new enough is the useful answer.
    """
    return branch_plan(facts, compat, min_driver)[0]


def branch_plan(facts: Facts, compat: Compat, min_driver: Optional[str]) -> Tuple[Optional[int], Optional[str]]:
    """(branch to suggest, why no branch can be suggested) for a driver at least ``min_driver``.

    A branch that drops a GPU here (R580 for a Tesla K80: Kepler ends at R470) or predates it (R550 for an
    RTX 5090: Blackwell starts at R570) is never suggested.
    """
    import datetime

    from ..compat.health import health_table

    need = driver_branch(min_driver)
    if need is None:
        return None, None
    limits = gpu_branch_limits(facts, compat)
    if limits.hi is not None and need > limits.hi and limits.hi_gpu is not None:
        ceiling = branch_max_cuda(facts, compat, limits.hi)
        return None, (f"{limits.hi_gpu.label} is supported only up to the R{limits.hi} driver branch"
                      + (f" (CUDA {ceiling} at most" + (", other 11.x builds through minor-version compatibility)"
                                                       if ceiling.startswith("11.") else ")")
                         if ceiling else "")
                      + f", so no driver both runs it and meets {min_driver}")
    floor = max(need, limits.lo or 0)
    try:
        table = health_table(compat)
        on = datetime.date.fromisoformat((facts.collected_at or table.as_of)[:10])
    except (LookupError, ValueError, TypeError):
        return floor, None
    supported = sorted(b.branch for b in table.supported_branches(on) if b.branch >= floor and limits.allows(b.branch))
    if supported:
        return supported[0], None
    if limits.hi is not None:
        # every supported branch dropped this GPU: its last (legacy) branch is still the one that runs it
        return limits.hi, None
    return floor, None
