"""Which link joins two GPUs and which topology an all-reduce runs on, from the run's facts (pure)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..domain.pci import bdf_key, bus_key
from ..model.facts import Facts, Gpu, PcieLink

if TYPE_CHECKING:
    from ..compat.queries import Compat


def gpu_index(facts: Facts, bus: Any) -> Optional[int]:
    key = bus_key(bus) if bus else None
    for i, g in enumerate(facts.driver.gpus):
        if key and bus_key(g.pci_bus_id) == key:
            return i
    return None


def nvlink_gen(compat: Compat, g: Optional[Gpu]) -> Optional[int]:
    try:
        spec = compat.gpu(g.name) if g is not None and g.name else None
    except Exception:
        spec = None
    gen = getattr(spec, "nvlink_gen", None)
    if gen:
        return int(gen)
    cc = (g.compute_capability if g is not None else None) or getattr(spec, "compute_capability", None) or ""
    return {"7.0": 2, "8.0": 3, "8.6": 3, "9.0": 4, "10.0": 5, "10.3": 5}.get(cc)


def link_kind(facts: Facts, compat: Compat, a: Optional[int], b: Optional[int]) -> Tuple[Optional[str], str]:
    """The p2p link row for GPUs a and b (driver indices): ("nvlink4", why), ("pcie", why) or (None, why)."""
    gpus = facts.driver.gpus
    if a is None or b is None or a >= len(gpus) or b >= len(gpus):
        return None, "the GPUs of this pair are not in the driver facts"
    m = facts.topology.gpu_matrix
    cell = m[a][b] if m and a < len(m) and b < len(m[a]) else None
    ga, gb = gpus[a], gpus[b]
    if cell and cell.upper().startswith("NV"):
        switch = any(lk.remote_device_type == "switch" for g in (ga, gb) for lk in (g.nvlinks or []))
        cc = ga.compute_capability or ""
        if not switch and cc == "9.0":
            return "nvlink_bridge_hopper", f"NVLink bridge ({cell})"
        if not switch and cc == "8.6":
            return "nvlink_bridge_ga102", f"NVLink bridge ({cell})"
        gen = nvlink_gen(compat, ga)
        return (f"nvlink{gen}" if gen else None), f"NVLink{gen or ' (generation unknown)'} ({cell}{', NVSwitch' if switch else ''})"
    if cell is None:
        return None, "the GPU topology matrix was not read"
    return "pcie", f"PCIe ({cell})"


def min_link(gpus: List[Gpu]) -> Tuple[Optional[int], Optional[int]]:
    gens = [g.pcie_gen_max for g in gpus if g.pcie_gen_max]
    widths = [g.pcie_width_max for g in gpus if g.pcie_width_max]
    return (min(gens) if len(gens) == len(gpus) else None), (min(widths) if len(widths) == len(gpus) else None)


def topology_kind(facts: Facts, compat: Compat, idx: List[int]) -> Tuple[Optional[str], str]:
    kinds = {link_kind(facts, compat, x, y)[0] for x in idx for y in idx if x != y}
    if not kinds or None in kinds:
        return None, "the GPU topology is unknown"
    if kinds == {"nvlink_bridge_hopper"} and len(idx) == 2:
        return "nvlink_bridge_hopper", "2 GPUs over an NVLink bridge"
    if len(kinds) == 1 and next(iter(kinds)) in ("nvlink3", "nvlink4", "nvlink5"):
        arch = {"nvlink3": "ampere", "nvlink4": "hopper", "nvlink5": "blackwell"}[next(iter(kinds))]
        return f"nvswitch_{arch}", f"{len(idx)} GPUs, NVLink between every pair ({arch})"
    if "pcie" in kinds:
        return "pcie", f"{len(idx)} GPUs, PCIe between some"
    return None, "a mixed NVLink topology"


# nvmlGpuP2PStatus_t words that say the pair has no peer access (NVML reference, nvmlDeviceGetP2PStatus); "unknown"
# says nothing
P2P_REFUSED = {"chipset_not_supported": "the chipset does not support it",
               "gpu_not_supported": "the GPU does not support it",
               "topology_not_supported": "the PCIe topology does not support it",
               "disabled_by_regkey": "disabled by a driver registry key",
               "not_supported": "not supported"}


@dataclass(frozen=True)
class PeerAccess:
    """Whether two GPUs (driver indices) reach each other's memory peer-to-peer, and who said so."""

    a: int
    b: int
    access: Optional[bool]  # None: nothing says
    path: Optional[str] = None  # the fact that says it: "driver.p2p[3].read", "pythons[0].torch.devices[1].peer_access"
    value: Any = None  # what that fact holds
    source: Optional[str] = None  # "CUDA (torch.cuda.can_device_access_peer)", "NVML nvmlDeviceGetP2PStatus", ...


