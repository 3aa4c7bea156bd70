"""Paste check: traffic between GPUs going wrong, by the reporter's account (issue 42, round 12).

diagnose.p2p-hang judges a collective that hangs, with the GPU topology. The same broken PCIe peer-to-peer (the
IOMMU translating, or PCIe ACS redirecting GPU-to-GPU writes to the root complex: NCCL's troubleshooting guide,
"PCI Access Control Services") is often told by its other symptoms, without a topology matrix
(readers/p2p_said.py): a tensor copied from one GPU to another arriving as zeros while a copy through the CPU is
right, several GPUs slower per batch than one, multi-GPU training failing where one GPU works, or the reporter
naming the IOMMU/ACS or saying NCCL_P2P_DISABLE=1 makes it work. INTERCONNECT as a warning -- medium confidence for
a corrupted peer copy or the mechanism named, low for slowness or a failure with several GPUs, which have other
causes too -- with the commands that settle it.
"""

from __future__ import annotations

from typing import Any, List

from ..model.findings import Evidence, Finding, Fix
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

P2P_SAID = Findings("diagnose.p2p-said", "INTERCONNECT", kinds=("p2p-suspected",))

NCCL_TROUBLESHOOTING = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"

_SYMPTOM = {
    "peer-copy-wrong": ("a copy between GPUs corrupts the data", "medium"),
    "p2p-named": ("the reporter names the IOMMU/ACS or peer-to-peer beside a multi-GPU failure", "medium"),
    "multi-gpu-slower": ("several GPUs are slower than one", "low"),
    "multi-gpu-fails": ("the run fails with several GPUs (data parallel)", "low"),
}

_SETTLE = ["nvidia-smi topo -m",
           "sudo lspci -vvv | grep -i acsctl   # SrcValid+ on a bridge above the GPUs: ACS is on",
           "cat /proc/cmdline; sudo dmesg | grep -i -e iommu -e AMD-Vi -e DMAR",
           "# rerun the same job with NCCL_P2P_DISABLE=1 (or CUDA's p2pBandwidthLatencyTest / simpleP2P): "
           "if it then works, peer-to-peer is the problem"]


@check(P2P_SAID, "No report of GPU-to-GPU traffic going wrong (IOMMU/ACS)", applies=PASTE_ONLY)
def check_p2p_said(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Any = paste.provenance or {}
    said = prov.get("paste.p2p_said")
    if not said:
        raise SkipCheck("the report does not say traffic between GPUs goes wrong")
    if prov.get("paste.collective_hang") and ctx.facts.topology and ctx.facts.topology.gpu_matrix:
        raise SkipCheck("a collective hang with the GPU topology: diagnose.p2p-hang judges it",
                        not_applicable="a hang and a topology matrix in the paste")
    kind = str((prov.get("paste.p2p_said.kind") or {}).get("value") or "")
    what, confidence = _SYMPTOM.get(kind, ("traffic between GPUs goes wrong", "low"))
    return [P2P_SAID.warning(
        "p2p-suspected",
        f"By the reporter's account {what} (“{said.get('value')}”): PCIe peer-to-peer between the GPUs may be "
        "broken by the IOMMU or PCIe ACS",
        detail="GPUs exchange data directly over PCIe (peer-to-peer) in DataParallel copies, NCCL collectives and "
               "tensor moves between devices. With the IOMMU translating (AMD-Vi, VT-d) or ACS on the PCIe bridges "
               "above the GPUs, those writes are redirected to the root complex: they are dropped (data arrives as "
               "zeros), crawl, or never complete (a hang), while each GPU alone works. Words, not a topology or "
               "the ACS state: the commands below settle it.",
        evidence=[Evidence("paste.p2p_said", said.get("value"), source=said.get("reader"))]
        + [Evidence("paste.settle", c) for c in _SETTLE[:2]],
        fix=Fix("Put the IOMMU in passthrough (iommu=pt, or AMD-Vi/VT-d off in the BIOS) or disable PCIe ACS on the "
                "bridges above the GPUs; NCCL_P2P_DISABLE=1 is the slower stop-gap",
                # (the settling commands are the reply's asks; the fix keeps what changes the machine, so a thin
                # paste's reply stays on one screen)
                [_SETTLE[2],
                 "# kernel command line: amd_iommu=on iommu=pt (Intel: intel_iommu=on iommu=pt), then reboot",
                 "export NCCL_P2P_DISABLE=1   # stop-gap: if the job then works, peer-to-peer is the problem"],
                NCCL_TROUBLESHOOTING),
        confidence=confidence)]
