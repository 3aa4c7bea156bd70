"""One nvidia-smi table of an idle GPU (a paste's single moment): what it suggests, kept apart from watch_gpus.py for the
check-module size limit."""

from __future__ import annotations

from typing import List, Optional

from ..domain.recording import Analysis
from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch import (
    unseen_text,
)
from .base import Findings

IDLE = Findings("watch.idle-gpu", "GPU_IDLE_UNUSED", kinds=("all-idle", "unused", "reported-unused"))

# what a paste's one moment suggests, and the recording that would settle it (issue 42): utilisation per second
SETTLE_UTIL = "nvidia-smi dmon -s u   # while the training runs, 30 s or more"


def one_moment(w: Watch, a: Analysis, idle, ev: List[Evidence]) -> Optional[Finding]:
    """A paste's single nvidia-smi table (or a reporter's figure) with GPUs idle: what it suggests, said as weak
    evidence, with the recording that would settle it; None for a real series."""
    summ = w.summary if isinstance(w.summary, dict) else {}
    reported = summ.get("reported")
    if summ.get("snapshots") != 1 and not reported:
        return None
    def held(g):
        return f" holding {g.mem_used_mib_max:g} MiB" if g.mem_used_mib_max is not None else ""
    names = ", ".join(f"GPU {g.index} at {g.util_p50:g}%{held(g)}" for g in idle)
    said = (f"The reporter gives the GPU's utilisation as {idle[0].util_p50:g}% (“{reported}”)" if reported else
            f"One nvidia-smi table shows {names}")
    loader = summ.get("loader_warning")
    return IDLE.warning(
        "all-idle", f"{said}: at that moment no kernel ran; with a process holding the GPU that suggests the run "
        "waits (on its input, the CPU or a synchronisation) or computes elsewhere (on the CPU, another GPU), but one "
        "moment is weak evidence",
        evidence=ev + [Evidence("paste.settle", SETTLE_UTIL)], confidence="low",
        detail="nvidia-smi's utilisation is the share of its last sample period (1/6 s to 1 s, by product) in which a "
               "kernel ran (NVML, nvmlUtilization_t); a run between steps, loading a batch, saving or evaluating "
               "reads 0% at that moment and 100% the next. Utilisation sampled every second over a minute of training "
               "tells a GPU that waits from one caught between steps."
               + (f" {loader['framework']} also warns that the {loader['loader']} has few workers (at most 2)."
                  if isinstance(loader, dict) else "") + " " + (unseen_text(w) or ""),
        fix=Fix("Record utilisation while the training runs; if it stays low, the run waits on its input (see "
                "watch.bottleneck): more DataLoader workers, pin_memory=True, data on local disk",
                commands=[SETTLE_UTIL]))
