"""Paste checks on what a report says of the GPU in its context, when it shows no error line (issue 42, round 15).

The same complaint, "the GPU cannot be used", has a different cause by where the program ran (the issue's bar:
"Context changes the cause"), and a report often says where in words only:

- a container said not to reach the GPU ("container cant access GPU", "Cannot find `nvidia-smi` inside docker
  container"), with no sign that the container was started with the GPU: a container sees GPUs only when the NVIDIA
  Container Toolkit injects the device nodes and the host's driver libraries (jellyfin#2722's ldconfig hook, the
  issue's pod without the runtime). Where the paste shows the GPU requested (``--gpus``, ``--runtime=nvidia``) the
  runtime was asked for, and the words say nothing about which part failed: quiet;
- ``kubectl get nodes`` showing no ``nvidia.com/gpu`` on a node: the device plugin advertises GPUs only when its own
  container sees them, so the node's container runtime does not hand the GPU to containers (the same mechanism as
  the catalogue's "Insufficient nvidia.com/gpu" row, ``k8s-no-gpu-resource``; the fix is on the node's runtime);
- WSL said not to reach the GPU ("I can't get WSL to recognise I have an NVIDIA card", "i can not use nvidia-smi
  in wsl2"): under WSL 2 the GPU comes only from the Windows driver, so the cause is on the Windows side or in
  WSL's own passthrough, never a Linux driver to install;
- the driver's kernel module said to need a hand after a kernel upgrade (``dkms install`` by hand) or a Machine
  Owner Key enrolled again for Secure Boot: a module that is not built for, or not allowed into, the running
  kernel, so no driver is loaded (NO_NVIDIA_DRIVER).

Each is a low-confidence warning with the commands that settle it: the words suggest the cause, they do not show it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..model.facts import ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ._paste import no_nvidia_gpu_said, paste_or_skip, signature_hits
from ._paste_context import K8S_DOC, K8S_FIX, host_driver_missing
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

TOOLKIT_DOC = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
WSL_DOC = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"

CONTAINER = Findings("diagnose.container-gpu-said", "CONTAINER_NO_GPU_RUNTIME", kinds=("words", "node-capacity"))


def _said(prov: Dict[str, Any], key: str) -> Optional[Dict[str, Any]]:
    hit = prov.get(key)
    return hit if hit and hit.get("value") else None


def _message_says(ctx: CheckContext, category: str) -> bool:
    """A known error message in the paste already gives this category: its finding says it better than words."""
    return any(h.category == category for h in signature_hits(ctx.facts, ctx.compat))


def _gpu_shown(ctx: CheckContext, prov: Dict[str, Any]) -> bool:
    """An NVIDIA GPU or driver shown or named in the paste (a table, a driver version, "a Tesla P4")."""
    d = ctx.facts.driver
    return bool(d.gpus) or d.status == ProbeStatus.OK or "paste.nvidia_gpu_said" in prov


def _gpu_listed(ctx: CheckContext) -> bool:
    """The paste shows a working driver with its GPUs (an nvidia-smi table, a framework's device list); a GPU the
    reporter only names in a sentence ("Fedora 41 on an Nvidia RTX 3080") says nothing of the driver."""
    d = ctx.facts.driver
    prov: Dict[str, Any] = (ctx.facts.paste.provenance if ctx.facts.paste else None) or {}
    named_only = (prov.get("driver.gpus") or {}).get("confidence") == "low" and d.version is None \
        and "driver.seen" not in prov
    return bool(d.gpus) and d.status == ProbeStatus.OK and not named_only


@check(CONTAINER, "A container the report says cannot reach the GPU was started with it")
def check_container_gpu_said(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Dict[str, Any] = paste.provenance or {}
    node = _said(prov, "paste.k8s_node_no_gpu")
    words = _said(prov, "paste.container_gpu_said")
    if not (node or words):
        raise SkipCheck("the report does not say a container or a node cannot reach the GPU",
                        not_applicable="no container words")
    if no_nvidia_gpu_said(ctx.facts) or _message_says(ctx, CONTAINER.category):
        return []  # no NVIDIA GPU to pass in, or a message already says it
    if node and node["value"].startswith("Capacity:") and not _gpu_shown(ctx, prov):
        node = None  # a node without GPUs lists no nvidia.com/gpu either: only beside a GPU the paste shows
    if node:
        return [CONTAINER.warning(
            "node-capacity", confidence="low",
            summary=(f"Kubernetes shows no nvidia.com/gpu on a node ({node['value']}): the node's container "
                     "runtime probably does not hand the GPU to containers, so the device plugin advertises none"),
            detail=("The device plugin runs as a pod and advertises nvidia.com/gpu only when its own container sees "
                    "the GPUs; on a node whose Docker or containerd does not use the NVIDIA runtime by default "
                    "(minikube's none driver on such a Docker, a RuntimeClass not set) it finds none. A plugin that "
                    "is not deployed, or failed, reads the same: its log settles it."),
            evidence=[Evidence("paste.k8s_node_no_gpu", node["value"], expected="nvidia.com/gpu: 1 or more",
                               source=str(node.get("reader")))],
            fix=Fix("Make the NVIDIA runtime the node's default container runtime (nvidia-ctk runtime configure "
                    "--set-as-default, then restart Docker or containerd) and redeploy the device plugin; check "
                    "its log and the node's capacity",
                    ["kubectl describe nodes | grep -i -A8 capacity",
                     "kubectl -n kube-system logs -l name=nvidia-device-plugin-ds"], K8S_DOC))]
    if words is None:
        return []
    if prov.get("container.gpus_requested", {}).get("value") is True:
        return []  # --gpus / --runtime=nvidia / --nv was given: the runtime was asked for, the words do not say more
    if _gpu_listed(ctx):
        return []  # a GPU list in the paste: the container (or the host) reaches the GPU somewhere
    if host_driver_missing(ctx.facts, ctx.compat, {}):
        return []  # the host's driver is missing: the message checks judge it, no container option passes it in
    c = ctx.facts.host.container
    k8s = c is not None and c.runtime == "kubernetes"
    return [CONTAINER.warning(
        "words", confidence="low",
        summary=("The report says a container cannot reach the GPU, and shows no GPU request: possibly the "
                 "container was started without the NVIDIA runtime"),
        detail=("A container sees the GPU only when the NVIDIA Container Toolkit injects the /dev/nvidia* nodes and "
                "the host's driver libraries (libcuda, nvidia-smi) as it starts: `docker run --gpus`, Compose's "
                "device reservation, a pod's nvidia.com/gpu limit with the nvidia runtime. The paste shows no such "
                "request. If the container was started with the GPU, the toolkit's hook (its ldconfig step after a "
                "driver update) or the host's driver is the question: nvidia-smi on the host and inside the "
                "container settles which."),
        evidence=[Evidence("paste.container_gpu_said", words["value"], source=str(words.get("reader"))),
                  Evidence("container.gpus_requested", None, expected="--gpus, a device reservation or a GPU limit"),
                  Evidence("paste.settle", "nvidia-smi   # on the host, then inside the container")],
        fix=(Fix(K8S_FIX, [], K8S_DOC) if k8s else
             Fix("Start the container with the GPU (docker run --gpus all, or a Compose device reservation with "
                 "driver: nvidia and capabilities: [gpu]) on a host with the NVIDIA Container Toolkit configured "
                 "for Docker; if it was, compare nvidia-smi on the host and in the container",
                 ["nvidia-smi", "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
                  "docker run --rm --gpus all ubuntu nvidia-smi"], TOOLKIT_DOC)))]


WSL = Findings("diagnose.wsl-gpu-said", "WSL_SPECIFIC", kinds=("words",))


@check(WSL, "WSL reaches the GPU the report says it cannot")
def check_wsl_gpu_said(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Dict[str, Any] = paste.provenance or {}
    words = _said(prov, "paste.wsl_gpu_said")
    if not words:
        raise SkipCheck("the report does not say WSL cannot reach the GPU", not_applicable="no WSL words")
    if ctx.facts.host.wsl is False:
        return []  # a Linux kernel that is not WSL's was shown: the words are about something else
    if _gpu_listed(ctx) or no_nvidia_gpu_said(ctx.facts) or _message_says(ctx, WSL.category):
        return []
    return [WSL.warning(
        "words", confidence="low",
        summary=("The report says WSL does not reach the GPU: under WSL 2 the GPU comes only through the Windows "
                 "driver, so the cause is on the Windows side or in WSL's GPU passthrough"),
        detail=("Inside WSL 2 there is no Linux NVIDIA driver: the Windows driver's GPU is passed through (/dev/dxg) "
                "and its libraries appear in /usr/lib/wsl/lib (libcuda, nvidia-smi). WSL 1, a Windows build before "
                "GPU compute in WSL, a Windows driver without WSL support, or a Linux driver installed inside WSL "
                "each leave the GPU unreachable; the versions below settle which."),
        evidence=[Evidence("paste.wsl_gpu_said", words["value"], source=str(words.get("reader"))),
                  Evidence("paste.settle", "wsl --version; nvidia-smi (in Windows and in WSL)")],
        fix=Fix("Install the NVIDIA driver on Windows (not inside WSL), run the distribution under WSL 2 and update "
                "WSL; then nvidia-smi inside WSL lists the GPU",
                ["wsl --update   # in Windows PowerShell", "wsl --list --verbose   # in Windows PowerShell",
                 "ls -l /usr/lib/wsl/lib/   # inside WSL: the Windows driver's libraries"], WSL_DOC))]


MODULE = Findings("diagnose.module-said", "NO_NVIDIA_DRIVER", kinds=("not-loaded",))


@check(MODULE, "The driver's kernel module the report speaks of is built and loaded")
def check_module_said(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Dict[str, Any] = paste.provenance or {}
    words = _said(prov, "paste.module_not_loaded_said")
    if not words:
        raise SkipCheck("the report says nothing of the driver's kernel module after a kernel upgrade or of its key",
                        not_applicable="no module words")
    if _gpu_listed(ctx) or ctx.facts.host.wsl or _message_says(ctx, MODULE.category):
        return []  # a driver that answers, WSL (no Linux module at all), or a message that says it already
    return [MODULE.warning(
        "not-loaded", confidence="low",
        summary=("The report says the NVIDIA kernel module needed a hand or broke with a kernel (built by hand after "
                 "a kernel upgrade, its Secure Boot key enrolled again, a new kernel the driver does not work on): "
                 "probably no NVIDIA module is built or loaded for the running kernel"),
        detail=("The driver's kernel module is built for each kernel (DKMS or a kmod package does it on a kernel "
                "upgrade) and, with Secure Boot on, loads only when signed with a key the firmware trusts (the MOK "
                "enrolled at the next boot). When either step does not happen, the new kernel boots without the "
                "module: nvidia-smi cannot talk to a driver and CUDA finds none. A driver release without the "
                "patches for a new kernel series fails to build there until its packager ships one that has them."),
        evidence=[Evidence("paste.module_not_loaded_said", words["value"], source=str(words.get("reader"))),
                  Evidence("paste.settle", "uname -r; dkms status; lsmod | grep nvidia; mokutil --sb-state")],
        fix=Fix("Build the module for the running kernel (with its headers installed) and, with Secure Boot on, "
                "enroll the signing key at the next boot; then load it. If the build fails on a new kernel, boot "
                "the previous one until the driver package has a release that builds there",
                ["uname -r", "dkms status", "lsmod | grep nvidia", "mokutil --sb-state",
                 "sudo dkms autoinstall   # Fedora/akmods: sudo akmods --force --kernels \"$(uname -r)\""]))]
