"""Paste check: a GPU held by a process that should be gone, by the reporter's account (issue 42, round 10).

The live gpu.busy check reads the GPUs' processes and memory from NVML; a pasted nvidia-smi table gives it the same
facts. A report without one often says it in words instead (readers/gpu_held.py): the memory not released when the
program ended or was killed, zombie or defunct processes, nvidia-smi showing gigabytes in use with no process.
Each is a process still alive on the GPU: a killed run's orphan (its DataLoader workers survive a `kill -9` of the
parent and keep its CUDA context), a process of another container or user, which nvidia-smi inside a container
does not list. GPU_BUSY at low confidence (words, not a process list), with the commands that find the process.
Where the paste carries the GPUs' memory readings the gpu.busy check judges those instead, and this one is quiet.
"""

from __future__ import annotations

from typing import Any, List

from ..model.findings import Evidence, Finding, Fix
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

HELD = Findings("diagnose.gpu-held", "GPU_BUSY", kinds=("reported-leftover",))

_FIND = ["nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv",
         "sudo fuser -v /dev/nvidia*   # also the processes nvidia-smi does not list",
         "ps -eo pid,ppid,stat,etime,cmd | grep -i python   # a Z in STAT: defunct, kill its parent"]


@check(HELD, "No GPU is said to stay held after its program is gone", applies=PASTE_ONLY)
def check_gpu_held(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Any = paste.provenance or {}
    said = prov.get("paste.gpu_held_said")
    if not said:
        raise SkipCheck("the report does not say a GPU stays held after its program is gone")
    if any(g.processes is not None and (g.processes or g.memory_used_bytes is not None)
           for g in (ctx.facts.driver.gpus or [])):
        # a table cut before its Processes box shows memory but no process list: gpu.busy cannot tell whose it is
        raise SkipCheck("the paste shows the GPUs' memory and processes: gpu.busy judges them",
                        not_applicable="GPU readings in the paste")
    return [HELD.warning(
        "reported-leftover",
        f"A GPU stays held after its program is gone, by the reporter's account (“{said.get('value')}”): "
        "a process is still alive on it",
        detail="GPU memory is given back when the process that allocated it exits; memory that stays in use after "
               "the run ended belongs to a process that did not: the run's own DataLoader workers or children "
               "left behind when it was killed (kill -9, a crash, an interrupted multi-GPU launch keeps one "
               "process per GPU), a zombie, or another user's or container's job, which nvidia-smi inside a "
               "container does not list. New runs on that GPU then fail with out-of-memory or crash at start. "
               "Words, not a process list: the commands below find the process.",
        evidence=[Evidence("paste.gpu_held_said", said.get("value"), source=said.get("reader"))]
        + [Evidence("paste.settle", c) for c in _FIND[:2]],
        fix=Fix("Find the process still holding the GPU and stop it (kill the parent of defunct processes, and "
                "their DataLoader workers); reboot if it cannot be killed",
                commands=_FIND),
        confidence="low")]
