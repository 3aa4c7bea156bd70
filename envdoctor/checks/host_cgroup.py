"""host.cgroup-memory: a container or job whose cgroup memory limit is below the memory of its GPUs."""

from __future__ import annotations

from typing import List, Optional

from ..model.facts import Gpu, ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ..remedies import command, placeholder_flag
from ._gpus import GIB, gpu_list
from .base import NO_GPU, Check, CheckContext, Findings, SkipCheck, registrar, require_section

CHECKS: List[Check] = []
check = registrar(CHECKS)

CGROUP_MEMORY = Findings("host.cgroup-memory", "HOST_MEMORY_LOW", kinds=("below-gpu-memory",))


def _gpu_memory(ctx: CheckContext, g: Gpu) -> Optional[int]:
    """The GPU's memory as the driver reports it, else its model's from the compat GPU table."""
    if g.memory_total_bytes:
        return g.memory_total_bytes
    spec = ctx.compat.gpu(g.name) if g.name and hasattr(ctx.compat, "gpu") else None
    return getattr(spec, "memory_bytes", None)


@check(CGROUP_MEMORY, "The cgroup memory limit holds at least what the GPUs hold")
def cgroup_memory(ctx: CheckContext) -> List[Finding]:
    host = require_section(ctx.facts.host, "cgroup memory limit")
    if host.os not in (None, "Linux"):
        raise SkipCheck(f"cgroup memory limits are a Linux thing (this is {host.os})")
    if host.cgroup_version is None:
        raise SkipCheck("cgroup memory limit unknown: the host probe found no cgroup hierarchy to read")
    driver = ctx.facts.driver
    gpus = list(driver.gpus) if driver.status == ProbeStatus.OK else []
    if not gpus:
        raise SkipCheck("no GPU whose memory the cgroup limit could be compared with", not_applicable=NO_GPU)
    sizes = [(g, _gpu_memory(ctx, g)) for g in gpus]
    unknown = [g for g, size in sizes if size is None]
    if unknown:
        raise SkipCheck(f"GPU memory unknown for {gpu_list(unknown)}: the sum to compare the limit with is unknown")
    gpu_bytes = sum(size for _, size in sizes if size)
    limit, total = host.cgroup_memory_limit_bytes, host.memory_total_bytes
    # no limit, or one at or above physical memory (which cannot bind), or one that holds the GPUs' memory
    if limit is None or (total is not None and limit >= total) or limit >= gpu_bytes:
        return []
    physical = (f"; the machine has {total / GIB:.0f} GiB, so the limit is what binds" if total else "")
    return [CGROUP_MEMORY.warning(
        "below-gpu-memory",
        f"The cgroup memory limit ({limit / GIB:.1f} GiB) is below the memory of the {len(gpus)} GPU(s) "
        f"({gpu_bytes / GIB:.0f} GiB){physical}",
        detail="A checkpoint of a model that fills the GPUs passes through host RAM when it is saved or loaded, "
               "and pinned host buffers (DataLoader pin_memory, CPU offload) count against the cgroup too. "
               "Past the limit the kernel's OOM killer ends the process (exit code 137, 'Killed'), with no "
               "Python error to say why.",
        evidence=[Evidence("host.cgroup_memory_limit_bytes", limit, expected=f">= {gpu_bytes}",
                           source="sum of the GPUs' memory (driver.gpus[].memory_total_bytes)"),
                  Evidence("host.memory_total_bytes", total)],
        fix=Fix("Raise the container's (or job's) memory limit to at least the GPUs' total memory",
                commands=[command("docker", "run", placeholder_flag("--memory", "<size>"), "..."),
                          command("srun", placeholder_flag("--mem", "<size>"), "...",
                                  comment="or the pod's resources.limits.memory on Kubernetes")]),
    )]
