"""Context qualifiers of the catalogue's rows (issue 42): where the pasted program ran decides what a message
means. nvidia-container-cli runs on the host and loads the host's driver before it sets up a container, so its
failure to find that driver is the host's missing driver, not a container option; the readers that find the
context are diagnose/readers/contexts.py and host_lines.py."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, Optional

from ..model.facts import Facts
from ._paste_roles import extension_build_named, prov

if TYPE_CHECKING:
    from ..compat.queries import Compat

# a container runtime problem inside a Kubernetes pod is fixed on the pod spec, not with `docker run --gpus`
# (issue 42): the device plugin's README (a GPU pod names runtimeClassName: nvidia where the nvidia runtime is not
# containerd's default, and asks for nvidia.com/gpu in its limits); a CDI allocation without NVIDIA_VISIBLE_DEVICES
# leaves libcuda out of images whose library path lacks the injected one (https://github.com/scverse/scvi-tools/pull/3799)
K8S_FIX = ("Fix it on the pod spec: request the GPU in resources.limits (nvidia.com/gpu: 1), set runtimeClassName: "
           "nvidia where the nvidia runtime is not the node's default, and check that the device plugin injects the "
           "driver libraries (NVIDIA_VISIBLE_DEVICES, or CDI with an image whose LD_LIBRARY_PATH holds the injected "
           "driver directory, e.g. GKE's /usr/local/nvidia/lib64); kubectl describe pod shows what was allocated.")
K8S_DOC = "https://github.com/NVIDIA/k8s-device-plugin#readme"

# host_driver_missing: where the program ran; extension_build_named: what the failing build was (a torch
# extension's, or a plain CUDA build's: issue 42, archdriver)
CONTEXT_WHEN = ("host_driver_missing", "extension_build_named", "l4t_container", "kernel_site_not_torch",
                "have_cpu_build_of_built")

# the failing kernel's site, named on the message's own line, is compiled code other than torch's: a CUDA source
# file (`[error][simple_yolo.cu:556]:launch failed:`, ggml's `CUDA error 209 at ...ggml-cuda.cu:5284:`) outside
# torch's ATen/c10, or a kernel wrapper's own printf (`Error in forward_face_index_map_1: ...`); torch says "CUDA
# error: ..." with no site (issue 42, round 15)
_KERNEL_SITE = re.compile(r"[\w./\\-]*\.cuh?\b(?::\d+)?|\bError in [A-Za-z_]\w*:|\blaunch failed\b")
_TORCH_SITE = re.compile(r"\b(?:ATen|c10|torch|caffe2)[/\\]")

# rows that say the host's driver is not there or not loaded (a module that did not load or build, nouveau)
_HOST_DRIVER_ROWS = ("nvidia-module-load-failed", "nvidia-module-key-rejected", "nvidia-module-build-failed",
                     "nouveau-holds-gpu", "kernel-headers-package-missing")
# libnvidia-container's own words when the host has no NVML library in its linker cache
_NO_HOST_NVML = re.compile(r"load library failed: libnvidia-ml\.so")
# Docker (or containerd) saying the nvidia runtime is not registered: the toolkit's own install is broken or was
# never configured (container-toolkit-001, -034, microk8s-001); a libnvidia-ml load failure beside it is then no
# proof of a missing host driver (issue 42, round 11)
_TOOLKIT_BROKEN_ROWS = ("unknown-runtime-nvidia",)


def context_holds(when: str, facts: Facts, compat: Compat, groups: Dict[str, Optional[str]], message: str = "") -> bool:
    if when == "host_driver_missing":
        return host_driver_missing(facts, compat, groups)
    if when == "extension_build_named":  # the build may be a torch extension's (torch, setup.py, cpp_extension)
        return extension_build_named(facts)
    if when == "kernel_site_not_torch":  # the message's line names compiled code other than torch's
        site = _KERNEL_SITE.search(message)
        return bool(site) and not _TORCH_SITE.search(site.group(0))
    if when == "have_cpu_build_of_built":  # the installed torch is the CPU build of the release an extension was built for
        return cpu_build_of_built(facts, compat, groups)
    if when == "l4t_container":  # a Jetson L4T container: its CUDA libraries come from the NVIDIA runtime (round 15)
        return "paste.l4t_container" in prov(facts)
    return False


def host_driver_missing(facts: Facts, compat: Compat, groups: Dict[str, Optional[str]]) -> bool:
    """The paste shows the host's driver missing: a message of the rows above, or libnvidia-container finding no
    libnvidia-ml where the paste shows no working driver (no nvidia-smi table, no driver version), Docker is
    not the snap, whose confinement hides the host's libraries from the hook (canonical/docker-snap#148), and
    Docker does not also say the nvidia runtime is unknown (the toolkit's install is then what is broken:
    NVIDIA/nvidia-container-toolkit#302, fixed by reinstalling the toolkit)."""
    messages = facts.paste.messages if facts.paste else []
    signatures = (compat.signatures or []) if compat is not None else []
    rows = [s for s in signatures if s.id in _HOST_DRIVER_ROWS]
    if any(s.search(m) for s in rows for m in messages):
        return True
    if not _NO_HOST_NVML.search(groups.get("detail") or ""):
        return False
    toolkit_rows = [s for s in signatures if s.id in _TOOLKIT_BROKEN_ROWS]
    if any(s.search(m) for s in toolkit_rows for m in messages):
        return False
    seen = prov(facts)
    return facts.driver.version is None and "driver.seen" not in seen and not seen.get("container.snap")


def _cpu_of(built: str, have: str) -> bool:
    built, have = built.lower(), have.lower()
    return bool(built and have) and have.endswith("+cpu") and "+" in built and not built.endswith("+cpu") \
        and built.split("+")[0] == have.split("+")[0]


def cpu_build_of_built(facts: Facts, compat: Compat, groups: Dict[str, Optional[str]]) -> bool:
    """An extension's "built for PyTorch X (you have Y)" where Y is the +cpu build of the very release X (a CUDA
    build): torch lacks CUDA, the extension is right. The line may be a message of its own beside the one matched
    ("xFormers can't load C++/CUDA extensions" then "PyTorch 2.1.0+cu121 ... (you have 2.1.0+cpu)"), so every
    message is read with the rows that capture both versions (round 15: invokeai-001, -004, xformers-001)."""
    if _cpu_of(groups.get("built") or "", groups.get("have") or ""):
        return True
    rows = [sig for sig in ((compat.signatures or []) if compat is not None else [])
            if {"built", "have"} <= set(sig.regex.groupindex)]
    for message in (facts.paste.messages if facts.paste else []):
        for sig in rows:
            m = sig.search(message)
            if m and _cpu_of(m.groupdict().get("built") or "", m.groupdict().get("have") or ""):
                return True
    return False
