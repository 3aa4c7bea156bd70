"""Driver probe: NVML first, nvidia-smi as fallback, plus procfs/devfs facts (module version, nodes, fabric)."""

# ruff: noqa: UP045  (the project style is typing.Optional for Python 3.9; see facts.py)

from __future__ import annotations

import dataclasses
import os
from typing import Any, List, Optional, Union

from envdoctor.model.facts import Driver, ProbeStatus, Topology
from envdoctor.parsers.proc_driver import parse_proc_driver_open, parse_proc_driver_version
from envdoctor.probes.nvidia_smi import NVIDIA_SMI_TIMEOUT_S, probe_nvidia_smi_xml, probe_topology_smi
from envdoctor.probes.nvml import INIT_PID_NS, probe_nvml
from envdoctor.probes.registry import ProbeContext, probe
from envdoctor.probes.sysroot import SysRoot

Root = Union[str, SysRoot]

# The kernel keeps a process name in 16 bytes with the NUL (TASK_COMM_LEN, include/linux/sched.h): the
# 16-character "nv-fabricmanager" appears in /proc/<pid>/comm as its first 15 characters
FABRIC_MANAGER_COMM = "nv-fabricmanager"[:15]


def read_kernel_module_version(root: Root = "/") -> Optional[str]:
    """Version of the loaded kernel module from /proc/driver/nvidia/version (None if absent)."""
    text = SysRoot.of(root).read_text("/proc/driver/nvidia/version")
    return None if text is None else parse_proc_driver_version(text)


def read_kernel_module_open(root: Root = "/") -> Optional[bool]:
    """Whether the loaded kernel module is NVIDIA's open one, from /proc/driver/nvidia/version (None if absent)."""
    text = SysRoot.of(root).read_text("/proc/driver/nvidia/version")
    return None if text is None else parse_proc_driver_open(text)


def list_device_nodes(root: Root = "/") -> Optional[List[str]]:
    """The /dev/nvidia* nodes present (paths as seen on the probed machine, not under ``root``)."""
    try:
        names = SysRoot.of(root).listdir("/dev")
    except OSError:
        return None
    return sorted(f"/dev/{n}" for n in names if n.startswith("nvidia"))


def _own_pid_namespace(fs: SysRoot) -> Optional[str]:
    try:
        return fs.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def fabric_manager_running(root: Root = "/") -> Optional[bool]:
    """True if a process named nv-fabricmanager runs; None when this cannot be told from here.

    Not seeing it proves nothing inside a container: its PID namespace hides the host's daemons, so the
    answer there is None (unknown), and NVML's GPU fabric state is the evidence that counts.
    """
    fs = SysRoot.of(root)
    try:
        entries = fs.listdir("/proc")
    except OSError:
        return None
    for pid in entries:
        # None: the process ended while we looked, or it is not ours to read
        if pid.isdigit() and fs.read_attr(f"/proc/{pid}/comm") == FABRIC_MANAGER_COMM:
            return True
    ns = _own_pid_namespace(fs)
    if ns is not None and ns != INIT_PID_NS:
        return None  # a container's PID namespace: the host's fabric manager would not be listed
    if proc_hides_pids(fs):
        return None  # /proc mounted with hidepid: other users' processes (the daemon's) are not listed
    return False


def proc_hides_pids(root: Root = "/") -> bool:
    """Is /proc mounted with hidepid=1/2 (or invisible/noaccess, Linux 5.8+), hiding other users' processes?
    (proc(5): "hidepid=2 ... processes of other users are invisible"). Root still sees them all."""
    fs = SysRoot.of(root)
    if fs.live and hasattr(os, "geteuid") and os.geteuid() == 0:
        return False
    for line in (fs.read_text("/proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "proc" and parts[1] == "/proc":
            for opt in parts[3].split(","):
                key, _, value = opt.partition("=")
                if key == "hidepid" and value not in ("0", "off"):
                    return True
    return False


def nvswitch_count(root: Root = "/") -> Optional[int]:
    """NVSwitches the nvswitch driver sees (one entry each in /proc/driver/nvidia-nvswitch/devices)."""
    try:
        return len(SysRoot.of(root).listdir("/proc/driver/nvidia-nvswitch/devices"))
    except OSError:
        return None  # no nvswitch driver: unknown (an HGX board may still have switches)


# nvidia-smi's words when no kernel module answers (the library may still be installed)
_NO_DRIVER_TEXTS = ("couldn't communicate with the nvidia driver", "could not communicate with the nvidia driver")


def _says_no_driver(message: Optional[str]) -> bool:
    text = (message or "").lower()
    return any(t in text for t in _NO_DRIVER_TEXTS)


def probe_driver(runner: Any, nvml: Any = None, root: Root = "/") -> Driver:
    """The NVIDIA driver and GPUs: ``absent`` quickly on a machine without a driver.

    A kernel module version that differs from ``version`` (the user-space library) is the
    DRIVER_LIBRARY_MISMATCH evidence the checks look for.
    """
    fs = SysRoot.of(root)
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
        elif d.status == ProbeStatus.UNSUPPORTED and not fs.exists("/proc/driver/nvidia"):
            # pynvml missing, no nvidia-smi, no kernel module: nothing says a driver is there
            d = dataclasses.replace(
                d,
                status=ProbeStatus.ABSENT,
                reason=f"no NVIDIA driver found: nvidia-smi not on PATH, no /proc/driver/nvidia ({d.reason})",
            )
        # otherwise nvidia-smi is absent too: NVML's absent/failed fact stands as it is
    return dataclasses.replace(
        d,
        kernel_module_version=read_kernel_module_version(fs),
        kernel_module_open=read_kernel_module_open(fs),
        device_nodes=list_device_nodes(fs),
        fabric_manager_running=fabric_manager_running(fs),
        nvswitch_count=nvswitch_count(fs),
    )


def probe_topology(runner: Any, root: Root = "/") -> Topology:
    """GPU connection matrix from `nvidia-smi topo -m` (absent when there is no nvidia-smi).

    ``root`` is accepted for symmetry with the other probes; the matrix itself only comes from
    nvidia-smi.
    """
    return probe_topology_smi(runner)


@probe("driver", failed=lambda reason: Driver(status=ProbeStatus.FAILED, reason=reason))
def collect_driver(ctx: ProbeContext) -> Driver:
    return probe_driver(ctx.runner, root=ctx.fs)
