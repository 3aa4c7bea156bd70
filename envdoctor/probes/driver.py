"""Driver probe: NVML first, nvidia-smi as fallback, plus procfs/devfs facts (module version, nodes, fabric)."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import dataclasses
import os
from typing import Any, List, Optional

from envdoctor.facts import Driver, ProbeStatus, Topology
from envdoctor.parsers.proc_driver import parse_proc_driver_version
from envdoctor.probes.nvidia_smi import NVIDIA_SMI_TIMEOUT_S, probe_nvidia_smi_xml, probe_topology_smi
from envdoctor.probes.nvml import probe_nvml

# The kernel keeps a process name in 16 bytes with the NUL (TASK_COMM_LEN, include/linux/sched.h): the
# 16-character "nv-fabricmanager" appears in /proc/<pid>/comm as its first 15 characters
FABRIC_MANAGER_COMM = "nv-fabricmanager"[:15]
# /proc/self/ns/pid of the initial PID namespace (PROC_PID_INIT_INO = 0xEFFFFFFC, include/linux/proc_ns.h):
# any other value means a container's PID namespace, where the host's daemons are not listed
_INIT_PID_NS = f"pid:[{0xEFFFFFFC}]"


def _path(root: str, *parts: str) -> str:
    return os.path.join(root, *parts)


def read_kernel_module_version(root: str = "/") -> Optional[str]:
    """Version of the loaded kernel module from <root>/proc/driver/nvidia/version (None if absent)."""
    try:
        with open(_path(root, "proc", "driver", "nvidia", "version"), encoding="utf-8", errors="replace") as f:
            return parse_proc_driver_version(f.read())
    except OSError:
        return None


def list_device_nodes(root: str = "/") -> Optional[List[str]]:
    """The /dev/nvidia* nodes present (paths as seen on the probed machine, not under ``root``)."""
    try:
        names = os.listdir(_path(root, "dev"))
    except OSError:
        return None
    return sorted(f"/dev/{n}" for n in names if n.startswith("nvidia"))


def _own_pid_namespace(root: str) -> Optional[str]:
    try:
        return os.readlink(_path(root, "proc", "self", "ns", "pid"))
    except OSError:
        return None


def fabric_manager_running(root: str = "/") -> Optional[bool]:
    """True if a process named nv-fabricmanager runs; None when this cannot be told from here.

    Not seeing it proves nothing inside a container: its PID namespace hides the host's daemons, so the
    answer there is None (unknown), and NVML's GPU fabric state is the evidence that counts.
    """
    proc = _path(root, "proc")
    try:
        entries = os.listdir(proc)
    except OSError:
        return None
    for pid in entries:
        if not pid.isdigit():
            continue
        try:
            with open(os.path.join(proc, pid, "comm"), encoding="utf-8", errors="replace") as f:
                if f.read().strip() == FABRIC_MANAGER_COMM:
                    return True
        except OSError:
            continue  # the process ended while we looked, or it is not ours to read
    ns = _own_pid_namespace(root)
    if ns is not None and ns != _INIT_PID_NS:
        return None  # a container's PID namespace: the host's fabric manager would not be listed
    return False


def nvswitch_count(root: str = "/") -> Optional[int]:
    """NVSwitches the nvswitch driver sees (one entry each in /proc/driver/nvidia-nvswitch/devices)."""
    try:
        return len(os.listdir(_path(root, "proc", "driver", "nvidia-nvswitch", "devices")))
    except OSError:
        return None  # no nvswitch driver: unknown (an HGX board may still have switches)


# nvidia-smi's words when no kernel module answers (the library may still be installed)
_NO_DRIVER_TEXTS = ("couldn't communicate with the nvidia driver", "could not communicate with the nvidia driver")


def _says_no_driver(message: Optional[str]) -> bool:
    text = (message or "").lower()
    return any(t in text for t in _NO_DRIVER_TEXTS)


def _driver(runner: Any, nvml: Any, root: str) -> Driver:
    d = probe_nvml(nvml)
    if d.status != ProbeStatus.OK:
        smi = probe_nvidia_smi_xml(runner, timeout=NVIDIA_SMI_TIMEOUT_S)
        if smi.status == ProbeStatus.OK:
            d = dataclasses.replace(
                smi,
                reason=f"{smi.reason} (NVML unusable: {d.nvml_error or d.reason})",
                nvml_error=d.nvml_error,
            )
        elif smi.status == ProbeStatus.FAILED:
            # nvidia-smi exists but failed (timed out, or printed an error): that is news even
            # when NVML already said why, so the section keeps both reasons. It becomes "failed"
            # unless the failure itself says there is no driver: NVML found no libnvidia-ml (which
            # nvidia-smi needs too), or nvidia-smi could not reach a loaded kernel module. Then a
            # stray, hung or broken nvidia-smi must not turn "no driver" into "state unknown".
            no_driver = d.status == ProbeStatus.ABSENT or _says_no_driver(smi.nvidia_smi_error)
            d = dataclasses.replace(
                d,
                status=ProbeStatus.ABSENT if no_driver else ProbeStatus.FAILED,
                reason=f"{d.reason}; {smi.reason}",
                nvidia_smi_error=smi.nvidia_smi_error,
            )
        elif d.status == ProbeStatus.UNSUPPORTED and not os.path.exists(_path(root, "proc", "driver", "nvidia")):
            # pynvml missing, no nvidia-smi, no kernel module: nothing says a driver is there
            d = dataclasses.replace(
                d,
                status=ProbeStatus.ABSENT,
                reason=f"no NVIDIA driver found: nvidia-smi not on PATH, no /proc/driver/nvidia ({d.reason})",
            )
        # otherwise nvidia-smi is absent too: NVML's absent/failed fact stands as it is
    return dataclasses.replace(
        d,
        kernel_module_version=read_kernel_module_version(root),
        device_nodes=list_device_nodes(root),
        fabric_manager_running=fabric_manager_running(root),
        nvswitch_count=nvswitch_count(root),
    )


def probe_driver(runner: Any, nvml: Any = None, root: str = "/") -> Driver:
    """The NVIDIA driver and GPUs: never raises; ``absent`` quickly on a machine without a driver.

    A kernel module version that differs from ``version`` (the user-space library) is the
    DRIVER_LIBRARY_MISMATCH evidence the checks look for.
    """
    try:
        return _driver(runner, nvml, root)
    except Exception as e:  # the per-probe guard
        return Driver(status=ProbeStatus.FAILED, reason=f"driver probe crashed: {type(e).__name__}: {e}")


def probe_topology(runner: Any, root: str = "/") -> Topology:
    """GPU connection matrix from `nvidia-smi topo -m` (absent when there is no nvidia-smi).

    ``root`` is accepted for symmetry with the other probes; the matrix itself only comes from
    nvidia-smi.
    """
    try:
        return probe_topology_smi(runner)
    except Exception as e:  # the per-probe guard
        return Topology(status=ProbeStatus.FAILED, reason=f"topology probe crashed: {type(e).__name__}: {e}")