def _torch_devices(facts: Facts) -> List[Tuple[str, int, Any]]:
    """(path, CUDA index, device) of every interpreter's torch devices that carry a PCI key and their peers."""
    out = []
    for pi, py in enumerate(facts.pythons or []):
        t = py.torch
        for di, d in enumerate((t.devices or []) if t is not None else []):
            if d.pci_bus_id and d.peer_access is not None:
                out.append((f"pythons[{pi}].torch.devices[{di}].peer_access", d.index, d))
    return out


def peer_access(facts: Facts, a: Optional[int], b: Optional[int]) -> PeerAccess:
    """Peer access from GPU ``a`` to GPU ``b`` (driver indices), from the first fact that says it: CUDA's answer in
    the interpreter (cudaDeviceCanAccessPeer: what the run gets), NVML's P2P read status, the topology's P2P
    matrix (`nvidia-smi topo -p2p r`)."""
    if a is None or b is None:
        return PeerAccess(a if a is not None else -1, b if b is not None else -1, None)
    gpus = facts.driver.gpus
    keys = {i: bus_key(g.pci_bus_id) for i, g in enumerate(gpus)}
    devs = _torch_devices(facts)
    mine = [(path, d) for path, _n, d in devs if keys.get(a) and bus_key(d.pci_bus_id) == keys.get(a)]
    peer = [n for _p, n, d in devs if keys.get(b) and bus_key(d.pci_bus_id) == keys.get(b)]
    if mine and peer:
        path, d = mine[0]
        return PeerAccess(a, b, peer[0] in d.peer_access, path, list(d.peer_access),
                          "CUDA (torch.cuda.can_device_access_peer)")
    for n, st in enumerate(facts.driver.p2p or []):
        if (st.a, st.b) == (a, b) and st.read is not None:
            access = True if st.read == "ok" else (False if st.read in P2P_REFUSED else None)
            if access is not None:
                return PeerAccess(a, b, access, f"driver.p2p[{n}].read", st.read,
                                  "NVML nvmlDeviceGetP2PStatus (read)")
    m = facts.topology.p2p_supported
    if m and a < len(m) and b < len(m[a]) and m[a][b] is not None:
        return PeerAccess(a, b, m[a][b], f"topology.p2p_supported[{a}][{b}]", m[a][b], "nvidia-smi topo -p2p r")
    return PeerAccess(a, b, None)


def peer_pairs(facts: Facts) -> List[PeerAccess]:
    """Peer access of every pair of the driver's GPUs (i < j), a pair refused either way counted as refused."""
    out = []
    n = max(len(facts.driver.gpus), len(facts.topology.p2p_supported or []))
    for i in range(n):
        for j in range(i + 1, n):
            ab, ba = peer_access(facts, i, j), peer_access(facts, j, i)
            if ba.access is False and ab.access is not False:
                ab = PeerAccess(i, j, False, ba.path, ba.value, ba.source)
            out.append(ab)
    return out


