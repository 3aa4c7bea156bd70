"""Multi-GPU interconnect checks: NVLink links, PCIe-only GPU pairs and P2P, fabric manager on NVSwitch systems."""

from __future__ import annotations

from typing import List, Tuple

from ..bench.links import peer_pairs
from ..domain.gpus import gpu_label
from ..model.facts import Driver, Gpu, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ._fabric import fabric_health
from ._gpus import gpu_path, require_gpus
from ._nvlink import expected_links, fabric_member, gpu_spec, nvlink_peer, pcie_board, rack_scale, sxm_name
from .base import (
    Cases,
    Check,
    CheckContext,
    Findings,
    SkipCheck,
    no_gpu_here,
    registrar,
    require_section,
    section_reason,
)

CHECKS: List[Check] = []
check = registrar(CHECKS)


# Which inactive links are a fault. NVML reports every NVLink a GPU has, wired or not: on PCIe boards
# (A100/H100 PCIe, RTX A6000, RTX 3090) the links only connect through an optional NVLink bridge, so without
# one all of them read inactive (nvmlDeviceGetNvLinkState NVML_FEATURE_DISABLED; `nvidia-smi nvlink -s`
# "<inactive>"). The rule, from what NVML gives per link:
# - all links inactive on a board whose links are wired on the baseboard (SXM/HGX, compat nvlink_links) is a
#   fault when something says the GPU belongs to an NVLink fabric: NVML fabric info with a state other than
#   not_supported, a visible NVSwitch, or another visible GPU whose link ends at it;
# - all links inactive on such a board with none of those is one GPU of an HGX board given to a VM or
#   partition on its own (the 1xH100/H200 cloud VM): NVLink is not configured for it, a note, not a fault;
# - all links inactive on a PCIe board (or a model not in compat) is "no bridge fitted": a note, not a fault;
# - some links up and some down is a fault wherever it is: a bridge or baseboard with dead links (or one
#   bridge of a set missing: A100 PCIe pairs use three bridges, NVIDIA A100 PCIe product brief PB-10137);
# - MIG mode: NVLink is not used by MIG instances (NVIDIA MIG User Guide, "GPU to GPU P2P (PCIe or NVLink)
#   is not supported"), so the links' state is not judged.
NVLINK = Findings("interconnect.nvlink", "INTERCONNECT",
                  kinds=("fewer-links", "inactive", "mig", "no-bridge", "not-configured"))


