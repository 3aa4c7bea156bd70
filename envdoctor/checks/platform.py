"""Platform checks: containers without GPU access, WSL's GPU rules."""

from __future__ import annotations

from typing import List

from ..model.facts import ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ..queries import nvidia_hardware
from ..remedies import Raw, command, placeholder, remove_linux_driver
from ._paste_context import host_driver_missing
from .base import NO_GPU, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)


TOOLKIT_DOC = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
WSL_DOC = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"
APPTAINER_DOC = "https://apptainer.org/docs/user/latest/gpu.html"


CONTAINER_GPU = Findings("platform.container-gpu", "CONTAINER_NO_GPU_RUNTIME", kinds=("no-runtime",))


@check(CONTAINER_GPU, "Container has GPU access")
def check_container(ctx: CheckContext) -> List[Finding]:
    host = ctx.facts.host
    c = host.container
    if host.status == ProbeStatus.SKIPPED and c is None:
        raise SkipCheck("host not probed")
    if (c is None or not c.runtime) and ctx.facts.origin == "paste":
        raise SkipCheck("the paste does not say whether this runs in a container")
    if c is None:
        raise SkipCheck("whether this is a container is unknown" + (f" ({host.reason})" if host.reason else ""))
    if not c.runtime:
        raise SkipCheck("not a container: nothing to judge", not_applicable="not a container")
    if nvidia_hardware(ctx.facts) is False:
        # sysfs in a container lists the host's PCI devices: none of vendor 0x10de means the host has no
        # NVIDIA GPU to pass in (driver.present says so)
        raise SkipCheck("no NVIDIA hardware on the PCI bus: no GPU to pass into this container", not_applicable=NO_GPU)
    d = ctx.facts.driver
    nodes = c.gpu_device_nodes
    if d.status == ProbeStatus.OK and d.gpus:
        return []
    if nodes:  # device nodes are there: a driver problem, judged by the driver checks
        return []
    if ctx.facts.origin == "paste" and host_driver_missing(ctx.facts, ctx.compat, {}):
        raise SkipCheck("the paste shows the host's driver missing or not loaded: no container option can pass in a "
                        "driver the host lacks (the driver checks judge it)")
    if nodes is None and d.status != ProbeStatus.ABSENT:
        raise SkipCheck(f"the container's /dev/nvidia* nodes were not read and the driver probe {d.status}"
                        + (f": {d.reason}" if d.reason else ""))
    ev = [Evidence("host.container.runtime", c.runtime, source=c.evidence),
          Evidence("topology.nvidia_pci_devices", ctx.facts.topology.nvidia_pci_devices,
                   source="the host's NVIDIA PCI devices, seen through sysfs"),
          Evidence("host.container.gpu_device_nodes", nodes, expected="/dev/nvidia0, /dev/nvidiactl, ..."),
          Evidence("driver.status", d.status)]
    if c.nvidia_visible_devices is not None:
        ev.append(Evidence("host.container.nvidia_visible_devices", c.nvidia_visible_devices))
    k8s = c.runtime == "kubernetes"
    if c.runtime == "apptainer":  # Apptainer/Singularity binds the host's driver and /dev/nvidia* only with --nv
        return [CONTAINER_GPU.error(
            "no-runtime", "Running in an Apptainer/Singularity container started without --nv",
            detail=("Apptainer and Singularity bind the host's NVIDIA driver libraries, nvidia-smi and the "
                    "/dev/nvidia* device nodes into a container only when it is started with --nv (or --nvccli)."),
            evidence=ev, fix=Fix("Start the container with --nv",
                                 [command("apptainer", "exec", "--nv", placeholder("<image.sif>"), "nvidia-smi")],
                                 APPTAINER_DOC))]
    return [CONTAINER_GPU.error(
        "no-runtime",
        f"Running in a {c.runtime} container with no NVIDIA device nodes or driver libraries passed in",
        detail=("Containers see GPUs only when the NVIDIA Container Toolkit injects the device nodes and the "
                "host's driver libraries (libcuda, nvidia-smi); a plain `docker run` passes neither."),
        evidence=ev,
        fix=Fix("Request GPUs for the pod (resources.limits nvidia.com/gpu) on a node with the NVIDIA device plugin"
                if k8s else
                "On the host: install the NVIDIA Container Toolkit, configure Docker for it, and start the container with --gpus",
                ["sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
                 command("docker", "run", "--gpus", "all", placeholder("<image>"), "nvidia-smi")] if not k8s else
                [command("kubectl", "describe", "node", placeholder("<node>"), Raw("|"), "grep", "nvidia.com/gpu")],
                TOOLKIT_DOC),
    )]


WSL = Findings("platform.wsl", "WSL_SPECIFIC", kinds=("gpu",))


@check(WSL, "WSL GPU setup")
def check_wsl(ctx: CheckContext) -> List[Finding]:
    host = ctx.facts.host
    if host.wsl is None:
        raise SkipCheck("whether this is WSL is unknown")
    if not host.wsl:
        raise SkipCheck("not WSL: nothing to judge", not_applicable="not WSL")
    d = ctx.facts.driver
    problems, ev = [], [Evidence("host.wsl", True), Evidence("host.kernel", host.kernel)]
    if d.kernel_module_version:
        problems.append(f"a Linux NVIDIA kernel driver ({d.kernel_module_version}) is installed inside WSL")
        ev.append(Evidence("driver.kernel_module_version", d.kernel_module_version, expected="none inside WSL"))
    if d.status == ProbeStatus.ABSENT:
        problems.append("no GPU driver is exposed to WSL (/usr/lib/wsl/lib/libcuda.so missing or not loadable)")
        ev.append(Evidence("driver.status", d.status))
    elif d.status == ProbeStatus.OK and not d.gpus:
        problems.append("the Windows driver exposes no GPU to WSL")
    for i, py in enumerate(ctx.facts.pythons):
        for lib in py.loaded_libraries:
            if lib.name == "cuda" and lib.path and "/usr/lib/wsl/" not in lib.path:
                problems.append(f"libcuda was loaded from {lib.path}, not from /usr/lib/wsl/lib")
                ev.append(Evidence(f"pythons[{i}].loaded_libraries.cuda", lib.path, expected="/usr/lib/wsl/lib/..."))
        t = py.torch
        if t and t.cuda and t.cuda_available is False and d.status != ProbeStatus.ABSENT:
            problems.append(f"torch cannot use CUDA: {t.cuda_init_error or 'is_available() is False'}")
            ev.append(Evidence(f"pythons[{i}].torch.cuda_init_error", t.cuda_init_error))
    if not problems:
        return []
    return [WSL.error(
        "gpu",
        "WSL: " + "; ".join(problems),
        detail=("Under WSL 2 the GPU driver is the Windows driver: WSL maps it in as /usr/lib/wsl/lib/libcuda.so. "
                "A Linux NVIDIA driver installed inside WSL overrides that mapping and breaks CUDA; some Windows "
                "builds shipped with broken GPU compute."),
        evidence=ev,
        fix=Fix("Install or update the NVIDIA driver on Windows only; remove any Linux NVIDIA driver inside WSL; "
                "keep /usr/lib/wsl/lib on the library path",
                remove_linux_driver(ctx.facts, comment="inside WSL, if installed") + [
                 "ls -l /usr/lib/wsl/lib/libcuda.so*",
                 "wsl --update   # in Windows PowerShell"],
                WSL_DOC),
    )]
