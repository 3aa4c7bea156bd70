"""Multi-GPU interconnect checks: NVLink links, PCIe-only GPU pairs, P2P, fabric manager, NCCL variables, peermem."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..domain.gpus import gpu_label
from ..facts import Gpu, ProbeStatus
from ..findings import Evidence, Finding, Fix, Severity
from ..remedies import export, placeholder
from .base import Check, CheckContext, SkipCheck, registrar, section_reason
from .gpu_health import gpu_path, require_gpus

CHECKS: List[Check] = []
check = registrar(CHECKS)

# Bidirectional bandwidth of one NVLink, by generation (NVIDIA NVLink page,
# https://www.nvidia.com/en-us/data-center/nvlink/): P100 4 links = 160 GB/s, V100 6 = 300 GB/s,
# A100 12 = 600 GB/s, H100 18 = 900 GB/s, B200 18 = 1800 GB/s. Used to derive the link count when
# compat gpus.json gives the total bandwidth but not nvlink_links.
_LINK_GBS = {1: 40.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 100.0}


def _spec(compat: Any, name: Optional[str]) -> Any:
    getter = getattr(compat, "gpu", None)
    if getter is None or not name:
        return None
    try:
        return getter(name)
    except (KeyError, LookupError, ValueError):
        return None


def expected_links(compat: Any, g: Gpu) -> Tuple[Optional[int], Optional[str]]:
    """(NVLink links the model has, where that number comes from); (None, None) when unknown or optional.

    PCIe cards take NVLink only through an optional bridge, so only SXM/module parts are expected to
    have their links up.
    """
    spec = _spec(compat, g.name)
    if spec is None:
        return None, None
    if "pcie" in (g.name or "").lower() or "pcie" in spec.name.lower():
        return None, None
    if spec.nvlink_links:
        return int(spec.nvlink_links), f"compat gpus.json {spec.name}: nvlink_links {spec.nvlink_links}"
    if spec.nvlink_gen and spec.nvlink_bandwidth_gbs and spec.nvlink_gen in _LINK_GBS:
        n = int(round(spec.nvlink_bandwidth_gbs / _LINK_GBS[spec.nvlink_gen]))
        return n, (f"compat gpus.json {spec.name}: NVLink gen {spec.nvlink_gen}, "
                   f"{spec.nvlink_bandwidth_gbs:g} GB/s = {n} links")
    return None, None


# Which inactive links are a fault. NVML reports every NVLink a GPU has, wired or not: on PCIe boards
# (A100/H100 PCIe, RTX A6000, RTX 3090) the links only connect through an optional NVLink bridge, so without
# one all of them read inactive (nvmlDeviceGetNvLinkState NVML_FEATURE_DISABLED; `nvidia-smi nvlink -s`
# "<inactive>"). The rule, from what NVML gives per link:
# - all links inactive on a board whose links are wired on the baseboard (SXM/HGX, compat nvlink_links) is a fault;
# - all links inactive on a PCIe board (or a model not in compat) is "no bridge fitted": a note, not a fault;
# - some links up and some down is a fault wherever it is: a bridge or baseboard with dead links (or one
#   bridge of a set missing: A100 PCIe pairs use three bridges, NVIDIA A100 PCIe product brief PB-10137);
# - MIG mode: NVLink is not used by MIG instances (NVIDIA MIG User Guide, "GPU to GPU P2P (PCIe or NVLink)
#   is not supported"), so the links' state is not judged.
@check("interconnect.nvlink", "NVLink links are all up", categories=("INTERCONNECT",))
def nvlink(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "NVLink state")
    if all(g.nvlinks is None for g in gpus):
        raise SkipCheck("NVLink state unknown: the probe did not read NVLink links")
    down: List[Tuple[Gpu, str, List[Evidence]]] = []
    fewer: List[Tuple[Gpu, str, List[Evidence]]] = []
    no_bridge: List[Gpu] = []
    mig: List[Gpu] = []
    for g in gpus:
        if g.nvlinks is None:
            continue
        if g.mig_mode_current:
            if any(lk.active is False for lk in g.nvlinks):
                mig.append(g)
            continue
        want, src = expected_links(ctx.compat, g)
        links = g.nvlinks
        inactive = [lk for lk in links if lk.active is False]
        active = [lk for lk in links if lk.active]
        if inactive and not active and not want:
            no_bridge.append(g)
        elif inactive:
            all_down = not active
            what = ("all NVLink links inactive" if all_down
                    else f"{len(inactive)} of {len(links)} NVLink links inactive "
                         f"(links {', '.join(str(lk.link) for lk in inactive)})")
            down.append((g, f"{gpu_label(g)}: {what}",
                         [Evidence(gpu_path(g, "nvlinks"), f"{len(active)} active of {len(links)}",
                                   expected=f"{want} active" if want else "all active", source=src)]))
        elif want and len(active) < want:
            fewer.append((g, f"{gpu_label(g)}: {len(active)} NVLink links, the model has {want}",
                          [Evidence(gpu_path(g, "nvlinks"), len(active), expected=str(want), source=src)]))
    out: List[Finding] = []
    if down:
        out.append(Finding(
            "interconnect.nvlink/inactive", "INTERCONNECT", Severity.ERROR,
            "NVLink links down: " + "; ".join(t for _, t, _ in down),
            detail="GPU-to-GPU traffic (all-reduce, tensor parallelism) falls back to fewer links or PCIe, "
                   "many times slower; on NVSwitch systems CUDA may refuse to start. On PCIe boards, a bridge "
                   "with some links down is loose or faulty, or one bridge of a set is missing.",
            evidence=[e for _, _, ev in down for e in ev],
            fix=Fix("Reset the GPUs (or reboot) and check the fabric manager and bridges; if links stay down, "
                    "report the GPU/baseboard to the provider",
                    commands=["nvidia-smi nvlink --status", "systemctl status nvidia-fabricmanager",
                              "sudo nvidia-smi -r"]),
        ))
    if no_bridge:
        out.append(Finding(
            "interconnect.nvlink/no-bridge", "INTERCONNECT", Severity.INFO,
            f"No NVLink bridge on {', '.join(gpu_label(g) for g in no_bridge)}: its NVLink links are all "
            "inactive, so GPU-to-GPU traffic uses PCIe",
            detail="NVLink on PCIe boards needs an NVLink bridge between GPU pairs; without one every link "
                   "reads inactive, which is the normal state of a bridge-less card, not a fault.",
            evidence=[Evidence(gpu_path(g, "nvlinks"), f"0 active of {len(g.nvlinks or [])}",
                               expected="a bridge, if you want NVLink") for g in no_bridge],
            fix=Fix("Fit NVLink bridges if GPU-to-GPU bandwidth matters; nothing to do otherwise",
                    commands=["nvidia-smi nvlink --status", "nvidia-smi topo -m"]),
        ))
    if mig:
        out.append(Finding(
            "interconnect.nvlink/mig", "INTERCONNECT", Severity.INFO,
            "NVLink links inactive on " + ", ".join(gpu_label(g) for g in mig) + " with MIG on: not judged "
            "(MIG instances do not use NVLink); check again with MIG off",
            evidence=[Evidence(gpu_path(g, "nvlinks"), f"{sum(1 for lk in g.nvlinks or [] if lk.active)} active of "
                               f"{len(g.nvlinks or [])}", source="MIG mode on") for g in mig],
            fix=Fix("With MIG off, check the links", commands=["nvidia-smi nvlink --status"]),
        ))
    if fewer:
        out.append(Finding(
            "interconnect.nvlink/fewer-links", "INTERCONNECT", Severity.WARNING,
            "Fewer NVLink links than the model has: " + "; ".join(t for _, t, _ in fewer),
            evidence=[e for _, _, ev in fewer for e in ev],
            fix=Fix("Check NVLink status and report missing links to the provider",
                    commands=["nvidia-smi nvlink --status"]),
        ))
    return out


_PCIE_PATHS = {"SYS": "across CPU sockets (SYS)", "NODE": "between PCIe host bridges in one NUMA node (NODE)",
               "PHB": "through a PCIe host bridge (PHB)"}


@check("interconnect.topology", "GPU pairs use NVLink and P2P where the model has them", categories=("INTERCONNECT",))
def topology(ctx: CheckContext) -> List[Finding]:
    topo = ctx.facts.topology
    matrix = topo.gpu_matrix
    if not matrix and not topo.p2p_supported:
        raise SkipCheck(section_reason(topo, "GPU topology matrix"))
    gpus = list(ctx.facts.driver.gpus) if ctx.facts.driver.status == ProbeStatus.OK else []
    by_index = {g.index: g for g in gpus}
    out: List[Finding] = []
    slow: List[Tuple[int, int, str]] = []
    for i, row in enumerate(matrix or []):
        for j, conn in enumerate(row):
            if j <= i:
                continue
            kind = (conn or "").strip().upper()
            if kind not in _PCIE_PATHS:
                continue
            gi, gj = by_index.get(i), by_index.get(j)
            wi = expected_links(ctx.compat, gi)[0] if gi else None
            wj = expected_links(ctx.compat, gj)[0] if gj else None
            if wi and wj:
                slow.append((i, j, kind))
    if slow:
        out.append(Finding(
            "interconnect.topology/pcie-path", "INTERCONNECT", Severity.WARNING,
            "GPU pairs talk over PCIe although the model has NVLink: "
            + "; ".join(f"GPU{i}-GPU{j} {_PCIE_PATHS[k]}" for i, j, k in slow),
            detail="NCCL then moves data through host bridges or the CPU interconnect instead of NVLink.",
            evidence=[Evidence(f"topology.gpu_matrix[{i}][{j}]", k, expected="NV<n>") for i, j, k in slow],
            fix=Fix("Check NVLink state and the fabric manager; report missing NVLink paths to the provider",
                    commands=["nvidia-smi topo -m", "nvidia-smi nvlink --status"]),
        ))
    off = []
    for i, row in enumerate(topo.p2p_supported or []):
        for j, ok in enumerate(row):
            if j > i and ok is False:
                off.append((i, j))
    if off:
        dc = [g for g in gpus if getattr(_spec(ctx.compat, g.name), "datacenter", None)]
        out.append(Finding(
            "interconnect.topology/p2p-disabled", "INTERCONNECT",
            Severity.WARNING if dc else Severity.INFO,
            "Peer-to-peer access unavailable between " + ", ".join(f"GPU{i}-GPU{j}" for i, j in off),
            detail="Without P2P, GPU-to-GPU copies bounce through host memory. GeForce cards do not support "
                   "P2P over PCIe; on data-center GPUs it points at IOMMU/ACS settings or a virtualised host.",
            evidence=[Evidence(f"topology.p2p_supported[{i}][{j}]", False, expected="true") for i, j in off],
            fix=Fix("On data-center GPUs, disable PCIe ACS / IOMMU translation for the GPUs (BIOS or "
                    "iommu=pt) and verify with the CUDA p2pBandwidthLatencyTest sample",
                    commands=["nvidia-smi topo -p2p r"]),
        ))
    return out


_FM_URL = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"


def _fabric_gpus(d) -> List[Gpu]:
    """GPUs whose NVML fabric info says they sit on an NVSwitch fabric (state other than not_supported)."""
    return [g for g in d.gpus if g.fabric_state and g.fabric_state != "not_supported"]


@check("interconnect.fabric-manager", "Fabric manager runs on NVSwitch systems", categories=("INTERCONNECT",))
def fabric_manager(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    if d.status != ProbeStatus.OK:
        raise SkipCheck(section_reason(d, "NVSwitch count"))
    on_fabric = _fabric_gpus(d)
    if on_fabric:
        # NVML GPU fabric info (Hopper and later) is the GPU's own word on its NVSwitch registration, read
        # through the driver, so it holds inside containers too: COMPLETED with status SUCCESS means the
        # fabric manager configured it (NVML reference, nvmlGpuFabricInfo_t; Fabric Manager User Guide)
        bad = [g for g in on_fabric if g.fabric_state != "completed" or (g.fabric_status or "SUCCESS") != "SUCCESS"]
        if not bad:
            return []
        pending = [g for g in bad if g.fabric_state in ("not_started", "in_progress")]
        what = ("the fabric manager has not registered them" if pending
                else "their fabric registration failed")
        return [Finding(
            "interconnect.fabric-manager/not-ready", "INTERCONNECT", Severity.ERROR,
            f"NVSwitch fabric not ready on {len(bad)} of {len(d.gpus)} GPU(s): {what} ("
            + "; ".join(f"GPU {g.index}: {g.fabric_state}" + (f", {g.fabric_status}" if g.fabric_status
                                                               and g.fabric_status != "SUCCESS" else "")
                        for g in bad) + ")",
            detail="CUDA fails with 'system not yet initialized' until nvidia-fabricmanager has set up the NVSwitch "
                   "fabric; its version must match the driver exactly.",
            evidence=[Evidence(gpu_path(g, "fabric_state"), g.fabric_state, expected="completed",
                               source="NVML nvmlDeviceGetGpuFabricInfo") for g in bad]
                     + [Evidence(gpu_path(g, "fabric_status"), g.fabric_status, expected="SUCCESS")
                        for g in bad if g.fabric_status and g.fabric_status != "SUCCESS"],
            fix=Fix("Start the fabric manager on the host (install the package matching the driver version if "
                    "missing), then check its log",
                    commands=["sudo systemctl enable --now nvidia-fabricmanager",
                              "systemctl status nvidia-fabricmanager",
                              "nvidia-smi -q | grep -A 4 -i fabric"],
                    url=_FM_URL),
        )]
    if d.nvswitch_count is None:
        raise SkipCheck("NVSwitch count unknown: the probe did not count NVSwitches")
    if d.nvswitch_count == 0:
        return []
    in_container = bool(ctx.facts.host.container and ctx.facts.host.container.runtime)
    if d.fabric_manager_running is None or (d.fabric_manager_running is False and in_container):
        where = (" from inside this container (the host's processes are not visible here)"
                 if in_container else "")
        return [Finding(
            "interconnect.fabric-manager/unknown", "INTERCONNECT", Severity.INFO,
            f"{d.nvswitch_count} NVSwitch(es) present; could not tell whether the fabric manager runs{where}",
            evidence=[Evidence("driver.fabric_manager_running", d.fabric_manager_running, expected="true")]
                     + ([Evidence("host.container.runtime", ctx.facts.host.container.runtime)]
                        if in_container else []),
            fix=Fix("Check it on the host", commands=["systemctl status nvidia-fabricmanager",
                                                      "nvidia-smi -q | grep -A 4 -i fabric"]),
        )]
    if d.fabric_manager_running:
        return []
    # NVIDIA Fabric Manager User Guide: on NVSwitch systems GPUs stay unusable for CUDA until FM has
    # configured the fabric; CUDA reports "system not yet initialized" (cudaErrorSystemNotReady).
    return [Finding(
        "interconnect.fabric-manager/not-running", "INTERCONNECT", Severity.ERROR,
        f"{d.nvswitch_count} NVSwitch(es) present but the NVIDIA fabric manager is not running",
        detail="CUDA fails with 'system not yet initialized' until nvidia-fabricmanager has set up the NVSwitch "
               "fabric; its version must match the driver exactly.",
        evidence=[Evidence("driver.nvswitch_count", d.nvswitch_count),
                  Evidence("driver.fabric_manager_running", False, expected="true")],
        fix=Fix("Start the fabric manager (install the package matching the driver version if missing)",
                commands=["sudo systemctl enable --now nvidia-fabricmanager",
                          "systemctl status nvidia-fabricmanager"],
                url=_FM_URL),
    )]


_TRUE = {"1", "true", "yes", "on"}


@check("interconnect.nccl-env", "NCCL environment does not force slow paths", categories=("INTERCONNECT",))
def nccl_env(ctx: CheckContext) -> List[Finding]:
    host = ctx.facts.host
    if host.status != ProbeStatus.OK:
        raise SkipCheck(section_reason(host, "environment variables"))
    env = host.env or {}
    if not env and ctx.facts.paste is not None:  # a paste that shows no variable says nothing about them
        raise SkipCheck("environment variables unknown: the pasted text shows none")
    ib = host.infiniband_devices or []
    out: List[Finding] = []
    # NCCL environment variables: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
    p2p = env.get("NCCL_P2P_DISABLE")
    if p2p is not None and p2p.strip().lower() in _TRUE:
        out.append(Finding(
            "interconnect.nccl-env/p2p-disabled", "INTERCONNECT", Severity.WARNING,
            f"NCCL_P2P_DISABLE={p2p}: NCCL will not use NVLink or PCIe peer-to-peer between GPUs",
            detail="All intra-node traffic then goes through host shared memory, several times slower. The "
                   "variable is often left over from a workaround for an old driver or a consumer GPU.",
            evidence=[Evidence("host.env.NCCL_P2P_DISABLE", p2p, expected="unset")],
            fix=Fix("Unset it (and remove it from your job script or container image)",
                    commands=["unset NCCL_P2P_DISABLE"]),
        ))
    ibd = env.get("NCCL_IB_DISABLE")
    if ibd is not None and ibd.strip().lower() in _TRUE:
        out.append(Finding(
            "interconnect.nccl-env/ib-disabled", "INTERCONNECT", Severity.WARNING if ib else Severity.INFO,
            f"NCCL_IB_DISABLE={ibd}" + (f" although {len(ib)} InfiniBand/RoCE device(s) are present: multi-node "
                                        "traffic falls back to TCP sockets" if ib else
                                        ": NCCL will not use InfiniBand (none seen here)"),
            evidence=[Evidence("host.env.NCCL_IB_DISABLE", ibd, expected="unset"),
                      Evidence("host.infiniband_devices", ib)],
            fix=Fix("Unset it", commands=["unset NCCL_IB_DISABLE"]),
        ))
    ifname = env.get("NCCL_SOCKET_IFNAME")
    if ifname is not None and ifname.strip().lstrip("=^") in ("lo", "lo0"):
        out.append(Finding(
            "interconnect.nccl-env/socket-loopback", "INTERCONNECT", Severity.WARNING,
            f"NCCL_SOCKET_IFNAME={ifname}: NCCL bootstraps over the loopback interface, so other nodes "
            "cannot reach this one",
            evidence=[Evidence("host.env.NCCL_SOCKET_IFNAME", ifname, expected="the cluster network interface")],
            fix=Fix("Point it at the cluster interface (see `ip -br addr`), or unset it",
                    commands=["unset NCCL_SOCKET_IFNAME", export("NCCL_SOCKET_IFNAME", placeholder("<interface>"))]),
        ))
    shm = env.get("NCCL_SHM_DISABLE")
    if shm is not None and shm.strip().lower() in _TRUE:
        out.append(Finding(
            "interconnect.nccl-env/shm-disabled", "INTERCONNECT", Severity.INFO,
            f"NCCL_SHM_DISABLE={shm}: NCCL will not use shared memory between processes on this node",
            evidence=[Evidence("host.env.NCCL_SHM_DISABLE", shm, expected="unset")],
            fix=Fix("Unset it unless /dev/shm is the problem", commands=["unset NCCL_SHM_DISABLE"]),
        ))
    return out


@check("interconnect.peermem", "GPUDirect RDMA module loaded where InfiniBand is present",
       categories=("INTERCONNECT",))
def peermem(ctx: CheckContext) -> List[Finding]:
    host = ctx.facts.host
    if host.status != ProbeStatus.OK:
        raise SkipCheck(section_reason(host, "kernel modules"))
    if host.infiniband_devices is None:
        raise SkipCheck("InfiniBand devices unknown: the host probe did not look")
    if not host.infiniband_devices:
        raise SkipCheck("no InfiniBand/RoCE device: nothing to judge")
    if host.kernel_modules is None:
        raise SkipCheck("loaded kernel modules unknown: the host probe could not read them")
    if not ctx.facts.driver.gpus:
        raise SkipCheck("no GPU: GPUDirect RDMA has nothing to connect")
    mods = {m.strip().lower() for m in host.kernel_modules}
    # nvidia_peermem ships with the driver since R470; nv_peer_mem was the older Mellanox module
    if mods & {"nvidia_peermem", "nv_peer_mem"}:
        return []
    return [Finding(
        "interconnect.peermem/not-loaded", "INTERCONNECT", Severity.WARNING,
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
