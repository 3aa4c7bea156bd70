"""watch.bottleneck's verdicts without a step timer or a process tree: on a recording of the host alone (a replayed
`vmstat 1`, with or without `iostat -x 1`), and on a paste's GPU samples beside a framework's loader warning."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..domain.recording import Analysis, pct
from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch import BOUND_P50, CPU_SATURATED, gpu_evidence, local_copy, no_gpu_reason
from .base import Findings


def host_verdict(bottleneck: Findings, w: Watch, a: Analysis, storage, notseen: Optional[str]) -> Optional[Finding]:
    """A host-only recording (a replayed `vmstat 1`, with or without `iostat -x 1`): no GPU, no step timer, no
    process tree. What it can still say is whether the host itself held every process back for the steady part of
    the recording: CPUs saturated (with the run queue that shows threads waiting for one), or storage busy. A host
    with room to spare says nothing about the run, so that stays unjudged (None)."""
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
    if a.steady_count < 5 or busy is None:
        return None
    rq = (a.host.get("run_queue") or {}).get("p50")
    gpu = no_gpu_reason(w)
    if busy >= CPU_SATURATED:
        ev = [Evidence("watch.summary.host.cpu_busy_pct.p50", busy, f"< {CPU_SATURATED:g}")]
        queue = ""
        if rq is not None:
            ev.append(Evidence("watch.summary.host.run_queue.p50", rq))
            queue = f", {rq:g} threads runnable (run queue p50)"
        cpus = w.cpu_available
        return bottleneck.warning(
            "host-cpu", f"The host's CPUs were saturated through the recording: {busy:g}% busy (p50){queue}"
            + ("" if storage else "; the disk was not the limit"),
            category="CPU_STARVED", evidence=ev, confidence="medium",
            detail=(f"{a.steady_count} steady samples over {a.duration_s:g} s. Every process on this host waited for "
                    "a CPU, a DataLoader's workers and the training loop's own Python included. "
                    + ("The recording does not say how many CPUs the host has, so whether the threads queue "
                       "(oversubscription) cannot be told; `nproc` settles it. " if not cpus else "")
                    + f"{gpu}: whether the GPU waited cannot be told. " + (notseen or "")).strip(),
            fix=Fix("See what takes the CPUs and give the run its share: `top -o %CPU` (or `ps -eo pid,pcpu,comm "
                    "--sort=-pcpu | head`); fewer DataLoader workers or torch threads when they outnumber the cores, "
                    "or stop the other jobs; `envdoctor watch -- <your command>` names the processes"))
    if storage:
        what, ev = storage
        return bottleneck.warning(
            "host-storage", f"Storage held the host back through the recording: {what}",
            category="INPUT_STORAGE_BOUND", evidence=ev, confidence="medium",
            detail=(f"{a.steady_count} steady samples over {a.duration_s:g} s. {gpu}: whether the GPU waited "
                    "for it cannot be told. " + (notseen or "")).strip(),
            fix=Fix("Put the data on local NVMe, or cache it in RAM (/dev/shm) before the run; "
                    "`envdoctor watch -- <your command>` tells the run's own reads from others'"))
    return None


def few_workers(bottleneck: Findings, w: Watch, a: Analysis, line: Optional[str],
                notseen: Optional[str]) -> Optional[Finding]:
    """A framework's own warning that the loader has few workers (PyTorch Lightning: num_workers <= 2 on a machine
    with more CPUs), beside GPUs the recording shows idle or underused: the input-bound pattern, at low confidence
    (no step timer says the steps wait). None without the warning or without GPU samples."""
    warn = w.summary.get("loader_warning") if isinstance(w.summary, dict) else None
    if not isinstance(warn, dict) or not a.gpus:
        return None
    p50 = pct([g.util_p50 for g in a.gpus if g.util_p50 is not None], 0.5)
    if p50 is None or p50 >= BOUND_P50:
        return None
    cpus = warn.get("cpus")
    gpus = line or ", ".join(f"GPU {g.index} at {g.util_p50:g}%" for g in a.gpus[:4])
    workers = min(16, max(1, int(cpus) - 1)) if isinstance(cpus, int) and cpus > 2 else 4
    return bottleneck.warning(
        "input", f"Input-bound: {warn.get('framework')} warns that the {warn.get('loader')} has few workers (at most 2"
        + (f", on a machine with {cpus} CPUs" if cpus else "") + f") while the GPU is underused ({gpus})",
        category="INPUT_BOUND", confidence="low",
        evidence=[Evidence("watch.summary.loader_warning", warn.get("line"))] + gpu_evidence(a.gpus)
        + [Evidence("paste.settle", "nvidia-smi dmon -s u   # while the training runs, 30 s or more")],
        detail="Lightning warns when num_workers <= 2 and the machine has more CPUs; with the GPU waiting, batches "
               "made one or two at a time on the CPU are the usual limit. A data set held in memory needs no "
               "workers, and the warning alone says nothing of this run's speed: utilisation sampled through the "
               "run settles it. " + (notseen or ""),
        fix=Fix("Give the DataLoader workers and pinned memory",
                commands=[f"DataLoader(dataset, batch_size=..., num_workers={workers}, pin_memory=True, "
                          "persistent_workers=True)" + (f"   # {cpus} CPUs, one kept for the training process"
                                                         if isinstance(cpus, int) else "")]))


def told_storage(w: Watch) -> Optional[Tuple[str, List[Evidence]]]:
    """Where the reporter says the data is (a paste: on an HDD, on NFS or another network share), as storage evidence
    the way storage_busy gives it; None when the paste does not say."""
    told = w.summary.get("data_storage") if isinstance(w.summary, dict) else None
    if not isinstance(told, dict):
        return None
    what = {"network": "a network filesystem", "fuse": "a FUSE mount"}.get(str(told.get("kind")), "a rotational disk")
    if told.get("from") == "mounts":  # the paste's df -T or mount output: a fact, not an account
        return (f"the data is on {what} ({told.get('said')})", [Evidence("watch.summary.data_storage", told.get("line"))])
    return (f"the reporter puts the data on {what} (“{told.get('said')}”)",
            [Evidence("watch.summary.data_storage", told.get("line"))])


SETTLE_IO = "iostat -x 1   # beside nvidia-smi dmon -s u, while the training runs"


def told_verdict(bottleneck: Findings, w: Watch, a: Analysis, notseen: Optional[str]) -> Optional[Finding]:
    """No step timer, host samples or working GPU: the reporter's words that the data sits on an HDD or a network
    share, beside an idle GPU (a table, a figure) or their words that the GPU is underused or loading is slow. The
    storage-bound pattern, at low confidence; None without both."""
    told = told_storage(w)
    summ = w.summary if isinstance(w.summary, dict) else {}
    said = summ.get("reported_symptoms") if isinstance(summ.get("reported_symptoms"), dict) else {}
    seen = next((x for x in (summ.get("reported_low_util"), summ.get("reported_slow_load"), said.get("bursty"),
                             said.get("stall_gpu_zero"), summ.get("reported_slow")) if x), None)
    if told is None or (not a.gpus and not seen):
        return None
    text, ev = told
    if a.gpus:
        gpus = ", ".join(f"GPU {g.index} at {g.util_p50:g}%" for g in a.gpus[:4])
        what = f"the GPU is idle ({gpus})"
    else:
        what = f"the reporter says “{seen}”"
        ev = ev + [Evidence("watch.summary.reported", seen)]
    return bottleneck.warning(
        "storage", "Input-bound on storage, by the reporter's account: " + f"{what}, and {text}",
        category="INPUT_STORAGE_BOUND", evidence=ev + [Evidence("paste.settle", SETTLE_IO)], confidence="low",
        detail="A hard disk serves a few hundred random reads a second and a network filesystem pays a round trip "
               "per file: a loader reading many small files from either keeps the GPU waiting. The paste has no "
               "disk counters; `iostat -x 1` during the training (%util near 100, a long await) settles it. "
               + (notseen or ""),
        fix=Fix("Copy the data set to a local SSD or NVMe before training (or pack it into large shards read "
                "sequentially), or cache it in RAM when it fits",
                commands=(local_copy(w) if w.data_paths else []) + [SETTLE_IO]))
