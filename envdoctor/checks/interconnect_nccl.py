"""NCCL path checks: GPUDirect RDMA where InfiniBand is present (NCCL's environment variables are rows of
compat_data/env_vars.json, judged by host.environment)."""

from __future__ import annotations

from typing import List

from ..model.findings import Evidence, Finding, Fix
from .base import NO_GPU, Check, CheckContext, Findings, SkipCheck, registrar, require_section

CHECKS: List[Check] = []
check = registrar(CHECKS)


PEERMEM = Findings("interconnect.peermem", "INTERCONNECT", kinds=("not-loaded",))


@check(PEERMEM, "GPUDirect RDMA module loaded where InfiniBand is present")
def peermem(ctx: CheckContext) -> List[Finding]:
    host = require_section(ctx.facts.host, "kernel modules")
    if host.infiniband_devices is None:
        raise SkipCheck("InfiniBand devices unknown: the host probe did not look")
    if not host.infiniband_devices:
        raise SkipCheck("no InfiniBand/RoCE device: nothing to judge", not_applicable="no InfiniBand")
    if host.kernel_modules is None:
        raise SkipCheck("loaded kernel modules unknown: the host probe could not read them")
    if not ctx.facts.driver.gpus:
        raise SkipCheck("no GPU: GPUDirect RDMA has nothing to connect", not_applicable=NO_GPU)
    mods = {m.strip().lower() for m in host.kernel_modules}
    # nvidia_peermem ships with the driver since R470; nv_peer_mem was the older Mellanox module
    if mods & {"nvidia_peermem", "nv_peer_mem"}:
        return []
    return [PEERMEM.warning(
        "not-loaded",
        f"{len(host.infiniband_devices)} InfiniBand/RoCE device(s) present "
        f"({', '.join(host.infiniband_devices[:4])}) but nvidia_peermem is not loaded: GPUDirect RDMA is off",
        detail="Multi-node traffic is staged through host memory instead of going NIC<->GPU directly.",
        evidence=[Evidence("host.infiniband_devices", list(host.infiniband_devices)),
                  Evidence("host.kernel_modules", sorted(mods), expected="contains nvidia_peermem")],
        fix=Fix("Load the module (and add it to /etc/modules-load.d to keep it)",
                commands=["sudo modprobe nvidia_peermem",
                          "echo nvidia_peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf"],
                url="https://docs.nvidia.com/cuda/gpudirect-rdma/index.html"),
    )]
