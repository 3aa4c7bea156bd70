"""Reader for where the pasted program ran (issue 42): signs of a container, a pod, a sandbox or WSL that a paste
shows without saying so in a `docker run` line (host_lines.py reads those first and keeps what they say).

The same failure means different things by context: `nvidia-smi: command not found` or a missing libcuda is a
missing driver on a bare host, a container started without the NVIDIA runtime inside a container, the Windows
driver's GPU paravirtualisation under WSL. These are the signs read here, each a context's own words:

- Apptainer/Singularity: a `singularity`/`apptainer` run, exec or shell command (the GPU is passed only with `--nv`
  or `--nvccli`, https://apptainer.org/docs/user/latest/gpu.html), or the tool named with its version.
- enroot, alone or under Slurm's pyxis plugin (`srun --container-image`): its NVIDIA hook injects the driver
  (https://github.com/NVIDIA/enroot/blob/master/doc/usage.md, https://github.com/NVIDIA/pyxis).
- Kubernetes GPU components that run only as pods: the device plugin ("Loading NVML", its image or name),
  dcgm-exporter, gpu-feature-discovery (https://github.com/NVIDIA/k8s-device-plugin).
- A shell prompt inside a Docker container: Docker names a container's host after the first 12 hex digits of
  its id, so `root@3f2a9c0d1b7e:/#` is a container's shell (https://docs.docker.com/reference/cli/docker/container/run/#hostname).
- WSL: a Linux shell prompt on a machine with Windows' default computer name (`user@DESKTOP-5A67SBM:~$`,
  `user@LAPTOP-AF3LO3NQ:~$`: Windows names a new PC DESKTOP- or LAPTOP- and 7 or 8 letters and digits, and WSL
  takes the Windows host name), or Docker Desktop's WSL 2 backend named (docs.docker.com/.../wsl).
- A Jetson (L4T) container: an L4T image named (`l4t-pytorch`, `...-l4t-r32.5.0`), or a Jetson/JetPack named with
  a container. On JetPack 4 (L4T r32) the images carry no CUDA libraries of their own: the NVIDIA runtime mounts
  the host's CUDA, cuDNN and TensorRT into the container, so a container started without it (Docker's default
  runtime not set to nvidia, https://github.com/dusty-nv/jetson-containers#docker-default-runtime) cannot load
  libcurand/libcudnn (issue 42, precision round 15).

What the reporter says of the GPU in one of these contexts (issue 42, round 15; signals judged by
checks/diagnose_said.py):
- ``paste.container_gpu_said``: a container said not to reach the GPU ("container cant access GPU", "Cannot find
  `nvidia-smi` inside docker container", "the GPU is not visible inside the container");
- ``paste.wsl_gpu_said``: WSL said not to reach it ("I can't get WSL to recognise I have an NVIDIA card", "i can
  not use nvidia-smi in wsl2");
- ``paste.k8s_node_no_gpu``: ``kubectl get nodes`` asked for the nodes' ``nvidia.com/gpu`` capacity (or
  allocatable) column and a node's row shows ``<none>`` or 0: no node advertises a GPU, which the device plugin
  does only when its own container sees one (https://github.com/NVIDIA/k8s-device-plugin#readme); or
  ``kubectl describe node``'s ``Capacity:`` block listing cpu, memory and pods but no ``nvidia.com/gpu``
  (NVIDIA/k8s-device-plugin#834: "when i describe node, there is no gpu resource" beside a working nvidia-smi).
"""

from __future__ import annotations

import re

from .base import BARE, LOOSE, Acc, Paste

_APPTAINER_RUN = re.compile(r"(?<![\w.-])(?:singularity|apptainer)\s+(?:run|exec|shell|instance\s+start)\b[^\n]*")
_APPTAINER_NAMED = re.compile(r"\bVersion of (?:Singularity|Apptainer)\b|\b(?:singularity|apptainer)(?: version)?"
                              r"[ :]+v?\d+\.\d+\.\d+|\bSIF (?:file|image)\b", re.I)
_NV_FLAG = re.compile(r"(?<![\w-])--(?:nv|nvccli)\b")
_ENROOT = re.compile(r"(?<![\w.-])enroot\s+(?:start|create|import|exec)\b[^\n]*|(?<![\w-])--container-image[= ]\S+|"
                     r"/enroot/hooks\.d/\S*nvidia")
