"""Container probe: which runtime (docker, podman, kubernetes, lxc, containerd) we run in, and its GPU device nodes."""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import glob
import os
from typing import List, Mapping, Optional

from envdoctor.facts import Container


def _p(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _read(root: str, path: str, limit: int = 1 << 20) -> Optional[str]:
    try:
        with open(_p(root, path), "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def gpu_device_nodes(root: str = "/") -> Optional[List[str]]:
    """/dev/nvidia* as seen from inside (paths as the machine names them, not under ``root``)."""
    dev = _p(root, "/dev")
    if not os.path.isdir(dev):
        return None
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(dev, "nvidia*")))
    # /dev/nvidia-caps is a directory of MIG capability nodes: list its entries too
    out: List[str] = []
    for n in names:
        out.append(f"/dev/{n}")
        sub = os.path.join(dev, n)
        if os.path.isdir(sub):
            out.extend(f"/dev/{n}/{c}" for c in sorted(os.listdir(sub)))
    return out


def probe_container(root: str = "/", env: Optional[Mapping[str, str]] = None) -> Container:
    """Never raises: anything unreadable is simply not evidence."""
    env = os.environ if env is None else env
    try:
        return _probe(root, env)
    except Exception as e:  # per-probe guard: a container probe must not take the others down
        return Container(evidence=f"container probe crashed: {type(e).__name__}: {e}")


def _probe(root: str, env: Mapping[str, str]) -> Container:
    found: List[tuple] = []  # (runtime, evidence), strongest first within each kind

    if env.get("KUBERNETES_SERVICE_HOST"):
        found.append(("kubernetes", "KUBERNETES_SERVICE_HOST is set"))
    for d in ("/var/run/secrets/kubernetes.io", "/run/secrets/kubernetes.io"):
        if os.path.isdir(_p(root, d)):
            found.append(("kubernetes", f"{d} exists"))
            break
    if os.path.exists(_p(root, "/run/.containerenv")):
        found.append(("podman", "/run/.containerenv exists"))
    if os.path.exists(_p(root, "/.dockerenv")):
        found.append(("docker", "/.dockerenv exists"))

    cgroup = _read(root, "/proc/1/cgroup") or _read(root, "/proc/self/cgroup") or ""
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
    environ1 = _read(root, "/proc/1/environ") or ""
    pid1_env = dict(kv.split("=", 1) for kv in environ1.split("\0") if "=" in kv)
    container_var = pid1_env.get("container") or env.get("container")
    if container_var:
        found.append((container_var, f"container={container_var} in the environment"))

    mountinfo = _read(root, "/proc/self/mountinfo", limit=4 << 20) or ""
    if " fuse.lxcfs " in mountinfo or os.path.isdir(_p(root, "/dev/.lxc")):
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
        gpu_device_nodes=gpu_device_nodes(root),
        nvidia_visible_devices=env.get("NVIDIA_VISIBLE_DEVICES"),
    )
