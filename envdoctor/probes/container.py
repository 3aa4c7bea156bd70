"""Container probe: which runtime (docker, podman, kubernetes, lxc, containerd) we run in, and its GPU device nodes."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import os
from typing import List, Mapping, Optional, Union

from envdoctor.model.facts import Container
from envdoctor.probes.sysroot import SysRoot, root_and_env

_LIMIT = 1 << 20  # /proc/1/cgroup and environ are a few lines; a limit keeps an odd /proc from costing memory


def gpu_device_nodes(root: Union[str, SysRoot] = "/") -> Optional[List[str]]:
    """/dev/nvidia* as seen from inside (paths as the machine names them, not under ``root``)."""
    fs = SysRoot.of(root)
    if not fs.isdir("/dev"):
        return None
    names = sorted(os.path.basename(p) for p in fs.glob("/dev/nvidia*"))
    # /dev/nvidia-caps is a directory of MIG capability nodes: list its entries too
    out: List[str] = []
    for n in names:
        out.append(f"/dev/{n}")
        if fs.isdir(f"/dev/{n}"):
            out.extend(f"/dev/{n}/{c}" for c in sorted(fs.listdir(f"/dev/{n}")))
    return out


def probe_container(root: Union[str, SysRoot] = "/", env: Optional[Mapping[str, str]] = None) -> Container:
    """Anything unreadable is simply not evidence."""
    fs, env = root_and_env(root, env)
    found: List[tuple] = []  # (runtime, evidence), strongest first within each kind

    if env.get("KUBERNETES_SERVICE_HOST"):
        found.append(("kubernetes", "KUBERNETES_SERVICE_HOST is set"))
    for d in ("/var/run/secrets/kubernetes.io", "/run/secrets/kubernetes.io"):
        if fs.isdir(d):
            found.append(("kubernetes", f"{d} exists"))
            break
    if fs.exists("/run/.containerenv"):
        found.append(("podman", "/run/.containerenv exists"))
    if fs.exists("/.dockerenv"):
        found.append(("docker", "/.dockerenv exists"))

    cgroup = fs.read_text("/proc/1/cgroup", _LIMIT) or fs.read_text("/proc/self/cgroup", _LIMIT) or ""
    if "/docker/" in cgroup or "docker-" in cgroup:
        found.append(("docker", "cgroup path names docker"))
    if "kubepods" in cgroup:
        found.append(("kubernetes", "cgroup path names kubepods"))
    if "containerd" in cgroup:
        found.append(("containerd", "cgroup path names containerd"))
    if "/lxc/" in cgroup or "lxc.payload" in cgroup:
        found.append(("lxc", "cgroup path names lxc"))

    # PID 1's environment is readable only to root (or the same user); the variable "container" is
    # the systemd convention for container managers (https://systemd.io/CONTAINER_INTERFACE/)
    environ1 = fs.read_text("/proc/1/environ", _LIMIT) or ""
    pid1_env = dict(kv.split("=", 1) for kv in environ1.split("\0") if "=" in kv)
    container_var = pid1_env.get("container") or env.get("container")
    if container_var:
        found.append((container_var, f"container={container_var} in the environment"))

    mountinfo = fs.read_text("/proc/self/mountinfo", 4 << 20) or ""
    if " fuse.lxcfs " in mountinfo or fs.isdir("/dev/.lxc"):
        found.append(("lxc", "lxcfs / /dev/.lxc mounts"))
    if "/docker/containers/" in mountinfo:
        found.append(("docker", "mountinfo shows /var/lib/docker/containers bind mounts"))

    order = ["kubernetes", "podman", "docker", "lxc", "containerd"]
    runtime: Optional[str] = None
    for name in order:
        if any(r == name for r, _ in found):
            runtime = name
            break
    if runtime is None and found:
        runtime = found[0][0]
    evidence = "; ".join(dict.fromkeys(e for _, e in found)) or None
    return Container(
        runtime=runtime,
        evidence=evidence,
        gpu_device_nodes=gpu_device_nodes(fs),
        nvidia_visible_devices=env.get("NVIDIA_VISIBLE_DEVICES"),
    )
