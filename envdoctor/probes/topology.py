"""The topology section: the `nvidia-smi topo -m` matrix, the PCIe links above each GPU, NUMA locality, NVIDIA PCI ids."""

from __future__ import annotations

import dataclasses

from envdoctor.model.facts import ProbeStatus, Topology
from envdoctor.probes.driver import probe_topology
from envdoctor.probes.numa import probe_gpu_locality
from envdoctor.probes.pcie import nvidia_pci_devices, probe_pcie_links
from envdoctor.probes.registry import ProbeContext, probe


@probe("topology", failed=lambda reason: Topology(status=ProbeStatus.FAILED, reason=reason))
def collect_topology(ctx: ProbeContext) -> Topology:
    # the section's status and reason are the matrix's; the sysfs parts have none of their own in the facts
    topo = probe_topology(ctx.runner, root=ctx.fs)
    _, _, locality = probe_gpu_locality(ctx.fs)
    return dataclasses.replace(topo, pcie_links=list(probe_pcie_links(ctx.runner, root=ctx.fs)),
                               gpu_locality=locality, nvidia_pci_devices=nvidia_pci_devices(ctx.fs))