@check(NVLINK, "NVLink links are all up")
def nvlink(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "NVLink state")
    if all(g.nvlinks is None for g in gpus):
        raise SkipCheck("NVLink state unknown: the probe did not read NVLink links")
    down, fewer = Cases(), Cases()
    no_bridge: List[Gpu] = []
    alone: List[Gpu] = []
    mig: List[Gpu] = []
    d = ctx.facts.driver
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
        member = fabric_member(d, g) if inactive and not active else None
        peer = nvlink_peer(gpus, g) if inactive and not active else None
        if peer is not None:
            member = f"GPU {peer.index} has an active NVLink to it"
        if not want and (member or sxm_name(g)):
            want, src = len(links), f"{g.name}: SXM/HGX part" + (f", {member}" if member else "")
        if inactive and not active and not want and pcie_board(ctx.compat, g):
            no_bridge.append(g)
        elif inactive and not active and not member:
            alone.append(g)  # wired links, but nothing says the GPU is on a fabric: a 1-GPU VM or partition
        elif inactive:
            all_down = not active
            what = ("all NVLink links inactive" if all_down
                    else f"{len(inactive)} of {len(links)} NVLink links inactive "
                         f"(links {', '.join(str(lk.link) for lk in inactive)})")
            down.add(f"{gpu_label(g)}: {what}",
                     [Evidence(gpu_path(g, "nvlinks"), f"{len(active)} active of {len(links)}",
                               expected=f"{want} active" if want else "all active", source=src)]
                     + ([Evidence(gpu_path(g, "fabric_state"), g.fabric_state, source=member)] if member else []))
        elif want and len(active) < want:
            fewer.add(f"{gpu_label(g)}: {len(active)} NVLink links, the model has {want}",
                      [Evidence(gpu_path(g, "nvlinks"), len(active), expected=str(want), source=src)])
    wired = [g for g in gpus if g.nvlinks and (expected_links(ctx.compat, g)[0] or sxm_name(g))]
    if alone and len(wired) > 1:
        # several such GPUs in one VM or machine are meant to reach each other over NVLink
        for g in alone:
            down.add(f"{gpu_label(g)}: all NVLink links inactive",
                     [Evidence(gpu_path(g, "nvlinks"), f"0 active of {len(g.nvlinks or [])}", expected="all active",
                               source=f"{len(wired)} GPUs with wired NVLink visible here")])
        alone = []
    out: List[Finding] = []
    out += down.report(
        NVLINK.error, "inactive",
        "NVLink links down: {}",
        detail="GPU-to-GPU traffic (all-reduce, tensor parallelism) falls back to fewer links or PCIe, "
               "many times slower; on NVSwitch systems CUDA may refuse to start. On PCIe boards, a bridge "
               "with some links down is loose or faulty, or one bridge of a set is missing.",
        fix=Fix("Reset the GPUs (or reboot) and check the fabric manager and bridges; if links stay down, "
                "report the GPU/baseboard to the provider",
                commands=["nvidia-smi nvlink --status", "systemctl status nvidia-fabricmanager",
                          "sudo nvidia-smi -r"]),
    )
    if no_bridge:
        out.append(NVLINK.info(
            "no-bridge",
            f"No NVLink bridge on {', '.join(gpu_label(g) for g in no_bridge)}: its NVLink links are all "
            "inactive, so GPU-to-GPU traffic uses PCIe",
            detail="NVLink on PCIe boards needs an NVLink bridge between GPU pairs; without one every link "
                   "reads inactive, which is the normal state of a bridge-less card, not a fault.",
            evidence=[Evidence(gpu_path(g, "nvlinks"), f"0 active of {len(g.nvlinks or [])}",
                               expected="a bridge, if you want NVLink") for g in no_bridge],
            fix=Fix("Fit NVLink bridges if GPU-to-GPU bandwidth matters; nothing to do otherwise",
                    commands=["nvidia-smi nvlink --status", "nvidia-smi topo -m"]),
        ))
    if alone:
        out.append(NVLINK.info(
            "not-configured",
            "NVLink is not configured for this VM/partition: "
            + ", ".join(f"{gpu_label(g)} ({len(g.nvlinks or [])} links inactive)" for g in alone),
            detail="The GPU is an SXM/HGX part whose NVLink links are wired to a baseboard, but no NVSwitch, "
                   "no NVLink peer GPU and no NVSwitch fabric registration are visible here: this is one GPU of a "
                   "board given to a VM or partition on its own, which is how single-GPU cloud instances are "
                   "sold. Single-GPU work is unaffected; GPUs in other VMs are reached over the network, "
                   "not NVLink. On a multi-GPU instance of this model, all links down would be a fault.",
            evidence=[Evidence(gpu_path(g, "nvlinks"), f"0 active of {len(g.nvlinks or [])}",
                               source=f"fabric state {g.fabric_state or 'unknown'}; "
                                      f"NVSwitches {d.nvswitch_count if d.nvswitch_count is not None else 'unknown'}")
                      for g in alone],
            fix=Fix("Nothing to fix; for GPU-to-GPU NVLink, rent a multi-GPU (HGX) instance",
                    commands=["nvidia-smi nvlink --status", "nvidia-smi topo -m"]),
        ))
    if mig:
        out.append(NVLINK.info(
            "mig",
            "NVLink links inactive on " + ", ".join(gpu_label(g) for g in mig) + " with MIG on: not judged "
            "(MIG instances do not use NVLink); check again with MIG off",
            evidence=[Evidence(gpu_path(g, "nvlinks"), f"{sum(1 for lk in g.nvlinks or [] if lk.active)} active of "
                               f"{len(g.nvlinks or [])}", source="MIG mode on") for g in mig],
            fix=Fix("With MIG off, check the links", commands=["nvidia-smi nvlink --status"]),
        ))
    out += fewer.report(
        NVLINK.warning, "fewer-links",
        "Fewer NVLink links than the model has: {}",
        fix=Fix("Check NVLink status and report missing links to the provider",
                commands=["nvidia-smi nvlink --status"]),
    )
    return out


_PCIE_PATHS = {"SYS": "across CPU sockets (SYS)", "NODE": "between PCIe host bridges in one NUMA node (NODE)",
               "PHB": "through a PCIe host bridge (PHB)"}


TOPOLOGY = Findings("interconnect.topology", "INTERCONNECT", kinds=("p2p-disabled", "pcie-path"))


