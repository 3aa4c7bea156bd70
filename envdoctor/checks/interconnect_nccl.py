"""NCCL path checks: NCCL environment variables that force slow paths, GPUDirect RDMA where InfiniBand is present."""

from __future__ import annotations

from typing import List

from ..findings import Evidence, Finding, Fix, Severity
from ..remedies import export, placeholder
from .base import NO_GPU, Check, CheckContext, Findings, SkipCheck, registrar, require_section

CHECKS: List[Check] = []
check = registrar(CHECKS)


_TRUE = {"1", "true", "yes", "on"}


NCCL_ENV = Findings("interconnect.nccl-env", "INTERCONNECT",
                    kinds=("ib-disabled", "p2p-disabled", "shm-disabled", "socket-loopback"))


@check(NCCL_ENV, "NCCL environment does not force slow paths")
def nccl_env(ctx: CheckContext) -> List[Finding]:
    host = require_section(ctx.facts.host, "environment variables")
    env = host.env or {}
    if not env and ctx.facts.paste is not None:  # a paste that shows no variable says nothing about them
        raise SkipCheck("environment variables unknown: the pasted text shows none")
    ib = host.infiniband_devices or []
    out: List[Finding] = []
    # NCCL environment variables: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
    p2p = env.get("NCCL_P2P_DISABLE")
    if p2p is not None and p2p.strip().lower() in _TRUE:
        out.append(NCCL_ENV.warning(
            "p2p-disabled",
            f"NCCL_P2P_DISABLE={p2p}: NCCL will not use NVLink or PCIe peer-to-peer between GPUs",
            detail="All intra-node traffic then goes through host shared memory, several times slower. The "
                   "variable is often left over from a workaround for an old driver or a consumer GPU.",
            evidence=[Evidence("host.env.NCCL_P2P_DISABLE", p2p, expected="unset")],
            fix=Fix("Unset it (and remove it from your job script or container image)",
                    commands=["unset NCCL_P2P_DISABLE"]),
        ))
    ibd = env.get("NCCL_IB_DISABLE")
    if ibd is not None and ibd.strip().lower() in _TRUE:
        out.append(NCCL_ENV(
            "ib-disabled", Severity.WARNING if ib else Severity.INFO,
            f"NCCL_IB_DISABLE={ibd}" + (f" although {len(ib)} InfiniBand/RoCE device(s) are present: multi-node "
                                        "traffic falls back to TCP sockets" if ib else
                                        ": NCCL will not use InfiniBand (none seen here)"),
            evidence=[Evidence("host.env.NCCL_IB_DISABLE", ibd, expected="unset"),
                      Evidence("host.infiniband_devices", ib)],
            fix=Fix("Unset it", commands=["unset NCCL_IB_DISABLE"]),
        ))
    ifname = env.get("NCCL_SOCKET_IFNAME")
    if ifname is not None and ifname.strip().lstrip("=^") in ("lo", "lo0"):
        out.append(NCCL_ENV.warning(
            "socket-loopback",
            f"NCCL_SOCKET_IFNAME={ifname}: NCCL bootstraps over the loopback interface, so other nodes "
            "cannot reach this one",
            evidence=[Evidence("host.env.NCCL_SOCKET_IFNAME", ifname, expected="the cluster network interface")],
            fix=Fix("Point it at the cluster interface (see `ip -br addr`), or unset it",
                    commands=["unset NCCL_SOCKET_IFNAME", export("NCCL_SOCKET_IFNAME", placeholder("<interface>"))]),
        ))
    shm = env.get("NCCL_SHM_DISABLE")
    if shm is not None and shm.strip().lower() in _TRUE:
        out.append(NCCL_ENV.info(
            "shm-disabled",
            f"NCCL_SHM_DISABLE={shm}: NCCL will not use shared memory between processes on this node",
            evidence=[Evidence("host.env.NCCL_SHM_DISABLE", shm, expected="unset")],
            fix=Fix("Unset it unless /dev/shm is the problem", commands=["unset NCCL_SHM_DISABLE"]),
        ))
    return out


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