# the device plugin's own log lines and names; dcgm-exporter and gpu-feature-discovery run as DaemonSet pods
_K8S_COMPONENT = re.compile(r"^\W*(?:\d{4}/\d\d/\d\d \d\d:\d\d:\d\d )?Loading NVML\b|(?<![\w-])(?:nvidia-|k8s-|vgpu-)"
                            r"device-plugin\b|\bdcgm-exporter\b|\bgpu-feature-discovery\b", re.I | re.M)
_CONTAINER_PROMPT = re.compile(r"^\s*root@([0-9a-f]{12}):[~/][^\n]*?[#$]", re.M)
_WINDOWS_HOST_PROMPT = re.compile(r"^\s*[\w.-]+@((?:DESKTOP|LAPTOP)-[A-Z0-9]{7,8}):[~/][^\n]*?[#$]", re.M)
_DOCKER_DESKTOP_WSL = re.compile(r"docs\.docker\.com/(?:docker-for-windows|desktop/(?:features/|windows/)?)wsl\b|"
                                 r"\bDocker Desktop\b[^\n]{0,60}\bWSL ?2?\b|\bWSL ?2?\b[^\n]{0,60}\bDocker Desktop\b", re.I)

# Docker installed as a snap: its confinement keeps the host's driver libraries from the NVIDIA hook outside
# Ubuntu Core (https://github.com/canonical/docker-snap#usage-with-nvidia-gpus)
_DOCKER_SNAP = re.compile(r"\bsnap install docker\b|/snap/docker/|\bsnap\.docker\.", re.I)

_NOT = r"(?:can ?not|can'?t|cannot|could ?n'?t|unable to|not able to|does ?n'?t|does not|did not|didn'?t|won'?t|fails? to)"
_REACH = r"(?:access|see|detect|find|use|reach|recogni[sz]e|run)"
_CONTAINER_GPU_SAID = re.compile(
    rf"\bcontainers?\b[^.\n]{{0,40}}?\b{_NOT}\s+{_REACH}\s+(?:the |my |any |an? )?[`'\"]?(?:GPUs?|nvidia|cuda|nvidia-smi)\b"
    rf"|\b{_NOT}\s+{_REACH}\s+(?:the |my |any )?[`'\"]?(?:nvidia-smi|GPUs?)[`'\"]?\s+(?:in|inside|within|from)\s+"
    rf"(?:the |a |my |our |this )?(?:[\w-]+\s+)?containers?\b"
    r"|\bno (?:nvidia-smi|GPUs?|CUDA devices?)\s+(?:in|inside|within)\s+(?:the |a |my |our |this )?(?:[\w-]+\s+)?containers?\b"
    r"|\b(?:GPUs?|nvidia-smi)\b[^.\n]{0,30}?\bnot (?:available|accessible|visible|detected|found)\b[^.\n]{0,15}?"
    r"\b(?:in|inside|within|from)\s+(?:the |a |my |our |this )?(?:[\w-]+\s+)?containers?\b", re.I)
_WSL = r"\bWSL ?2?\b"
_WSL_GPU_SAID = re.compile(
    rf"\b{_NOT}\s+(?:get\s+)?{_WSL}[^.\n]{{0,30}}?\b(?:recogni[sz]e|see|detect|find|use|access)\b[^.\n]{{0,40}}?"
    r"\b(?:GPUs?|NVIDIA|card|CUDA)\b"
    rf"|\b{_NOT}\s+{_REACH}\s+(?:the |my |any )?(?:GPUs?|nvidia-smi|NVIDIA (?:GPU|card)|card)\b[^.\n]{{0,30}}?"
    rf"\b(?:in|inside|under|from|within)\s+(?:the |my )?{_WSL}"
    rf"|{_WSL}[^.\n]{{0,30}}?\b{_NOT}\s+(?:see|detect|find|recogni[sz]e|use|access)\s+(?:the |my |any )?(?:GPUs?|NVIDIA|card)\b"
    rf"|\b(?:nvidia-smi|GPUs?|CUDA)\s+(?:on|in|inside|under)\s+(?:the |my )?{_WSL}\s*(?:does ?n'?t|does not|is ?n'?t|is not|not) work",
    re.I)
