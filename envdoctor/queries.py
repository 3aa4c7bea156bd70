"""Fact queries: readings of the facts (with the compat tables) that checks, remedies and the services all ask.

They sit below checks and remedies (docs/architecture.md "Layers"): a remedy plans a fix from the same answers
the check that found the problem used, without importing the checks. Pure: no file, process or socket.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .domain.gpus import TYPED_NAME_PREFIXES, gpu_label
from .domain.pci import is_nvidia_gpu_description
from .domain.versions import major_minor, version_ge
from .model.facts import Driver, Facts, Gpu, GpuProcess, MigDevice

if TYPE_CHECKING:
    from .compat import Compat, TorchRelease


def nvidia_hardware(facts: Facts) -> Optional[bool]:
    """Is there NVIDIA hardware on this machine's PCI bus? None when nothing says (a snapshot without sysfs)."""
    devices = facts.topology.nvidia_pci_devices
    if devices or facts.driver.gpus:
        return True
    if any(is_nvidia_gpu_description(link.description) for link in facts.topology.pcie_links):
        return True
    return False if devices == [] else None


# what a person writes around a GPU's name in a paste: a count before it ("2 Quadro K4200"), "GPU(s)" or "card(s)"
# after it ("Quadro K4200 GPU cards")
_COUNT = re.compile(r"^\d+\s*[x\u00d7]?\s+")
_TRAILING_WORDS = re.compile(r"(?:\s+(?:GPUs?|cards?|graphics cards?))+$", re.I)


def typed_gpu_cc(compat: Compat, name: str) -> Optional[str]:
    """The compute capability a GPU name determines, also as a person types it: the count and trailing words
    dropped, then the vendor words they leave out tried in turn (TYPED_NAME_PREFIXES: "RTX 5090" is the table's
    "GeForce RTX 5090"), as `--target-gpu` resolves a typed name; None when no reading determines one."""
    cc = compat.gpu_compute_capability(name)
    if cc:
        return cc
    bare = _TRAILING_WORDS.sub("", _COUNT.sub("", name.strip()))
    for prefix in TYPED_NAME_PREFIXES:
        if prefix or bare != name.strip():
            cc = compat.gpu_compute_capability(prefix + bare)
            if cc:
                return cc
    return None


def gpu_capabilities(facts: Facts, compat: Compat) -> List[Tuple[str, Optional[str], str]]:
    """(label, compute capability or None, fact path) per GPU, from the driver, torch or the GPU table."""
    out = []
    for g in facts.driver.gpus:
        cc = g.compute_capability
        path = f"driver.gpus[{g.index}].compute_capability"
        if not cc and g.name:
            # one compute capability even when the name fits several cards (a cut-short "RTX 2080 ...")
            cc = typed_gpu_cc(compat, g.name)
            if cc:
                path = f"compat gpus: compute capability of {g.name!r}"
        out.append((gpu_label(g), cc, path))
    if not out:
        for i, py in enumerate(facts.pythons):
            if py.torch:
                for dev in py.torch.devices:
                    out.append((gpu_label(dev), dev.capability, f"pythons[{i}].torch.devices[{dev.index}].capability"))
                if out:
                    break
    return out


def driver_runs_cuda(driver: Driver, compat: Compat, cuda: Optional[str]) -> Optional[bool]:
    """Does this driver run prebuilt wheels of CUDA ``cuda``? None when it cannot be told.

    Yes at the toolkit's GA minimum driver or, for CUDA 11+, at the major's minor-version-compatibility
    floor (https://docs.nvidia.com/deploy/cuda-compatibility/). With only the driver's ceiling known (a
    pasted nvidia-smi header), compare against that.
    """
    if not cuda:
        return None
    if not driver.version:
        if driver.cuda_driver_version:
            return version_ge(driver.cuda_driver_version, cuda)
        return None
    req = compat.cuda_requirement(cuda)
    if req is None:
        return None
    mm = major_minor(cuda)
    floor = req.minor_compat_min_driver if mm and mm[0] >= 11 else None
    return bool(version_ge(driver.version, req.min_driver) or version_ge(driver.version, floor))


def torch_releases(compat: Compat) -> List[TorchRelease]:
    """The compat torch release rows (none when the compat object has no torch table)."""
    getter = getattr(compat, "torch_releases", None)
    return list(getter()) if getter else []


def compute_processes(g: Gpu) -> List[GpuProcess]:
    """The GPU's compute processes (a graphics-only process shares no compute)."""
    return [p for p in (g.processes or []) if (p.type or "C") in ("C", "C+G")]


def on_slice(p: GpuProcess, d: MigDevice) -> Optional[bool]:
    """Does process ``p`` run on MIG device ``d``: by its GPU and compute instance ids (nvmlProcessInfo_t,
    nvidia-smi's GI/CI columns); None when either side's ids are unknown."""
    if p.gpu_instance_id is None or d.gpu_instance_id is None:
        return None
    if p.gpu_instance_id != d.gpu_instance_id:
        return False
    if p.compute_instance_id is None or d.compute_instance_id is None:
        return None
    return p.compute_instance_id == d.compute_instance_id


def slice_processes(g: Gpu, d: Optional[MigDevice]) -> Optional[List[GpuProcess]]:
    """The compute processes on MIG device ``d`` of GPU ``g``; None when a process's slice cannot be told (its
    ids unknown, or ``d`` unknown). NVML lists every slice's processes under the parent GPU; a slice has its own
    SMs, memory and copy engines (NVIDIA MIG User Guide), so only those on the same slice share them."""
    procs = compute_processes(g)
    if d is None:
        return None if procs else []
    out = []
    for p in procs:
        here = on_slice(p, d)
        if here is None:
            return None
        if here:
            out.append(p)
    return out


def busy_slices(g: Gpu) -> Optional[Dict[str, List[GpuProcess]]]:
    """On a GPU in MIG mode: MIG device UUID -> the compute processes on it, for every slice that has one; None
    when it cannot be told which slice a process is on (ids or UUIDs unknown): the caller keeps the whole GPU
    busy then, as before any id was read."""
    procs = compute_processes(g)
    if not procs:
        return {}
    devs = [d for d in (g.mig_devices or []) if d.uuid]
    if not devs:
        return None
    out: Dict[str, List[GpuProcess]] = {}
    for p in procs:
        where = [d for d in devs if on_slice(p, d)]
        if len(where) != 1 or any(on_slice(p, d) is None for d in devs):
            return None
        out.setdefault(where[0].uuid or "", []).append(p)
    return out
