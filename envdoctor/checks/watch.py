"""Verdicts on a watched run (`envdoctor watch`) or a replayed recording: what limits the training.

The checklist people follow by eye with `nvidia-smi dmon` and `iostat -x` side by side, as rules over the
samples' steady state (envdoctor/domain/recording.py: warm-up, stalls and cool-down apart, percentiles not single
samples):
- GPUs busy nearly all the time (p50 >= 85 %, few dips): the GPU is the limit (GPU_BOUND);
- GPUs underused while the disk is busy or slow (%util, await, iowait): INPUT_STORAGE_BOUND;
- underused while the CPUs (or the loader's processes) are saturated, or the loader workers are runnable (state
  R) most of the time, pegged or waiting for a core another tenant holds: INPUT_CPU_BOUND;
- steps that wait for their batch (the step timer) with neither explained: INPUT_BOUND;
- underused with neither disk nor CPU busy and no wait for data: GPU_UNDERFED (small batches, syncs, launches);
- a DataLoader that loads in the main process (no worker processes in the tree): DATALOADER_IN_MAIN_PROCESS;
- one GPU idle while the others work, or one never working, all stopping together, clocks held back.
Each finding says how sure it is and what the recording could not show.
"""

from __future__ import annotations

from typing import List, Optional

from ..domain.recording import Analysis, pct
from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch import (
    BOUND_P50,
    CORE_SATURATED,
    CPU_SATURATED,
    DIPS_MAX,
    WAIT_INPUT,
    analysis_of,
    confidence,
    cpu_saturated,
    gpu_evidence,
    gpu_line,
    loader_line,
    local_copy,
    more_workers_help,
    no_gpu_reason,
    recording,
    step_wait,
    storage_busy,
    tree_cpus,
    tree_input_verdict,
    unseen_text,
    workers_blocked,
    workers_computing,
    working,
)
from ._watch_cpu import cpu_held
from ._watch_host import few_workers, host_verdict, told_storage, told_verdict
from ._watch_main import main_busy
from ._watch_verdicts import comm_wait, gpu_bound_confidence
from ._watch_words import words_bottleneck, words_loader
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


# --------------------------------------------------------------------------- the verdict

BOTTLENECK = Findings("watch.bottleneck", "GPU_BOUND",
                      kinds=("communication", "cpu", "gpu-bound", "host-cpu", "host-storage", "input", "input-keeps-up",
                             "input-pattern", "storage", "underfed", "reported-cpu", "reported-input",
                             "reported-stalls", "reported-split", "reported-drained", "reported-workers"),
                      categories=("INPUT_BOUND", "COMMUNICATION_BOUND", "GPU_UNDERFED", "INPUT_STORAGE_BOUND",
                                  "INPUT_CPU_BOUND", "CPU_STARVED", "SLOW_STORAGE"))


@check("watch.bottleneck", "What limits the watched run",
       categories=("GPU_BOUND", "INPUT_STORAGE_BOUND", "INPUT_CPU_BOUND", "INPUT_BOUND", "GPU_UNDERFED",
                   "COMMUNICATION_BOUND", "CPU_STARVED", "SLOW_STORAGE"))