# `kubectl get nodes` with the nodes' nvidia.com/gpu capacity (or allocatable) in a column, then a node's row
_K8S_NODES = re.compile(r"\bkubectl\s+get\s+(?:nodes?|no)\b[^\n]*\b(?:capacity|allocatable)\.'?nvidia\\*\.com/gpu", re.I)
_NODE_ROW_NONE = re.compile(r"^[>\s]*[\w.-]+\s+(?:\\?<none\\?>|0)\s*$")
_CAPACITY = re.compile(r"^\s*Capacity:\s*$")
_RESOURCE = re.compile(r"^\s+([\w.-]+(?:/[\w.-]+)?):\s+\S+\s*$")

_WORDS = ["snap", "singularity", "apptainer", "sif ", "enroot", "--container-image", "nvml", "device-plugin", "dcgm-exporter",
          "gpu-feature-discovery", "root@", "desktop-", "laptop-", "docker desktop", "docs.docker.com"]


def read_said(paste: Paste, acc: Acc) -> None:
    """What the reporter says of the GPU in a container, under WSL, or what `kubectl get nodes` shows of it."""
    for i in paste.distinct(paste.with_any(["container", "wsl"]), head=600, tail=100):
        line = paste.lines[i][:2000]
        how = line.strip()[:160]
        m = _CONTAINER_GPU_SAID.search(line)
        if m:
            acc.put("paste.container_gpu_said", how, LOOSE, m.group(0))
        m = _WSL_GPU_SAID.search(line)
        if m:
            acc.put("paste.wsl_gpu_said", how, LOOSE, m.group(0))
    for i in paste.with_any(["kubectl"])[:20]:
        if not _K8S_NODES.search(paste.lines[i]):
            continue
        for row in paste.lines[i + 1:i + 12]:
            if _NODE_ROW_NONE.match(row):
                acc.put("paste.k8s_node_no_gpu", row.strip(" >")[:120], LOOSE, paste.lines[i].strip()[:160])
                return
    for i in paste.with_any(["capacity:"])[:10]:
        if not _CAPACITY.match(paste.lines[i]):
            continue
        names = []
        for row in paste.lines[i + 1:i + 20]:
            m = _RESOURCE.match(row)
            if not m:
                break
            names.append(m.group(1).lower())
        if {"cpu", "memory", "pods"} <= set(names) and not any(n.endswith("/gpu") for n in names):
            acc.put("paste.k8s_node_no_gpu", "Capacity: " + ", ".join(names), LOOSE,
                    "kubectl describe node: no nvidia.com/gpu under Capacity")
            return


# a Jetson L4T image (its tag names the L4T release or the NVIDIA L4T image family), or a Jetson/JetPack with a
# container beside it; JetPack 4's images get the host's CUDA libraries from the NVIDIA runtime (CSV mounts)
_L4T_IMAGE = re.compile(r"(?<![\w-])(?:[\w./-]*[/:-])?l4t-(?:r\d\d(?:\.\d+)*|base|pytorch|ml|tensorflow|cuda|jetpack)"
                        r"(?:[:\w.-]*)", re.I)
_JETSON = re.compile(r"\b(?:jetson|jetpack|nv_tegra_release)\b", re.I)
_CONTAINER_SAID = re.compile(r"\bcontainers?\b|\bdocker\b", re.I)


def read_l4t_container(paste: Paste, acc: Acc) -> None:
    """``paste.l4t_container``: the program ran in a Jetson (L4T) container (see the module's notes)."""
    lines = paste.distinct(paste.with_any(["l4t", "jetson", "jetpack", "nv_tegra"]), head=200, tail=50)
    for i in lines:
        m = _L4T_IMAGE.search(paste.lines[i])
        if m:
            acc.put("paste.l4t_container", m.group(0)[:120], LOOSE, paste.lines[i].strip()[:160])
            return
    jetson = next((i for i in lines if _JETSON.search(paste.lines[i])), None)
    if jetson is None:
        return
    where = acc.get("container.runtime") or next(
        (paste.lines[i].strip() for i in paste.distinct(paste.with_any(["container", "docker"]), head=200, tail=50)
         if _CONTAINER_SAID.search(paste.lines[i])), None)
    if where:
        acc.put("paste.l4t_container", _JETSON.search(paste.lines[jetson]).group(0), BARE,
                f"{paste.lines[jetson].strip()[:100]} | {str(where)[:60]}")


