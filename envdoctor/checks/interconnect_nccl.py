"""NCCL path checks: GPUDirect RDMA where InfiniBand is present (NCCL's environment variables are rows of
compat_data/env_vars.json, judged by host.environment)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from ..model.findings import Evidence, Finding, Fix
from ..queries import gpu_capabilities
from .base import NO_GPU, Check, CheckContext, Findings, SkipCheck, registrar, require_section

if TYPE_CHECKING:
    from ..compat.queries import Compat

CHECKS: List[Check] = []
check = registrar(CHECKS)


PEERMEM = Findings("interconnect.peermem", "INTERCONNECT", kinds=("dmabuf", "not-loaded", "not-loaded-unknown"))

# GPUDirect RDMA through DMA-BUF, which NVIDIA recommends over the nvidia-peermem module: driver branch 535 or
# later with the open kernel module, CUDA 11.7 or later, a Turing or later GPU, Linux 5.12 or later (NVIDIA GPU
# Operator, "GPUDirect RDMA and GPUDirect Storage", Common Prerequisites)
DMABUF_URL = "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html"
DMABUF_DRIVER_MIN = 535
DMABUF_KERNEL_MIN = (5, 12)
DMABUF_CC_MIN = (7, 5)


def _dmabuf(facts: Any, compat: Compat) -> Tuple[Optional[bool], List[str], List[Evidence]]:
    """(DMA-BUF usable: True, False, or None when a fact is unknown; what it lacks; the evidence)."""
    d, host = facts.driver, facts.host
    lacks, unknown, ev = [], [], []
    branch = _int_prefix(d.version)
    kernel = tuple(int(x) for x in re.findall(r"\d+", host.kernel or "")[:2])
    ccs = [tuple(int(x) for x in (cc or "").split(".")[:2] if x.isdigit()) for _l, cc, _p in gpu_capabilities(facts, compat)]
    if d.kernel_module_open is None:
        unknown.append("whether the driver is the open kernel module")
    elif not d.kernel_module_open:
        lacks.append("the open kernel module (the proprietary one is loaded)")
    ev.append(Evidence("driver.kernel_module_open", d.kernel_module_open, expected="true (open kernel module)",
                       source=DMABUF_URL))
    if branch is None:
        unknown.append("the driver branch")
    elif branch < DMABUF_DRIVER_MIN:
        lacks.append(f"driver branch {DMABUF_DRIVER_MIN} or later (this is {d.version})")
    if len(kernel) < 2:
        unknown.append("the Linux kernel version")
    elif kernel < DMABUF_KERNEL_MIN:
        lacks.append(f"Linux 5.12 or later (this is {host.kernel})")
        ev.append(Evidence("host.kernel", host.kernel, expected=">= 5.12"))
    if any(len(c) < 2 for c in ccs) or not ccs:
        unknown.append("the GPUs' compute capability")
    elif any(c < DMABUF_CC_MIN for c in ccs):
        lacks.append("Turing or later GPUs")
    if lacks:
        return False, lacks, ev
    return (None if unknown else True), unknown, ev


def _int_prefix(version: Optional[str]) -> Optional[int]:
    m = re.match(r"(\d+)", version or "")
    return int(m.group(1)) if m else None


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
    usable, why, dev = _dmabuf(ctx.facts, ctx.compat)
    ib = f"{len(host.infiniband_devices)} InfiniBand/RoCE device(s) ({', '.join(host.infiniband_devices[:4])})"
    mod_ev = Evidence("host.kernel_modules", sorted(mods), expected="nvidia_peermem, or DMA-BUF")
    if usable:
        return [PEERMEM.info(
            "dmabuf",
            f"{ib}; nvidia_peermem is not loaded and need not be: this driver (open kernel module, branch "
            f"{ctx.facts.driver.version}) and kernel {host.kernel} give GPUDirect RDMA through DMA-BUF, which NVIDIA "
            "recommends over nvidia-peermem",
            evidence=[Evidence("host.infiniband_devices", list(host.infiniband_devices)), mod_ev] + dev,
            fix=Fix("Check that NCCL registers GPU memory through DMA-BUF (NCCL_DEBUG=INFO names it)",
                    url=DMABUF_URL))]
    if usable is None:
        return [PEERMEM.info(
            "not-loaded-unknown",
            f"{ib}; nvidia_peermem is not loaded, and whether GPUDirect RDMA can use DMA-BUF instead is unknown "
            f"({', '.join(why)})",
            detail="NVIDIA recommends DMA-BUF over nvidia-peermem where the driver is the open kernel module "
                   "(branch 535+), the kernel 5.12+ and the GPUs Turing or later; with neither, multi-node traffic "
                   "is staged through host memory.",
            evidence=[Evidence("host.infiniband_devices", list(host.infiniband_devices)), mod_ev] + dev,
            fix=Fix("Check how NCCL registers GPU memory (NCCL_DEBUG=INFO: 'DMA-BUF' or 'GDR'); without "
                    "DMA-BUF, load nvidia_peermem", commands=["sudo modprobe nvidia_peermem"], url=DMABUF_URL))]
    return [PEERMEM.warning(
        "not-loaded",
        f"{len(host.infiniband_devices)} InfiniBand/RoCE device(s) present "
        f"({', '.join(host.infiniband_devices[:4])}) but nvidia_peermem is not loaded: GPUDirect RDMA is off",
        detail="Multi-node traffic is staged through host memory instead of going NIC<->GPU directly. DMA-BUF, "
               "which NVIDIA recommends over nvidia-peermem, is not available here either: it needs "
               + "; ".join(why) + ".",
        evidence=[Evidence("host.infiniband_devices", list(host.infiniband_devices)),
                  Evidence("host.kernel_modules", sorted(mods), expected="contains nvidia_peermem")] + dev,
        fix=Fix("Load the module (and add it to /etc/modules-load.d to keep it)",
                commands=["sudo modprobe nvidia_peermem",
                          "echo nvidia_peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf"],
                url="https://docs.nvidia.com/cuda/gpudirect-rdma/index.html"),
    )]
