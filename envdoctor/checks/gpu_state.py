"""GPU state checks: every GPU answers, no other tenant, MIG off, persistence mode, compute mode."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..domain.gpus import gpu_label
from ..model.findings import Evidence, Finding, Fix
from ..remedies import command, placeholder, set_env
from ._gpus import (
    GIB,
    MIB,
    gpu_list,
    gpu_path,
    require_any,
    require_gpus,
)
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


# --------------------------------------------------------------------------- GPU_THROTTLED

# gpu_idle, applications_clocks_setting, sync_boost, display_clocks_setting: normal operation, not faults.


# --------------------------------------------------------------------------- GPU_MEMORY_ERRORS


# --------------------------------------------------------------------------- Xid events (kernel log)

# What an Xid code means, its category and severity: compat_data/xid.json, from NVIDIA's Xid catalog.
# Codes not listed there are reported as info with a pointer to the catalog.


# --------------------------------------------------------------------------- GPUs NVML lost

# nvml.h: GPU_IS_LOST "the GPU has fallen off the bus or has otherwise become inaccessible"; RESET_REQUIRED
# "the GPU requires a reset before it can be used again"; GPU_NOT_FOUND; TIMEOUT is envdoctor's own (no answer
# before the probe's deadline)
_LOST_TEXT = {"GPU_IS_LOST": "fell off the bus or became inaccessible (NVML GPU_IS_LOST)",
              "GPU_NOT_FOUND": "is no longer found by the driver (NVML GPU_NOT_FOUND)",
              "RESET_REQUIRED": "needs a reset before it can be used (NVML RESET_REQUIRED)",
              "TIMEOUT": "did not answer NVML before the deadline (hung)"}


REACHABLE = Findings("gpu.reachable", "NO_GPU_VISIBLE", kinds=("lost", "not-accessible"))


@check(REACHABLE, "Every GPU answers the driver")
def reachable(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "GPU reachability")
    lost = [g for g in gpus if g.nvml_error in _LOST_TEXT]
    closed = [g for g in gpus if g.nvml_error and g.nvml_error not in _LOST_TEXT]
    out: List[Finding] = []
    if closed:
        # NO_PERMISSION on one GPU: a Slurm/cgroup device limit or device-node permissions, not a broken GPU
        out.append(REACHABLE.info(
            "not-accessible",
            f"{gpu_list(closed)} not accessible to this process (" + "; ".join(
                f"GPU {g.index}: NVML {g.nvml_error}" for g in closed) + "): not judged",
            detail="Usually the job's device limits (Slurm, cgroups, a container given some GPUs) or the "
                   "permissions of /dev/nvidia*; those GPUs are not this job's to use.",
            evidence=[Evidence(gpu_path(g, "nvml_error"), g.nvml_error) for g in closed],
            fix=Fix("Nothing to do if those GPUs belong to other jobs; otherwise check the device permissions",
                    commands=["ls -l /dev/nvidia*"]),
        ))
    if not lost:
        return out
    return out + [REACHABLE.error(
        "lost",
        f"{len(lost)} of {len(gpus)} GPU(s) not answering: "
        + "; ".join(f"{gpu_label(g)} {_LOST_TEXT.get(g.nvml_error or '', 'failed: NVML ' + str(g.nvml_error))}"
                    for g in lost),
        detail="Jobs that use it fail (CUDA error, Xid 79) and the rest of its facts are unknown; the kernel log "
               "usually says why.",
        evidence=[Evidence(gpu_path(g, "nvml_error"), g.nvml_error, expected="none") for g in lost],
        fix=Fix("Drain the GPU and reset it (or reboot); if it stays lost, report it to the provider",
                commands=["sudo dmesg -T | grep -i -E 'xid|fallen off'"]
                         + [f"sudo nvidia-smi -i {g.index} -r" for g in lost],
                url="https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"),
    )]


# --------------------------------------------------------------------------- GPU_BUSY


BUSY = Findings("gpu.busy", "GPU_BUSY",
                kinds=("memory-held", "mig-processes", "processes", "utilization", "windows-memory"))


def _process_parts(by_gpu: Dict[int, List]) -> Tuple[List[str], List[Evidence]]:
    """("GPU 0: python (pid 4242, 2566 MiB), ..." per GPU, evidence per GPU) of listed processes."""
    parts, ev = [], []
    for idx, procs in by_gpu.items():
        mem = sum(p.used_memory_bytes or 0 for p in procs)
        parts.append(f"GPU {idx}: " + ", ".join(
            (f"{p.name} (pid {p.pid}" if p.name else f"pid {p.pid} (name unknown") +
            (f", {p.used_memory_bytes // MIB} MiB" if p.used_memory_bytes else "") +
            (f", MIG GI {p.gpu_instance_id} CI {p.compute_instance_id})" if p.gpu_instance_id is not None else ")")
            for p in procs))
        ev.append(Evidence(f"driver.gpus[{idx}].processes", [p.pid for p in procs], expected="none",
                           source=f"{mem // MIB} MiB held"))
    return parts, ev


@check(BUSY, "No other process is using the GPUs")
def busy(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "GPU processes", ("processes", "memory_used_bytes", "utilization_gpu_pct"))
    out: List[Finding] = []
    # readings taken under envdoctor's own load show that load's memory and utilisation: only a
    # listed process is evidence of another tenant then
    compute: Dict[int, List] = {}
    mig: Dict[int, List] = {}
    for g in gpus:
        procs = [p for p in (g.processes or []) if p.type is None or "C" in p.type]
        if procs and g.mig_mode_current:
            # NVML lists the processes of every MIG slice under the parent GPU; each slice has its own memory
            # and SMs, so another slice's process does not compete with this job's slice
            mig[g.index] = procs
        elif procs:
            compute[g.index] = procs
    if mig:
        parts, ev = _process_parts(mig)
        out.append(BUSY.info(
            "mig-processes",
            "Compute processes on the MIG slices of the GPUs: " + "; ".join(parts)
            + ": they compete only with jobs on their own slice (each MIG slice has its own memory and SMs)",
            evidence=ev,
            fix=Fix("Check that none of them runs on the slice your job uses (nvidia-smi lists each process's GPU "
                    "instance)", commands=["nvidia-smi", "nvidia-smi -L"]),
        ))
    if compute:
        parts, ev = _process_parts(compute)
        out.append(BUSY.warning(
            "processes",
            "Other compute processes already on the GPUs: " + "; ".join(parts),
            detail="Their memory is not available to your job and they share the SMs: out-of-memory errors "
                   "and slower steps. Zombie processes from a crashed run look the same.",
            evidence=ev,
            fix=Fix("Stop the processes you own, or choose idle GPUs",
                    commands=["nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv",
                              command("kill", placeholder("<pid>")),
                              set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", placeholder("<idle GPU indices>"))]),
        ))
    # a GPU in MIG mode reports the memory of every slice, other tenants' included: its aggregate says nothing
    # about the slice this job was given (MIG User Guide: each GPU instance has its own memory)
    # only where the process list was read: a pasted table cut before its Processes box shows no list, not an empty
    # one (the reporter's own run usually holds that memory)
    hidden = [g for g in gpus if not g.under_load and g.index not in compute and g.processes == []
              and g.memory_used_bytes
              and not g.mig_mode_current
              and g.memory_total_bytes and g.memory_used_bytes > max(GIB, 0.1 * g.memory_total_bytes)]
    if hidden and ctx.facts.host.wsl:
        # under WSL2 the GPU is shared with Windows: its desktop (dwm.exe), browsers and games hold memory that
        # NVML inside Linux cannot list (NVIDIA CUDA on WSL User Guide: process queries are not supported)
        out.append(BUSY.info(
            "windows-memory",
            "GPU memory in use outside this WSL2 Linux: "
            + "; ".join(f"GPU {g.index}: {g.memory_used_bytes // MIB} MiB of {g.memory_total_bytes // MIB} MiB"
                        for g in hidden) + " (the Windows desktop and Windows applications)",
            detail="Windows shares the GPU with WSL2; its own processes are not visible from Linux. The memory "
                   "they hold is not available to your job.",
            evidence=[Evidence(gpu_path(g, "memory_used_bytes"), g.memory_used_bytes, source="WSL2")
                      for g in hidden],
            fix=Fix("Close GPU-heavy Windows applications if you need the memory; check with nvidia-smi in Windows",
                    commands=["nvidia-smi.exe"]),
        ))
        hidden = []
    if hidden:
        # in a container NVML cannot map other PID namespaces' processes, so memory in use with an
        # empty process list is another tenant or a process outside the container
        out.append(BUSY.warning(
            "memory-held",
            "GPU memory in use with no visible process: "
            + "; ".join(f"GPU {g.index}: {g.memory_used_bytes // MIB} MiB of {g.memory_total_bytes // MIB} MiB"
                        for g in hidden),
            detail="Usually a process in another container or on the host holds it.",
            evidence=[Evidence(gpu_path(g, "memory_used_bytes"), g.memory_used_bytes, expected="< 10% of total")
                      for g in hidden],
            fix=Fix("Find the process on the host, or choose idle GPUs",
                    commands=["nvidia-smi", set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", placeholder("<idle GPU indices>"))]),
        ))
    busy_util = [g for g in gpus if not g.under_load and g.index not in compute and g not in hidden
                 and not g.mig_mode_current and not ctx.facts.host.wsl
                 and g.utilization_gpu_pct is not None and g.utilization_gpu_pct >= 50]
    if busy_util:
        out.append(BUSY.warning(
            "utilization",
            "GPUs busy before your job starts: "
            + "; ".join(f"GPU {g.index} at {g.utilization_gpu_pct:g}%" for g in busy_util),
            evidence=[Evidence(gpu_path(g, "utilization_gpu_pct"), g.utilization_gpu_pct, expected="< 50")
                      for g in busy_util],
            fix=Fix("Find what runs there, or choose idle GPUs",
                    commands=["nvidia-smi", set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", placeholder("<idle GPU indices>"))]),
        ))
    return out


# --------------------------------------------------------------------------- MIG, persistence, compute mode


MIG = Findings("gpu.mig", "MIG_ENABLED", kinds=("change-pending", "enabled", "no-instances"))


@check(MIG, "GPUs are whole (MIG off)")
def mig(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "MIG mode", ("mig_mode_current",))
    out: List[Finding] = []
    on = [g for g in gpus if g.mig_mode_current]
    empty = [g for g in on if g.mig_device_count == 0]
    sliced = [g for g in on if g.mig_device_count != 0]
    disable = [f"sudo nvidia-smi -i {g.index} -mig 0" for g in on] + [f"sudo nvidia-smi -i {g.index} -r" for g in on]
    if empty:
        out.append(MIG.warning(
            "no-instances",
            f"MIG enabled with no MIG instance on {gpu_list(empty)}: CUDA sees no device there",
            evidence=[Evidence(gpu_path(g, "mig_device_count"), 0, expected="> 0 or MIG off") for g in empty],
            fix=Fix("Create MIG instances, or disable MIG to use the whole GPU",
                    commands=[command("sudo", "nvidia-smi", "mig", "-cgi", placeholder("<profile>"), "-C")] + disable),
        ))
    if sliced:
        counts = "; ".join(f"GPU {g.index}: {g.mig_device_count} instance(s)" if g.mig_device_count
                           else f"GPU {g.index}" for g in sliced)
        out.append(MIG.info(
            "enabled",
            f"MIG enabled on {gpu_list(sliced)} ({counts}): jobs see MIG slices, not whole GPUs",
            evidence=[Evidence(gpu_path(g, "mig_mode_current"), True) for g in sliced],
            fix=Fix("Disable MIG if you need whole GPUs", commands=disable),
        ))
    pending = [g for g in gpus if g.mig_mode_pending is not None and g.mig_mode_current is not None
               and g.mig_mode_pending != g.mig_mode_current]
    if pending:
        out.append(MIG.info(
            "change-pending",
            f"MIG mode change pending on {gpu_list(pending)} until the GPU is reset",
            evidence=[Evidence(gpu_path(g, "mig_mode_pending"), g.mig_mode_pending) for g in pending],
            fix=Fix("Reset the GPU to apply it", commands=[f"sudo nvidia-smi -i {g.index} -r" for g in pending]),
        ))
    return out


PERSISTENCE = Findings("gpu.persistence", "PERSISTENCE_MODE_OFF", kinds=("off",))


@check(PERSISTENCE, "Persistence mode on")
def persistence(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "persistence mode")
    if (ctx.facts.host.os or "Linux") != "Linux":
        raise SkipCheck(f"persistence mode is a Linux setting (this is {ctx.facts.host.os})")
    require_any(gpus, ("persistence_mode",), "persistence mode")
    off = [g for g in gpus if g.persistence_mode is False]
    if not off:
        return []
    return [PERSISTENCE.info(
        "off",
        f"Persistence mode off on {gpu_list(off)}",
        detail="Without a persistent client the driver tears the GPU state down between jobs: each CUDA "
               "start pays the initialisation again and clocks/ECC state reset.",
        evidence=[Evidence(gpu_path(g, "persistence_mode"), False, expected="true") for g in off],
        fix=Fix("Enable the persistence daemon (or persistence mode)",
                commands=["sudo systemctl enable --now nvidia-persistenced", "sudo nvidia-smi -pm 1"],
                url="https://docs.nvidia.com/deploy/driver-persistence/index.html"),
    )]


def _compute_mode(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    v = value.strip().lower().replace(" ", "_").replace(".", "")
    if "prohibit" in v:
        return "Prohibited"
    if "thread" in v:
        return "Exclusive_Thread"
    if "exclusive" in v or v in ("e_process", "eprocess"):
        return "Exclusive_Process"
    if "default" in v:
        return "Default"
    return value


COMPUTE_MODE = Findings("gpu.compute-mode", "COMPUTE_MODE_RESTRICTED", kinds=("exclusive", "prohibited"))


@check(COMPUTE_MODE, "Compute mode allows shared use")
def compute_mode(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "compute mode", ("compute_mode",))
    out: List[Finding] = []
    prohibited = [g for g in gpus if _compute_mode(g.compute_mode) == "Prohibited"]
    exclusive = [g for g in gpus if _compute_mode(g.compute_mode) in ("Exclusive_Process", "Exclusive_Thread")]
    if prohibited:
        out.append(COMPUTE_MODE.error(
            "prohibited",
            f"Compute mode Prohibited on {gpu_list(prohibited)}: no process can create a CUDA context there",
            evidence=[Evidence(gpu_path(g, "compute_mode"), g.compute_mode, expected="Default") for g in prohibited],
            fix=Fix("Set the compute mode back to Default",
                    commands=[f"sudo nvidia-smi -i {g.index} -c DEFAULT" for g in prohibited]),
        ))
    if exclusive:
        out.append(COMPUTE_MODE.warning(
            "exclusive",
            f"Compute mode exclusive on {gpu_list(exclusive)}: only one process at a time may use each GPU",
            detail="A second process (another rank, an evaluation script, a notebook) fails with "
                   "'all CUDA-capable devices are busy or unavailable'.",
            evidence=[Evidence(gpu_path(g, "compute_mode"), g.compute_mode, expected="Default") for g in exclusive],
            fix=Fix("Set the compute mode back to Default if you share GPUs between processes",
                    commands=[f"sudo nvidia-smi -i {g.index} -c DEFAULT" for g in exclusive]),
        ))
    return out
