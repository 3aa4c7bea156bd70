"""PCIe link checks: GPU links narrower or slower than the GPU and slot support, and which bridge is to blame."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..bench.links import platform_link
from ..domain.gpus import gpu_label
from ..domain.pci import bdf_key, bus_key, is_nvidia_gpu_description
from ..model.facts import Gpu, PcieLink, ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ..remedies import pcie_link_status
from ._gpus import given_gpus_only
from .base import Cases, Check, CheckContext, Findings, SkipCheck, no_gpu_here, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


# PCIe generation by LnkCap/LnkSta speed (PCI-SIG: 2.5, 5, 8, 16, 32, 64 GT/s for Gen1..Gen6)
_GEN_BY_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

# two short queries rather than one: the five fields in one --query-gpu word are wider than the 100-column
# report, and a shell word is never cut
_QUERY_GEN = "nvidia-smi --query-gpu=index,pcie.link.gen.current,pcie.link.gen.max --format=csv"
_QUERY_WIDTH = "nvidia-smi --query-gpu=index,pcie.link.width.current,pcie.link.width.max --format=csv"


def _gen(speed: Optional[float]) -> Optional[int]:
    if speed is None:
        return None
    return _GEN_BY_SPEED.get(round(speed, 1))


def _is_gpu_link(link: PcieLink) -> bool:
    return is_nvidia_gpu_description(link.description)


def _link_text(link: PcieLink) -> str:
    name = f"{link.bdf} ({link.description})" if link.description else link.bdf
    return name


LINK = Findings("pcie.link", "PCIE_LINK_DEGRADED",
                kinds=("gen", "gen-idle", "other-device", "platform-width", "slot-gen", "width"))


@check(LINK, "GPU PCIe links run at full width and speed")
def link(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    gpus = list(facts.driver.gpus) if facts.driver.status == ProbeStatus.OK else []
    links = list(facts.topology.pcie_links)
    have_nvml = any(g.pcie_width_current is not None or g.pcie_gen_current is not None for g in gpus)
    if not have_nvml and not links:
        raise SkipCheck("PCIe link state unknown: neither the driver nor lspci/sysfs reported GPU links"
                        + (f" (topology probe {facts.topology.status}: {facts.topology.reason})"
                           if facts.topology.reason else ""), not_applicable=no_gpu_here(facts))
    # bridges by their full address (two root ports of one device differ only by function); GPUs by their bus
    # key, which NVML, lspci and a torch/Xid id without the function all reduce to (envdoctor.domain.pci)
    by_bdf: Dict[str, PcieLink] = {bdf_key(lk.bdf) or lk.bdf: lk for lk in links}
    gpu_link: Dict[str, PcieLink] = {}
    for lk in links:
        k = bus_key(lk.bdf)
        # one link per device: the GPU function wins over the board's .1 audio function
        if k and (k not in gpu_link or (_is_gpu_link(lk) and not _is_gpu_link(gpu_link[k]))):
            gpu_link[k] = lk
    gpu_by_bus: Dict[str, Gpu] = {}
    for g in gpus:
        b = bus_key(g.pci_bus_id)
        if b:
            gpu_by_bus[b] = g

    # every GPU we know of: (label, Gpu or None, its lspci link or None)
    subjects: List[Tuple[str, Optional[Gpu], Optional[PcieLink]]] = []
    for g in gpus:
        subjects.append((gpu_label(g), g, gpu_link.get(bus_key(g.pci_bus_id) or "")))
    for lk in by_bdf.values():
        if _is_gpu_link(lk) and bus_key(lk.bdf) not in gpu_by_bus and not given_gpus_only(facts):
            subjects.append((f"GPU at {lk.bdf}", None, lk))

    width_bad, gen_load, gen_idle, slot_gen = Cases(), Cases(), Cases(), Cases()  # keys: upstream bus ids
    platform = Cases()
    for label, g, lk in subjects:
        gi = g.index if g is not None else None
        path = f"driver.gpus[{gi}]" if g is not None else f"topology.pcie_links[{links.index(lk) if lk else '?'}]"
        lpath = f"topology.pcie_links[{links.index(lk)}]" if lk is not None else None
        # width: NVML's max is already min(GPU, slot), so current < max is lost bandwidth at any load
        cur_w = g.pcie_width_current if g is not None else None
        max_w = g.pcie_width_max if g is not None else None
        ev: List[Evidence] = []
        text = None
        load_w = g.pcie_width_under_load if g is not None else None
        if load_w and max_w and load_w < max_w:
            ev.append(Evidence(f"{path}.pcie_width_under_load", load_w, expected=f"x{max_w} (pcie_width_max)"))
            text = f"x{load_w} of x{max_w} under load"
        elif cur_w and max_w and cur_w < max_w and not (load_w and load_w >= max_w):
            ev.append(Evidence(f"{path}.pcie_width_current", cur_w, expected=f"x{max_w} (pcie_width_max)"))
            text = f"x{cur_w} of x{max_w}"
        if lk is not None and lk.sta_width and lk.cap_width and lk.sta_width < lk.cap_width:
            ev.append(Evidence(f"{lpath}.sta_width", lk.sta_width, expected=f"x{lk.cap_width} (LnkCap)",
                               source="lspci LnkSta" + (" (downgraded)" if lk.downgraded else "")))
            text = text or f"x{lk.sta_width} of x{lk.cap_width}"
        bridge = _narrower_upstream(lk, by_bdf, (lk.cap_width if lk else None) or max_w)
        own = bool(text)
        if bridge is not None:
            bl, bpath = bridge, f"topology.pcie_links[{links.index(bridge)}]"
            ev.append(Evidence(f"{bpath}.sta_width", bl.sta_width,
                               expected=f"x{(lk.cap_width if lk else None) or max_w} like the GPU",
                               source=f"upstream bridge/switch {_link_text(bl)}"))
            text = text or f"behind a x{bl.sta_width} upstream link"
        # what the platform gives (a narrower slot, a VM's virtual bus): a link that runs at it is wired so,
        # not degraded (bench.links.platform_link); below it, it is a fault as before
        plat = platform_link(facts, gpus.index(g)) if g is not None else None
        seen_w = load_w or cur_w or (lk.sta_width if lk is not None else None)
        as_built = bridge is not None and not own and bridge.cap_width and bridge.sta_width >= bridge.cap_width
        if text and ((plat is not None and seen_w and seen_w >= plat.width) or as_built):
            if plat is not None:
                platform.add(f"{label}: x{seen_w} of the card's x{plat.card_width}, {plat.why}",
                             ev + [Evidence(plat.path, plat.value, expected=f"x{plat.card_width} for the card's "
                                            "full bandwidth", source="what the platform gives this GPU")])
            else:
                platform.add(f"{label}: behind {_link_text(bridge)}, whose own link is x{bridge.cap_width} at most "
                             "(LnkCap)", ev)
        elif text:
            where = f"; the narrower link is the upstream bridge/switch {_link_text(bridge)} at x{bridge.sta_width}" \
                if bridge is not None else ""
            width_bad.add(f"{label}: {text}{where}", ev, bridge.bdf if bridge else None)

        # generation: links drop to Gen1 at idle to save power (ASPM/driver power management), so a low
        # generation only counts when the reading was taken under load
        cur_g = g.pcie_gen_current if g is not None else _gen(lk.sta_speed_gts if lk else None)
        max_g = g.pcie_gen_max if g is not None else _gen(lk.cap_speed_gts if lk else None)
        if g is not None and lk is not None and (cur_g is None or max_g is None):
            cur_g, max_g = _gen(lk.sta_speed_gts), _gen(lk.cap_speed_gts)
        load_g = g.pcie_gen_under_load if g is not None else None
        if load_g and max_g:
            # read by --load-pcie while host->device copies ran: the link had every reason to train up
            if load_g < max_g:
                gen_load.add(f"{label}: Gen{load_g} of Gen{max_g} under load (--load-pcie)",
                             [Evidence(f"{path}.pcie_gen_under_load", load_g, expected=f"Gen{max_g}")])
        elif cur_g and max_g and cur_g < max_g:
            gev = [Evidence(f"{path}.pcie_gen_current" if g is not None else f"{lpath}.sta_speed_gts", cur_g,
                            expected=f"Gen{max_g}")]
            if g is not None and g.under_load:
                gen_load.add(f"{label}: Gen{cur_g} of Gen{max_g} under load", gev)
            else:
                gen_idle.add(f"{label}: Gen{cur_g} of Gen{max_g}", gev)
        if g is not None and g.pcie_gen_max and g.pcie_gen_device_max and g.pcie_gen_max < g.pcie_gen_device_max:
            slot_gen.add(f"{label}: slot/platform Gen{g.pcie_gen_max}, GPU Gen{g.pcie_gen_device_max}",
                         [Evidence(f"{path}.pcie_gen_max", g.pcie_gen_max,
                                   expected=f"Gen{g.pcie_gen_device_max} (pcie_gen_device_max)")])

    out: List[Finding] = []
    out += width_bad.report(
        LINK.warning, "width",
        "GPU PCIe link narrower than it should be: {}",
        detail="Each missing lane is lost host<->GPU bandwidth at any load: x8 halves data loading and "
               "offload copies. Typical causes: a chipset-attached or x8 slot, a riser, a half-seated card, "
               "BIOS lane bifurcation.",
        fix=Fix("Move the GPU to a CPU-attached x16 slot or reseat it (check risers and BIOS bifurcation); "
                "on a rented machine, report it to the provider",
                commands=[_QUERY_WIDTH] + [pcie_link_status(b) for b in sorted(set(width_bad.keys))]),
    )
    out += platform.report(
        LINK.info, "platform-width",
        "The platform gives GPU links fewer lanes than the cards have: {}",
        detail="The link runs at what its slot (or the VM's wiring) gives, so it is not degraded; host<->GPU "
               "copies get that width's bandwidth (x8: half of x16), and the bench judges them against it. If the "
               "offer promised x16, ask the provider.",
    )
    out += gen_load.report(
        LINK.warning, "gen",
        "GPU PCIe link below its generation under load: {}",
        detail="Each generation step halves host<->GPU bandwidth.",
        fix=Fix("Check the BIOS PCIe speed setting, risers and the slot; report it to the provider",
                commands=[_QUERY_GEN]),
    )
    out += gen_idle.report(
        LINK.info, "gen-idle",
        "PCIe generation below max while idle (links slow down at idle to save power): {}; idle, not verified",
        fix=Fix("Re-check under load: `envdoctor --load-pcie` copies host->GPU for ~2 s and reads the links",
                commands=["envdoctor --load-pcie --only pcie.link", _QUERY_GEN + " -l 1"]),
    )
    out += slot_gen.report(
        LINK.info, "slot-gen",
        "The slot or platform supports a lower PCIe generation than the GPU: {}",
    )
    others = [(i, lk) for i, lk in enumerate(links)
              if not _is_gpu_link(lk) and (bus_key(lk.bdf) or "") not in gpu_by_bus
              and lk.sta_width and lk.cap_width and lk.sta_width < lk.cap_width
              and not any(e.source and lk.bdf in e.source for e in width_bad.evidence)]
    if others:
        out.append(LINK.info(
            "other-device",
            "Other PCIe devices run narrower than their capability: "
            + "; ".join(f"{_link_text(lk)} x{lk.sta_width} of x{lk.cap_width}" for _, lk in others),
            detail="Not a GPU link, but an NVMe drive or NIC at reduced width can slow data loading.",
            evidence=[Evidence(f"topology.pcie_links[{i}].sta_width", lk.sta_width,
                               expected=f"x{lk.cap_width} (LnkCap)") for i, lk in others],
        ))
    return out


def _narrower_upstream(lk: Optional[PcieLink], by_bdf: Dict[str, PcieLink],
                       gpu_width: Optional[int]) -> Optional[PcieLink]:
    """The first bridge/switch above the GPU whose running width is below the GPU's capability."""
    if lk is None or not gpu_width:
        return None
    seen = set()
    up = bdf_key(lk.upstream_bdf)
    while up and up not in seen and up in by_bdf:
        seen.add(up)
        bridge = by_bdf[up]
        if bridge.sta_width and bridge.sta_width < gpu_width:
            return bridge
        up = bdf_key(bridge.upstream_bdf)
    return None