@check(TOPOLOGY, "GPU pairs use NVLink and P2P where the model has them")
def topology(ctx: CheckContext) -> List[Finding]:
    topo = ctx.facts.topology
    matrix = topo.gpu_matrix
    pairs = peer_pairs(ctx.facts)
    if not matrix and not any(p.access is not None for p in pairs):
        raise SkipCheck(section_reason(topo, "GPU topology matrix"), not_applicable=no_gpu_here(ctx.facts))
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
        out.append(TOPOLOGY.warning(
            "pcie-path",
            "GPU pairs talk over PCIe although the model has NVLink: "
            + "; ".join(f"GPU{i}-GPU{j} {_PCIE_PATHS[k]}" for i, j, k in slow),
            detail="NCCL then moves data through host bridges or the CPU interconnect instead of NVLink.",
            evidence=[Evidence(f"topology.gpu_matrix[{i}][{j}]", k, expected="NV<n>") for i, j, k in slow],
            fix=Fix("Check NVLink state and the fabric manager; report missing NVLink paths to the provider",
                    commands=["nvidia-smi topo -m", "nvidia-smi nvlink --status"]),
        ))
    # peer access as CUDA, NVML (nvmlDeviceGetP2PStatus) or the topology's P2P matrix says it (bench.links)
    off = [p for p in pairs if p.access is False]
    if off:
        dc = [g for g in gpus if getattr(gpu_spec(ctx.compat, g.name), "datacenter", None)]
        out.append(TOPOLOGY(
            "p2p-disabled", Severity.WARNING if dc else Severity.INFO,
            "Peer-to-peer access unavailable between " + ", ".join(f"GPU{p.a}-GPU{p.b}" for p in off),
            detail="Without P2P, GPU-to-GPU copies bounce through host memory. GeForce cards do not support "
                   "P2P over PCIe; on data-center GPUs it points at IOMMU/ACS settings or a virtualised host.",
            evidence=list(dict.fromkeys(Evidence(p.path or "", p.value, expected="peer access", source=p.source)
                                        for p in off)),
            fix=Fix("On data-center GPUs, disable PCIe ACS / IOMMU translation for the GPUs (BIOS or "
                    "iommu=pt) and verify with the CUDA p2pBandwidthLatencyTest sample",
                    commands=["nvidia-smi topo -p2p r"]),
        ))
    return out


_FM_URL = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"


def _fabric_gpus(d) -> List[Gpu]:
    """GPUs whose NVML fabric info says they sit on an NVSwitch fabric (state other than not_supported)."""
    return [g for g in d.gpus if g.fabric_state and g.fabric_state != "not_supported"]


FABRIC_MANAGER = Findings("interconnect.fabric-manager", "INTERCONNECT",
                          kinds=("degraded", "not-ready", "not-running", "unhealthy", "unknown"))

@check(FABRIC_MANAGER, "Fabric manager runs on NVSwitch systems")
def fabric_manager(ctx: CheckContext) -> List[Finding]:
    d = require_section(ctx.facts.driver, "NVSwitch count")
    on_fabric = _fabric_gpus(d)
    if on_fabric:
        # NVML GPU fabric info (Hopper and later) is the GPU's own word on its NVSwitch registration, read
        # through the driver, so it holds inside containers too: COMPLETED with status SUCCESS means the
        # fabric manager configured it (NVML reference, nvmlGpuFabricInfo_t; Fabric Manager User Guide)
        bad = [g for g in on_fabric if g.fabric_state != "completed" or (g.fabric_status or "SUCCESS") != "SUCCESS"]
        if not bad:
            return fabric_health(FABRIC_MANAGER, _FM_URL, on_fabric)
        pending = [g for g in bad if g.fabric_state in ("not_started", "in_progress")]
        what = ("the fabric manager has not registered them" if pending
                else "their fabric registration failed")
        if all(rack_scale(g) for g in bad):
            return [_rack_not_ready(d, bad, what)]
        return [FABRIC_MANAGER.error(
            "not-ready",
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
        return [FABRIC_MANAGER.info(
            "unknown",
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
    return [FABRIC_MANAGER.error(
        "not-running",
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




def _rack_not_ready(d: Driver, bad: List[Gpu], what: str) -> Finding:
    """GB200/GB300 (and GH200 NVL32) compute trays: the NVLink switches sit in switch trays, and the fabric is
    managed there (NVLink Switch trays run the fabric manager, NVIDIA Fabric Manager User Guide, multi-node
    NVLink), not on this node: telling the user to start nvidia-fabricmanager here would be wrong."""
    return FABRIC_MANAGER.error(
        "not-ready",
        f"NVLink fabric not ready on {len(bad)} of {len(d.gpus)} GPU(s): {what} ("
        + "; ".join(f"GPU {g.index}: {g.fabric_state}" for g in bad) + ")",
        detail="On rack-scale NVLink systems (GB200/GB300 NVL72) the fabric is managed from the NVLink switch "
               "trays, not this compute tray; until the rack's fabric has registered these GPUs, multi-node NVLink "
               "(and CUDA on some configurations) is unavailable.",
        evidence=[Evidence(gpu_path(g, "fabric_state"), g.fabric_state, expected="completed",
                           source="NVML nvmlDeviceGetGpuFabricInfo") for g in bad],
        fix=Fix("Ask the cluster operator to check the rack's NVLink fabric (switch-tray fabric manager / NMX) and "
                "the IMEX service for this node; nothing to start on this compute tray",
                commands=["nvidia-smi -q | grep -A 6 -i fabric", "systemctl status nvidia-imex"],
                url=_FM_URL),
    )