# a GPU-sharing layer that sits in every CUDA and NVML call of the process (issue 42: "a GPU-sharing layer (HAMi's
# LD_PRELOADed libvgpu) in the way of CUDA/NCCL"): HAMi-core's own log lines (`[HAMI-core Msg(1:140245:libvgpu.c:836)]:
# Initializing.....`, Info/Debug/Warn/ERROR), its library (/usr/local/vgpu/libvgpu.so, preloaded through
# /etc/ld.so.preload or LD_PRELOAD), its resource names and limits (nvidia.com/gpumem, nvidia.com/gpucores; Volcano's
# volcano.sh/vgpu-* and vgpu-mode "hami-core"; CUDA_DEVICE_MEMORY_LIMIT, CUDA_DEVICE_SM_LIMIT). Sources: HAMi's README
# (https://github.com/Project-HAMi/HAMi#readme: the resource names), Project-HAMi/HAMi#332 and
# Project-HAMi/volcano-vgpu-device-plugin#78 (the log lines), Project-HAMi/HAMi-core#7 (LD_PRELOAD and the limit)
_SHARING_LAYER = re.compile(r"\[HAMI-core (?:Msg|Info|Debug|Warn|ERROR)\(|(?<![\w-])[\w/.-]*\blibvgpu\.so\b|"
                            r"\bnvidia\.com/gpu(?:mem|cores)(?:-percentage)?\b|\bvolcano\.sh/vgpu-(?:memory|cores|number|mode)\b|"
                            r"\bCUDA_DEVICE_(?:MEMORY|SM)_LIMIT\b")
_SHARING_WORDS = ["hami-core", "libvgpu", "nvidia.com/gpu", "volcano.sh/vgpu", "cuda_device_"]


def read_sharing_layer(paste: Paste, acc: Acc) -> None:
    """A GPU-sharing layer named by its own lines, library or resources: ``paste.sharing_layer``."""
    for i in paste.distinct(paste.with_any(_SHARING_WORDS), head=400, tail=100):
        m = _SHARING_LAYER.search(paste.lines[i])
        if m:
            seen = m.group(0).strip()
            name = "HAMi-core" if seen.upper().startswith("[HAMI") else (
                seen if "libvgpu" in seen else f"HAMi's resource {seen}")
            acc.put("paste.sharing_layer", name[:120], LOOSE, paste.lines[i].strip()[:160])
            return


def read_contexts(paste: Paste, acc: Acc) -> None:
    read_said(paste, acc)
    read_sharing_layer(paste, acc)
    text = "\n".join(paste.lines[i] for i in paste.distinct(paste.with_any(_WORDS), head=600, tail=100))
    if not text:
        return
    _wsl(text, acc)
    m = _DOCKER_SNAP.search(text)
    if m:
        acc.put("container.snap", True, LOOSE, m.group(0))
    if acc.get("container.runtime"):  # a `docker run` line, Compose or a pod said more (host_lines.py)
        return
    m = _APPTAINER_RUN.search(text)
    if m:
        acc.put("container.runtime", "apptainer", LOOSE, m.group(0).strip()[:160])
        acc.put("container.gpus_requested", bool(_NV_FLAG.search(m.group(0))), LOOSE, m.group(0).strip()[:160])
        acc.add_found("an Apptainer/Singularity command")
        return
    m = _ENROOT.search(text)
    if m:
        acc.put("container.runtime", "enroot", LOOSE, f"enroot named in the paste: {m.group(0).strip()[:140]}")
        return
    m = _K8S_COMPONENT.search(text)
    if m:
        acc.put("container.runtime", "kubernetes", LOOSE,
                f"a Kubernetes GPU component (it runs as a pod) named in the paste: {m.group(0).strip()[:120]}")
        return
    m = _APPTAINER_NAMED.search(text)
    if m:
        acc.put("container.runtime", "apptainer", BARE, f"Apptainer/Singularity named in the paste: {m.group(0)}")
        return
    m = _CONTAINER_PROMPT.search(text)
    if m:
        acc.put("container.runtime", "docker", BARE, f"a shell prompt inside a Docker container: {m.group(0).strip()[:80]}")


def _wsl(text: str, acc: Acc) -> None:
    if acc.get("host.wsl") is not None:  # a kernel string or WSL named: host_lines.py decided
        return
    m = _WINDOWS_HOST_PROMPT.search(text) or _DOCKER_DESKTOP_WSL.search(text)
    if m:
        acc.put("host.wsl", True, BARE, f"a Linux shell on a Windows-named machine or Docker Desktop's WSL backend: "
                f"{m.group(0).strip()[:80]}")