# `nvidia-smi topo -m` link types where two GPUs meet across the CPU (a host bridge, the NUMA node's fabric, the
# socket interconnect) rather than under a PCIe switch (PIX, PXB)
ACROSS_CPU = {"PHB": "through a PCIe host bridge", "NODE": "between host bridges of one NUMA node",
              "SYS": "across CPU sockets"}
NCCL_P2P_LEVEL = "NVIDIA/nccl src/graph/paths.cc (ncclTopoCheckP2p: P2P up to PXB by default)"


def pcie_path_off(facts: Facts, idx: List[int]) -> Optional[str]:
    """Why a PCIe all-reduce over GPUs ``idx`` has no link figure to be judged against, or None when it has one
    (every pair has peer access, or it is unknown, and meets under a PCIe switch).

    The p2p row is a peer copy's figure. NCCL moves the ring peer-to-peer only where the GPUs have peer access
    and, by default, meet no further than a PCIe switch (NCCL_P2P_LEVEL's default PXB; AMD hosts with two GPUs
    aside); otherwise it stages through host memory (its SHM transport), at what the CPU and its memory give.
    GeForce boards have no peer access over PCIe with NVIDIA's driver (tinygrad/open-gpu-kernel-modules exists
    to add it to the RTX 4090), so when nothing says, GeForce boards are not judged either."""
    gpus = facts.driver.gpus
    pairs = [(x, y) for n, x in enumerate(idx) for y in idx[n + 1:]]
    refused = []
    unknown = False
    for x, y in pairs:
        ab, ba = peer_access(facts, x, y), peer_access(facts, y, x)
        if ab.access is False or ba.access is False:
            p = ab if ab.access is False else ba
            refused.append(f"GPU{x}-GPU{y} ({p.source})")
        elif ab.access is None and ba.access is None:
            unknown = True
    through_host = ("so NCCL moves the all-reduce through host memory (its SHM transport) at what the CPU and its "
                    "memory give, not at a link's peer figure: measured, not judged")
    if refused:
        return "no peer access between " + ", ".join(refused[:4]) + (" ..." if len(refused) > 4 else "") + ", " + \
            through_host
    if unknown and all("geforce" in (gpus[i].name or "").lower() for i in idx if i < len(gpus)):
        return ("peer access unknown (not probed) between GeForce boards, which have none over PCIe with NVIDIA's "
                "driver; if so, " + through_host)
    m = facts.topology.gpu_matrix or []
    far = sorted({m[x][y].strip().upper() for x, y in pairs if x < len(m) and y < len(m[x])
                  and (m[x][y] or "").strip().upper() in ACROSS_CPU})
    if far:
        return ("GPUs that meet " + ", ".join(f"{ACROSS_CPU[k]} ({k})" for k in far) + ": NCCL uses PCIe "
                "peer-to-peer only up to a PCIe switch by default (" + NCCL_P2P_LEVEL + "), " + through_host)
    return None


@dataclass(frozen=True)
class PlatformLink:
    """The PCIe width the platform gives a GPU when it is fewer lanes than the card has, and what says so."""

    width: int
    why: str  # "its slot's port 0000:00:01.1 supports x8", "a VM (amazon): ..."
    path: str  # the fact: "topology.pcie_links[3].cap_width", "host.virtualization"
    value: Any
    card_width: Optional[int] = None  # the card's own (LnkCap, else NVML's) maximum


def gpu_pcie_link(facts: Facts, g: Optional[Gpu]) -> Tuple[Optional[int], Optional[PcieLink]]:
    """(index in topology.pcie_links, link) of GPU ``g``'s own function (sysfs / lspci), by its bus key."""
    key = bus_key(g.pci_bus_id) if g is not None else None
    found: Tuple[Optional[int], Optional[PcieLink]] = (None, None)
    for i, lk in enumerate(facts.topology.pcie_links or []):
        if key and bus_key(lk.bdf) == key:
            if found[1] is None or (lk.bdf or "").endswith(".0"):
                found = (i, lk)
    return found