def bottleneck(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    wait = step_wait(w)
    gs = working(a)
    notseen = unseen_text(w)
    # a busy disk is not this run's input limit while its workers compute (state R) rather than wait on reads
    storage = workers_blocked(a) or (None if workers_computing(a, w) else storage_busy(a))
    if storage is None and not a.has_host and not a.has_procs:
        storage = told_storage(w)  # a paste's words on where the data is, with no disk counters to read
    cpu = cpu_saturated(a, w)
    wait_ev = [Evidence("watch.summary.data_wait_fraction", wait, f"< {WAIT_INPUT:g}")] if wait is not None else []
    if not gs:
        if wait is None:
            few = told_verdict(BOTTLENECK, w, a, notseen) or few_workers(BOTTLENECK, w, a, None, notseen) \
                or words_bottleneck(BOTTLENECK, w, notseen)
            if few is not None:
                return [few]
            tree = tree_input_verdict(a, w)
            if tree is not None:
                return [_tree_verdict(w, a, tree, notseen)]
            host = host_verdict(BOTTLENECK, w, a, storage, notseen)
            if host is not None:
                return [host]
            raise SkipCheck(f"{no_gpu_reason(w)}, and no step timer (timed(loader)) reported: whether the run "
                            "waits for its input cannot be told")
        if wait >= WAIT_INPUT:
            return [_input(w, a, wait, storage, cpu, wait_ev, notseen, gpu=False)]
        return [BOTTLENECK.info(
            "input-keeps-up", f"Steps wait for their batch {100 * wait:.1f}% of the time: the input keeps up; "
            f"the step itself is the limit ({no_gpu_reason(w)})",
            evidence=wait_ev, detail=notseen, confidence=confidence(a, direct=True, w=w), category="INPUT_BOUND")]
    lags = [e for e in a.lags if e.gpu in {g.index for g in gs}]  # a GPU that never works is watch.idle-gpu's
    if lags and sum(e.duration_s for e in lags) >= 0.3 * max(a.duration_s - a.warmup_s, 1e-9):
        raise SkipCheck("one GPU lagged for most of the recording (watch.straggler): the others' utilisation is "
                        "waiting for it, not work")
    p50 = pct([g.util_p50 for g in gs if g.util_p50 is not None], 0.5) or 0.0
    dips = pct([g.dips_fraction for g in gs if g.dips_fraction is not None], 0.5) or 0.0
    smact = pct([g.sm_active_p50 for g in gs if g.sm_active_p50 is not None], 0.5)
    spread = pct([(g.util_p90 or 0) - (g.util_p10 or 0) for g in gs], 0.5) or 0.0
    line = gpu_line(gs)
    ev = gpu_evidence(gs) + wait_ev
    comm = comm_wait(w, gs)
    if comm is not None and comm >= 0.3 and p50 >= BOUND_P50:
        return [BOTTLENECK.warning(
            "communication", f"GPUs report {p50:g}% utilisation but draw under half their peak power "
            f"{100 * comm:.0f}% of the time: they wait in collectives (NCCL), not compute ({line})",
            category="COMMUNICATION_BOUND", evidence=ev, confidence="medium",
            detail="NCCL kernels spin while they wait for the other ranks, which nvidia-smi counts as utilisation; "
                   "low power at 'full' utilisation is the tell. " + (notseen or ""),
            fix=Fix("Overlap communication with compute and cut its volume: a larger bucket_cap_mb in DDP, "
                    "gradient accumulation (fewer all-reduces), and NVLink/InfiniBand rather than PCIe or TCP "
                    "between the ranks (envdoctor check shows the interconnect)"))]
    bound = p50 >= BOUND_P50 and dips <= DIPS_MAX and (smact is None or smact >= 50) and \
        (wait is None or wait < WAIT_INPUT)
    if bound:
        mem = pct([g.mem_used_pct_p90 for g in gs if g.mem_used_pct_p90 is not None], 0.5)
        memtext = f", memory {mem:g}% used (p90)" if mem is not None else ""
        return [BOTTLENECK.info(
            "gpu-bound", f"The GPU is the limit: {line}{memtext}; a faster disk or more loader workers will not help",
            evidence=ev, confidence=gpu_bound_confidence(w, a, gs, confidence(a, direct=wait is not None)),
            detail=(f"{a.steady_count} steady samples over {a.duration_s:g} s"
                    + (f", {int(dips * 100)}% of them below 70%" if dips else "")
                    + (f"; steps wait for data only {100 * wait:.1f}% of the time" if wait is not None else "")
                    + ". " + (notseen or "")),
            fix=Fix("To go faster: mixed precision (torch.autocast(device_type='cuda', dtype=torch.bfloat16)), "
                    "torch.compile, TF32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True), or a bigger GPU"))]
    if storage or cpu or (wait is not None and wait >= WAIT_INPUT):
        return [_input(w, a, wait, storage, cpu, ev, notseen, gpu=True, line=line)]
    smtext = f", SM activity {smact:g}% (p50)" if smact is not None else ""
    few = few_workers(BOTTLENECK, w, a, line, notseen) if not (a.has_procs or a.has_host) else None
    if few is not None:
        return [few]
    if a.has_procs or (a.has_host and spread < 25):
        return [BOTTLENECK.warning(
            "underfed", f"The GPUs are underused ({line}{smtext}) while neither the disk nor the CPUs are busy"
            + (f" and steps wait for data only {100 * wait:.1f}% of the time" if wait is not None else ""),
            category="GPU_UNDERFED", evidence=ev, confidence=confidence(a, direct=wait is not None),
            detail="Typical causes: batches too small to fill the GPU, host-device synchronisation every step "
                   "(.item(), .cpu(), printing losses), many small kernel launches. " + (notseen or ""),
            fix=Fix("Raise the batch size (or use gradient accumulation), remove per-step .item()/.cpu() syncs, "
                    "try torch.compile or CUDA graphs; torch.profiler shows where the step's time goes"))]
    if spread >= 25:
        busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
        host = (f"the CPUs as a whole are {busy:g}% busy (p50), which one saturated core (a DataLoader with "
                "num_workers=0) also shows; without per-process samples this recording cannot say whether the "
                "disk or the CPU" if busy is not None else
                "this recording has no host samples to say whether the disk or the CPU")
        return [BOTTLENECK.warning(
            "input-pattern", f"GPU utilisation jumps between high and low ({line}{smtext}): the pattern of an input "
            f"pipeline that cannot keep up; {host}",
            category="INPUT_BOUND", evidence=ev, confidence="low" if a.steady_count < 5 else "medium",
            detail="Record `iostat -x 1` and `vmstat 1` next to it, or run `envdoctor watch`, to tell the disk "
                   "from the CPU. " + (notseen or ""),
            fix=Fix("Give the loader more workers and pin memory", commands=[loader_line(w, a, gpu=True)]))]
    return [BOTTLENECK.warning(
        "underfed", f"The GPUs are steadily underused ({line}{smtext})", category="GPU_UNDERFED", evidence=ev,
        confidence="low",
        detail="A steady low utilisation is what small batches, per-step syncs and launch overhead give; a slow "
               "input pipeline can look the same, and this recording has no host samples to rule it out. "
               + (notseen or ""),
        fix=Fix("Raise the batch size, remove per-step .item()/.cpu() syncs; record iostat -x and vmstat too"))]


def _input(w: Watch, a: Analysis, wait: Optional[float], storage, cpu, ev: List[Evidence],
           notseen: Optional[str], gpu: bool, line: str = "") -> Finding:
    waited = f"steps wait for their batch {100 * wait:.1f}% of the time" if wait is not None else ""
    gpu_part = f"the GPUs are underused ({line})" if gpu else ""
    what = "; ".join(x for x in (waited, gpu_part) if x)
    direct = wait is not None
    conf = confidence(a, direct=direct, w=w)
    if storage:
        text, sev = storage
        told = (w.summary.get("data_storage") or {}) if isinstance(w.summary, dict) else {}
        if any(e.path == "watch.summary.data_storage" for e in sev) and told.get("from") != "mounts":
            conf = "low"  # the storage half is the reporter's words
        return BOTTLENECK.warning(
            "storage", f"Input-bound on storage: {what}; {text}", category="INPUT_STORAGE_BOUND",
            evidence=ev + sev, confidence=conf, detail=notseen,
            fix=Fix("Copy the data set to local NVMe (or pack it into large shards read sequentially: WebDataset, "
                    "TFRecord) so reads stop waiting on the disk", commands=local_copy(w)))
    if cpu:
        text, sev = cpu
        return BOTTLENECK.warning(
            "cpu", f"Input-bound on the CPU: {what}; {text}", category="INPUT_CPU_BOUND",
            evidence=ev + sev, confidence=conf,
            detail="Decoding and augmentation run on the CPU; when the cores are saturated the GPU waits. "
                   + (notseen or ""),
            fix=_cpu_fix(w, a, gpu))
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
    tree = tree_cpus(a, w)
    others = (f" (the CPUs are {busy:g}% busy, but the watched processes use only {tree:g} CPUs: other "
              "processes hold them)") if busy is not None and busy >= CPU_SATURATED and tree is not None else ""
    if others:
        # the host is busy, but not with this run: other processes hold the CPUs (never "nothing is busy" here)
        return BOTTLENECK.warning(
            "input", f"Input-bound: {what}; neither the disk nor the watched processes saturate the machine{others}",
            category="INPUT_BOUND",
            evidence=ev + [Evidence("watch.summary.host.cpu_busy_pct.p50", busy)],
            confidence=conf,
            detail="The loop blocks on its next batch while processes outside the run keep the CPUs busy: the "
                   "loader's workers wait for a core they share with them. " + (notseen or ""),
            fix=Fix("Find what holds the CPUs and stop it or move the run (`top -o %CPU`, or `ps -eo "
                    "pid,pcpu,comm --sort=-pcpu | head`); more workers would queue for the same cores"))
    if not a.has_host and not a.has_procs:
        # no host samples and no process tree (a pasted training log): what holds the loader back is not in it
        return BOTTLENECK.warning(
            "input", f"Input-bound: {what}; whether the disk, the CPU or too few loader workers hold the loader back "
            "is not in the recording", category="INPUT_BOUND", evidence=ev, confidence=conf,
            detail="The loop blocks on its next batch. Record `iostat -x 1` and `vmstat 1` during the run (or run "
                   "`envdoctor watch -- <your command>`) to tell a slow disk from saturated CPUs. " + (notseen or ""),
            fix=Fix("Overlap loading with compute: more workers and prefetching, pinned memory, the data on local disk",
                    commands=[loader_line(w, a, gpu=gpu)]))
    return BOTTLENECK.warning(
        "input", f"Input-bound: {what}; neither the disk nor the watched processes saturate the machine",
        category="INPUT_BOUND",
        evidence=ev, confidence=conf,
        detail="The loop blocks on its next batch while nothing on the host is busy: latency, not throughput "
               "(a remote or object store, a lock, sleeps or small reads one at a time, too few workers to overlap "
               "them). " + (notseen or ""),
        fix=Fix("Overlap the waits: more workers and prefetching, or a local copy of the data",
                commands=[loader_line(w, a, gpu=gpu, latency=not cpu_held(a))]))


def _cpu_fix(w: Watch, a: Analysis, gpu: bool) -> Fix:
    """Input-bound on the CPU: more workers while the cores allow them; when the run already has that many,
    cheaper samples or more CPUs (more workers would only queue for the same cores)."""
    if more_workers_help(w, a):
        return Fix("Use every core you have for loading (and move augmentation to the GPU, e.g. DALI or "
                   "torchvision.transforms.v2 on tensors, if that is not enough)", commands=[loader_line(w, a, gpu=gpu)])
    return Fix("The workers already have the cores this run may use: make each sample cheaper (lighter augmentation, "
               "or on the GPU: DALI, torchvision.transforms.v2 on GPU tensors; data stored pre-decoded or at the "
               "training resolution) or run on a machine with more CPUs per GPU", commands=[loader_line(w, a, gpu=gpu)])


def _tree_verdict(w: Watch, a: Analysis, tree, notseen: Optional[str]) -> Finding:
    """The verdict read from the process tree alone (no step timer, no GPU samples): medium confidence at best."""
    kind, text, ev = tree
    detail = ("Read from the watched process tree (the workers' states and CPU use) and the host's disk counters; "
              "wrap the loader in timed() for the share of each step spent waiting. " + (notseen or ""))
    conf = "low" if a.steady_count < 5 else "medium"
    if kind == "storage":
        return BOTTLENECK.warning(
            "storage", f"Input-bound on storage: {text}", category="INPUT_STORAGE_BOUND", evidence=ev,
            confidence=conf, detail=detail,
            fix=Fix("Copy the data set to local NVMe (or pack it into large shards read sequentially: WebDataset, "
                    "TFRecord) so reads stop waiting on the disk", commands=local_copy(w)))
    if kind == "cpu":
        return BOTTLENECK.warning(
            "cpu", f"Input-bound on the CPU: {text}", category="INPUT_CPU_BOUND", evidence=ev, confidence=conf,
            detail="Decoding and augmentation run on the CPU; when the workers are saturated the step waits. "
                   + detail,
            fix=_cpu_fix(w, a, False))
    return BOTTLENECK.info(
        "input-keeps-up", f"The input keeps up: {text}; the step itself is the limit", evidence=ev,
        confidence=conf, detail=detail, category="INPUT_BOUND")


# --------------------------------------------------------------------------- the loader's processes

LOADER = Findings("watch.dataloader", "DATALOADER_IN_MAIN_PROCESS", kinds=("main-process", "reported"))


@check(LOADER, "The DataLoader loads in worker processes")
def dataloader(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    p = a.procs
    said = words_loader(LOADER, w) if not p else None
    if said is not None:
        return [said]  # a paste: the reporter says num_workers is 0 and the run is slow
    if not p:
        raise SkipCheck("no process tree in the recording (a replay, or the processes were not visible): the "
                        "DataLoader's worker count is unknown")
    if not p.get("torch_seen"):
        raise SkipCheck("no watched process loaded torch: no DataLoader to judge")
    if p.get("workers_max"):
        return []
    wait = step_wait(w)
    steps = w.summary.get("step_count") if isinstance(w.summary, dict) else None
    torch_s = (p.get("torch_samples") or 0) * (a.interval_s or 0.5)
    if not steps and torch_s < 2.0:
        raise SkipCheck(f"torch was loaded for only {torch_s:g} s of the recording and no step timer reported: "
                        "too short to say whether a DataLoader runs without workers")
    gs = working(a)
    main = p.get("main_cpu_pct_p50")
    # a warning only where loading in the main process costs this run something: its steps wait for their batch
    # (the step timer), or, without one, the GPUs are underused while the training process is pegged
    if wait is not None and wait < WAIT_INPUT:
        return []  # the input keeps up: num_workers=0 is not what limits this run
    if wait is None:
        if not gs:
            busy = main_busy(LOADER, w, a)
            if busy is not None:
                return [busy]
            raise SkipCheck(f"no worker process, but whether the steps wait for their batch cannot be told: "
                            f"{no_gpu_reason(w)} and no step timer (wrap the loader in timed()), and the training "
                            "process's own state does not show it busy on one core")
        gpu_p50 = pct([g.util_p50 for g in gs if g.util_p50 is not None], 0.5) or 0.0
        if gpu_p50 >= BOUND_P50 or main is None or main < CORE_SATURATED:
            return []  # the GPUs are kept busy, or the training process is not the one loading flat out
    ev = [Evidence("watch.summary.dataloader_workers", 0, ">= 1"),
          Evidence("watch.summary.processes.main_cpu_pct_p50", main)]
    ctxt = []
    if wait is not None:
        ctxt.append(f"steps wait for their batch {100 * wait:.1f}% of the time")
        ev.append(Evidence("watch.summary.data_wait_fraction", wait))
    if gs:
        ctxt.append(f"GPU utilisation p50 {pct([g.util_p50 for g in gs], 0.5):g}%")
    elif wait is None:
        ctxt.append(f"whether it slows this run cannot be told: {no_gpu_reason(w)} and no step timer")
    if steps:
        head = (f"No DataLoader worker process while the loop ran {steps} steps: every batch is loaded in the "
                "training process (num_workers=0)")
    else:
        head = (f"No worker process for {torch_s:g} s after torch loaded: if this run iterates a DataLoader, it "
                "loads every batch in the training process (num_workers=0)")
    return [LOADER.warning(
        "main-process", f"{head}" + (f"; the training process used {main}% of a core (p50)" if main is not None
                                     else "") + "; "
        + "; ".join(ctxt),
        evidence=ev, confidence="high" if steps else "medium",
        detail="With num_workers=0 the training loop stops to read, decode and augment each batch; workers do it "
               "in parallel while the GPU computes. The count is read from the watched process tree. "
               + (unseen_text(w) or ""),
        fix=Fix("Load in worker processes", commands=[loader_line(
            w, a, gpu=bool(gs), latency=wait is not None and wait >= WAIT_INPUT and not cpu_saturated(a, w)
            and not cpu_held(a))]))]


