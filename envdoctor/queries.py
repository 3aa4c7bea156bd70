"""Fact queries: readings of the facts (with the compat tables) that checks, remedies and the services all ask.

They sit below checks and remedies (docs/architecture.md "Layers"): a remedy plans a fix from the same answers
the check that found the problem used, without importing the checks. Pure: no file, process or socket.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

from .domain.gpus import gpu_label
from .domain.pci import is_nvidia_gpu_description
from .domain.versions import major_minor, version_ge
from .model.facts import Driver, Facts

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


def gpu_capabilities(facts: Facts, compat: Compat) -> List[Tuple[str, Optional[str], str]]:
    """(label, compute capability or None, fact path) per GPU, from the driver, torch or the GPU table."""
    out = []
    for g in facts.driver.gpus:
        cc = g.compute_capability
        path = f"driver.gpus[{g.index}].compute_capability"
        if not cc and g.name:
            # one compute capability even when the name fits several cards (a cut-short "RTX 2080 ...")
            cc = compat.gpu_compute_capability(g.name)
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