def in_vm(facts: Facts, g: Optional[Gpu]) -> Optional[str]:
    """What says this GPU is passed into a virtual machine, or None: the host's hypervisor (systemd-detect-virt,
    DMI sys_vendor, the CPUID hypervisor bit: probes/host.py), NVML's passthrough virtualization mode, or the GPU on
    the guest's root bus 00 with no port above it (a discrete GPU on bare metal sits below a root port, on a bus
    it numbers; i440fx-style and cloud VMs put passed-through devices on bus 00)."""
    v = facts.host.virtualization if facts.host is not None else None
    if v:
        return f"host.virtualization={v}"
    if g is not None and g.virtualization_mode == "passthrough":
        return "virtualization_mode=passthrough"
    key = bus_key(g.pci_bus_id) if g is not None else None
    _i, lk = gpu_pcie_link(facts, g)
    if key and key.split(":")[1:2] == ["00"] and (lk is None or not lk.upstream_bdf):
        return f"on the root bus ({g.pci_bus_id}) with no PCIe port above it"  # type: ignore[union-attr]
    return None


def platform_link(facts: Facts, gi: Optional[int]) -> Optional[PlatformLink]:
    """The width the platform gives GPU ``gi`` (driver index) when below the card's own maximum, else None.

    - Bare metal: the slot's port (the device above the GPU in sysfs) has a LnkCap narrower than the GPU's
      (an x8 slot, a board's lane split): Linux's max_link_width of a device is its LnkCap's Maximum Link
      Width (drivers/pci/pci-sysfs.c, pcie_get_width_cap). NVML's max width already is min(card, system bus)
      ("for a device with a 16x PCIe bus width attached to a 8x PCIe system bus this function will report a max
      link width of 8": nvmlDeviceGetMaxPcieLinkWidth), so it is read when no port is visible.
    - A VM: the guest sees a virtual bus, never the physical slot, so the width the link runs at is what the
      provider's wiring gives (a T4 on AWS g4dn runs x8 of its x16: tests/fixtures/nvidia-smi-xml/tesla-t4).
    A link below what its slot supports stays a fault (pcie.link/width); nothing here excuses it."""
    gpus = facts.driver.gpus
    if gi is None or gi >= len(gpus):
        return None
    g = gpus[gi]
    li, lk = gpu_pcie_link(facts, g)
    card = (lk.cap_width if lk is not None else None) or g.pcie_width_max
    if not card:
        return None
    links = facts.topology.pcie_links or []
    by_bdf = {bdf_key(x.bdf) or x.bdf: (n, x) for n, x in enumerate(links)}
    up = by_bdf.get(bdf_key(lk.upstream_bdf) or "") if lk is not None and lk.upstream_bdf else None
    if up is not None and up[1].cap_width and up[1].cap_width < card:
        n, port = up
        return PlatformLink(port.cap_width, f"its slot's port {port.bdf} supports x{port.cap_width} (LnkCap)",
                            f"topology.pcie_links[{n}].cap_width", port.cap_width, card)
    vm = in_vm(facts, g)
    if vm:
        seen = g.pcie_width_under_load or g.pcie_width_current or (lk.sta_width if lk is not None else None)
        if seen and seen < card:
            path = ("host.virtualization" if vm.startswith("host.") else
                    f"driver.gpus[{gi}].virtualization_mode" if vm.startswith("virtualization_mode")
                    else f"driver.gpus[{gi}].pci_bus_id")
            value = (facts.host.virtualization if vm.startswith("host.") else
                     g.virtualization_mode if vm.startswith("virtualization_mode") else g.pci_bus_id)
            return PlatformLink(seen, f"a virtual machine ({vm}): the guest sees the provider's wiring, not the "
                                      "physical slot", path, value, card)
    return None
