"""Verdicts on a watched run (`envdoctor watch`) or a replayed recording: what limits the training.

The checklist people follow by eye with `nvidia-smi dmon` and `iostat -x` side by side, as rules over the
samples' steady state (envdoctor/watch/analysis.py: warm-up, stalls and cool-down apart, percentiles not single
samples):
- GPUs busy nearly all the time (p50 >= 85 %, few dips): the GPU is the limit (GPU_BOUND);
- GPUs underused while the disk is busy or slow (%util, await, iowait): INPUT_STORAGE_BOUND;
- underused while the CPUs (or the loader's processes) are saturated: INPUT_CPU_BOUND;
- steps that wait for their batch (the step timer) with neither explained: INPUT_BOUND;
- underused with neither disk nor CPU busy and no wait for data: GPU_UNDERFED (small batches, syncs, launches);
- a DataLoader that loads in the main process (no worker processes in the tree): DATALOADER_IN_MAIN_PROCESS;
- one GPU idle while the others work, or one never working, all stopping together, clocks held back.
Each finding says how sure it is and what the recording could not show.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..facts import Watch
from ..findings import Evidence, Finding, Fix
from ..remedies.shell import command
from ..watch.analysis import Analysis, GpuStats, analyze, pct
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

BOUND_P50 = 85.0  # steady utilisation at or above: the GPU is the limit
DIPS_MAX = 0.2  # at most this share of steady samples below 70 %
WAIT_INPUT = 0.2  # steps waiting for their batch this share of the time: input-bound
WAIT_HIGH = 0.3
IDLE_P90 = 5.0  # a GPU whose p90 stays below this never worked
STRAGGLER_GAP = 30.0  # points of p50 below the other GPUs' median
DISK_UTIL = 80.0
DISK_AWAIT_MS = 10.0
IOWAIT = 10.0
CPU_SATURATED = 90.0
CORE_SATURATED = 85.0  # one process at this % of a core is pegged
MEM_PRESSURE_PCT = 97.0
THROTTLED_SHARE = 0.1


def _watch(ctx: CheckContext) -> Watch:
    w = ctx.facts.watch
    if w is None:
        raise SkipCheck("no watch recording in the facts (envdoctor watch, or watch --replay FILE)")
    if w.status != "ok":
        raise SkipCheck(f"the watch recording is unusable ({w.status}: {w.reason or 'no reason given'})")
    if not w.samples:
        raise SkipCheck("the watch recording holds no samples")
    return w


def _analysis(w: Watch) -> Analysis:
    return analyze(w.samples, w.interval_s)


def _working(a: Analysis) -> List[GpuStats]:
    return [g for g in a.gpus if g.util_p90 is not None and g.util_p90 >= IDLE_P90]


def _no_gpu_reason(w: Watch) -> str:
    why = next((u for u in w.unseen if "GPU" in u), None)
    return why or "no GPU samples in the recording"


def _unseen_text(w: Watch) -> Optional[str]:
    return ("Not seen: " + "; ".join(w.unseen) + ".") if w.unseen else None


def _confidence(a: Analysis, *, direct: bool) -> str:
    """high: a direct measurement (step timer, process tree) backs it over enough samples; low: few samples."""
    if a.steady_count < 5:
        return "low"
    return "high" if direct else "medium"


def _step_wait(w: Watch) -> Optional[float]:
    v = w.summary.get("data_wait_fraction") if isinstance(w.summary, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# --------------------------------------------------------------------------- the host side


def _storage_busy(a: Analysis) -> Optional[Tuple[str, List[Evidence]]]:
    for name, d in a.disks.items():
        util, aw, rd = d.get("util_pct_p50"), d.get("await_ms_p50"), d.get("read_mbps_p50")
        if util is not None and util >= DISK_UTIL:
            return (f"disk {name} busy {util:g}% of the time (p50), reading {rd or 0:g} MB/s",
                    [Evidence(f"watch.summary.disks.{name}.util_pct_p50", util, f"< {DISK_UTIL:g}")])
        if aw is not None and aw >= DISK_AWAIT_MS and (rd or 0) > 1:
            return (f"disk {name} answers in {aw:g} ms (await p50) while reading {rd:g} MB/s",
                    [Evidence(f"watch.summary.disks.{name}.await_ms_p50", aw, f"< {DISK_AWAIT_MS:g} ms")])
    iow = (a.host.get("cpu_iowait_pct") or {}).get("p50")
    if iow is not None and iow >= IOWAIT:
        return (f"CPUs wait for I/O {iow:g}% of the time (iowait p50)",
                [Evidence("watch.summary.host.cpu_iowait_pct.p50", iow, f"< {IOWAIT:g}")])
    return None


def _tree_cpus(a: Analysis, w: Watch) -> Optional[float]:
    """CPUs the watched processes used (p50 of their summed CPU %, in CPUs), when the tree was read."""
    vals = [float(s["procs"]["cpu_pct"]) for s in w.samples[1:]
            if isinstance(s.get("procs"), dict) and isinstance(s["procs"].get("cpu_pct"), (int, float))]
    v = pct(vals, 0.5)
    return round(v / 100.0, 2) if v is not None else None


def _cpu_saturated(a: Analysis, w: Watch) -> Optional[Tuple[str, List[Evidence]]]:
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
    tree = _tree_cpus(a, w)
    if busy is not None and busy >= CPU_SATURATED and (tree is None or not w.cpu_available
                                                       or tree >= 0.8 * w.cpu_available):
        # with the process tree read, the run itself must be what fills the CPUs (not another tenant)
        return (f"the CPUs are {busy:g}% busy (p50)" + (f", {tree:g} of them used by the watched processes"
                                                         if tree is not None else ""),
                [Evidence("watch.summary.host.cpu_busy_pct.p50", busy, f"< {CPU_SATURATED:g}")])
    used = (a.host.get("cgroup_cpu_used") or {}).get("p50")
    if used is not None and w.cpu_available and used >= 0.9 * w.cpu_available and (
            tree is None or tree >= 0.8 * w.cpu_available):
        return (f"the container uses {used:g} of its {w.cpu_available:g} CPUs (p50)",
                [Evidence("watch.summary.host.cgroup_cpu_used.p50", used, f"< {0.9 * w.cpu_available:g}")])
    p = a.procs
    if p.get("workers_max") and (p.get("worker_cpu_pct_p50") or 0) >= CORE_SATURATED:
        return (f"the {p['workers_max']} loader workers each use {p['worker_cpu_pct_p50']:g}% of a core (p50)",
                [Evidence("watch.summary.processes.worker_cpu_pct_p50", p["worker_cpu_pct_p50"],
                          f"< {CORE_SATURATED:g}")])
    if p and not p.get("workers_max") and (p.get("main_cpu_pct_p50") or 0) >= CORE_SATURATED:
        return (f"the training process, with no worker processes, uses {p['main_cpu_pct_p50']:g}% of a core (p50)",
                [Evidence("watch.summary.processes.main_cpu_pct_p50", p["main_cpu_pct_p50"],
                          f"< {CORE_SATURATED:g}")])
    return None


def loader_line(w: Watch, a: Analysis, gpu: bool, latency: bool = False) -> str:
    """A DataLoader(...) line sized to the CPUs this run may use: one core per training process kept free; a
    latency-bound load (waits with idle CPUs) overlaps more waits than there are cores."""
    ranks = max(1, a.procs.get("trainers_max") or 0, len(_working(a)))
    cpus = w.cpu_available
    procs = f"{ranks} training process{'es' if ranks > 1 else ''}"
    if cpus and latency:
        n = max(2, min(16, int(2 * cpus // ranks)))
        size = f"   # {cpus:g} CPUs / {procs}: the loads wait rather than compute, so two workers per core"
    elif cpus:
        n = max(1, min(16, int(cpus // ranks) - 1))
        size = f"   # {cpus:g} CPUs available / {procs}, one core each kept"
    else:
        n, size = 4, "   # size num_workers to the CPUs per training process minus one"
    pin = ", pin_memory=True" if gpu else ""
    return f"DataLoader(dataset, batch_size=..., num_workers={n}{pin}, persistent_workers=True, prefetch_factor=4)" + size


def _local_copy(w: Watch) -> List[str]:
    nvme = w.summary.get("local_nvme") if isinstance(w.summary, dict) else None
    src = (w.data_paths or ["/path/to/data"])[0]
    if isinstance(nvme, dict) and nvme.get("mount"):
        dest = nvme["mount"].rstrip("/") + "/data/"
        return [command("rsync", "-a", src.rstrip("/") + "/", dest,
                        comment=f"local NVMe {nvme.get('device', '')} with {nvme.get('free_gb', '?')} GB free")]
    return [command("rsync", "-a", src.rstrip("/") + "/", "/local_nvme/data/",
                    comment="no local NVMe was found here: pick the fastest local disk")]


def _gpu_line(gs: List[GpuStats]) -> str:
    parts = []
    for g in gs[:8]:
        parts.append(f"GPU {g.index} p10/p50/p90 {g.util_p10:g}/{g.util_p50:g}/{g.util_p90:g}%")
    return ", ".join(parts) + (f" (+{len(gs) - 8} more)" if len(gs) > 8 else "")


def _gpu_evidence(gs: List[GpuStats]) -> List[Evidence]:
    return [Evidence(f"watch.summary.gpus[{g.index}].util_p50", g.util_p50) for g in gs[:8]]


# --------------------------------------------------------------------------- the verdict

BOTTLENECK = Findings("watch.bottleneck", "GPU_BOUND")


@check("watch.bottleneck", "What limits the watched run",
       categories=("GPU_BOUND", "INPUT_STORAGE_BOUND", "INPUT_CPU_BOUND", "INPUT_BOUND", "GPU_UNDERFED",
                   "COMMUNICATION_BOUND"))
def bottleneck(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    wait = _step_wait(w)
    gs = _working(a)
    notseen = _unseen_text(w)
    storage = _storage_busy(a)
    cpu = _cpu_saturated(a, w)
    wait_ev = [Evidence("watch.summary.data_wait_fraction", wait, f"< {WAIT_INPUT:g}")] if wait is not None else []
    if not gs:
        if wait is None:
            raise SkipCheck(f"{_no_gpu_reason(w)}, and no step timer (timed(loader)) reported: whether the run "
                            "waits for its input cannot be told")
        if wait >= WAIT_INPUT:
            return [_input(w, a, wait, storage, cpu, wait_ev, notseen, gpu=False)]
        return [BOTTLENECK.info(
            "input-keeps-up", f"Steps wait for their batch {100 * wait:.1f}% of the time: the input keeps up; "
            f"the step itself is the limit ({_no_gpu_reason(w)})",
            evidence=wait_ev, detail=notseen, confidence=_confidence(a, direct=True), category="INPUT_BOUND")]
    if a.lags and sum(e.duration_s for e in a.lags) >= 0.3 * max(a.duration_s - a.warmup_s, 1e-9):
        raise SkipCheck("one GPU lagged for most of the recording (watch.straggler): the others' utilisation is "
                        "waiting for it, not work")
    p50 = pct([g.util_p50 for g in gs if g.util_p50 is not None], 0.5) or 0.0
    dips = pct([g.dips_fraction for g in gs if g.dips_fraction is not None], 0.5) or 0.0
    smact = pct([g.sm_active_p50 for g in gs if g.sm_active_p50 is not None], 0.5)
    spread = pct([(g.util_p90 or 0) - (g.util_p10 or 0) for g in gs], 0.5) or 0.0
    line = _gpu_line(gs)
    ev = _gpu_evidence(gs) + wait_ev
    comm = _comm_wait(w, gs)
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
            evidence=ev, confidence=_confidence(a, direct=wait is not None),
            detail=(f"{a.steady_count} steady samples over {a.duration_s:g} s"
                    + (f", {int(dips * 100)}% of them below 70%" if dips else "")
                    + (f"; steps wait for data only {100 * wait:.1f}% of the time" if wait is not None else "")
                    + ". " + (notseen or "")),
            fix=Fix("To go faster: mixed precision (torch.autocast(device_type='cuda', dtype=torch.bfloat16)), "
                    "torch.compile, TF32 matmuls (torch.backends.cuda.matmul.allow_tf32 = True), or a bigger GPU"))]
    if storage or cpu or (wait is not None and wait >= WAIT_INPUT):
        return [_input(w, a, wait, storage, cpu, ev, notseen, gpu=True, line=line)]
    smtext = f", SM activity {smact:g}% (p50)" if smact is not None else ""
    if a.has_host or a.has_procs:
        return [BOTTLENECK.warning(
            "underfed", f"The GPUs are underused ({line}{smtext}) while neither the disk nor the CPUs are busy"
            + (f" and steps wait for data only {100 * wait:.1f}% of the time" if wait is not None else ""),
            category="GPU_UNDERFED", evidence=ev, confidence=_confidence(a, direct=wait is not None),
            detail="Typical causes: batches too small to fill the GPU, host-device synchronisation every step "
                   "(.item(), .cpu(), printing losses), many small kernel launches. " + (notseen or ""),
            fix=Fix("Raise the batch size (or use gradient accumulation), remove per-step .item()/.cpu() syncs, "
                    "try torch.compile or CUDA graphs; torch.profiler shows where the step's time goes"))]
    if spread >= 25:
        return [BOTTLENECK.warning(
            "input-pattern", f"GPU utilisation jumps between high and low ({line}{smtext}): the pattern of an input "
            "pipeline that cannot keep up; this recording has no host samples to say whether the disk or the CPU",
            category="INPUT_BOUND", evidence=ev, confidence="low" if a.steady_count < 5 else "medium",
            detail="Record `iostat -x 1` and `vmstat 1` next to it, or run `envdoctor watch`, to tell the disk "
                   "from the CPU. " + (notseen or ""),
            fix=Fix("Give the loader more workers and pin memory: " + loader_line(w, a, gpu=True)))]
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
    if storage:
        text, sev = storage
        return BOTTLENECK.warning(
            "storage", f"Input-bound on storage: {what}; {text}", category="INPUT_STORAGE_BOUND",
            evidence=ev + sev, confidence=_confidence(a, direct=direct), detail=notseen,
            fix=Fix("Copy the data set to local NVMe (or pack it into large shards read sequentially: WebDataset, "
                    "TFRecord) so reads stop waiting on the disk", commands=_local_copy(w)))
    if cpu:
        text, sev = cpu
        return BOTTLENECK.warning(
            "cpu", f"Input-bound on the CPU: {what}; {text}", category="INPUT_CPU_BOUND",
            evidence=ev + sev, confidence=_confidence(a, direct=direct),
            detail="Decoding and augmentation run on the CPU; when the cores are saturated the GPU waits. "
                   + (notseen or ""),
            fix=Fix("Use every core you have for loading (and move augmentation to the GPU, e.g. DALI or "
                    "torchvision.transforms.v2 on tensors, if that is not enough)",
                    commands=[loader_line(w, a, gpu=gpu)]))
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
    tree = _tree_cpus(a, w)
    others = (f" (the CPUs are {busy:g}% busy, but the watched processes use only {tree:g} CPUs: other "
              "processes hold them)") if busy is not None and busy >= CPU_SATURATED and tree is not None else ""
    return BOTTLENECK.warning(
        "input", f"Input-bound: {what}; neither the disk nor the watched processes saturate the machine{others}",
        category="INPUT_BOUND",
        evidence=ev, confidence=_confidence(a, direct=direct),
        detail="The loop blocks on its next batch while nothing on the host is busy: latency, not throughput "
               "(a remote or object store, a lock, sleeps or small reads one at a time, too few workers to overlap "
               "them). " + (notseen or ""),
        fix=Fix("Overlap the waits: more workers and prefetching, or a local copy of the data",
                commands=[loader_line(w, a, gpu=gpu, latency=True)]))


def _comm_wait(w: Watch, gs: List[GpuStats]) -> Optional[float]:
    """Share of steady samples where a working GPU shows >= 80 % utilisation at under half its p90 power
    (median over GPUs); None without power readings or with one GPU."""
    if len(gs) < 2:
        return None
    shares = []
    for g in gs:
        if not g.power_p90_w:
            continue
        rows = [x for s in w.samples for x in (s.get("gpus") or []) if x.get("index") == g.index
                and isinstance(x.get("util_pct"), (int, float)) and isinstance(x.get("power_w"), (int, float))]
        if rows:
            shares.append(sum(1 for x in rows if x["util_pct"] >= 80 and x["power_w"] < 0.5 * g.power_p90_w)
                          / len(rows))
    return pct(shares, 0.5) if len(shares) >= 2 else None


# --------------------------------------------------------------------------- the loader's processes

LOADER = Findings("watch.dataloader", "DATALOADER_IN_MAIN_PROCESS")


@check(LOADER, "The DataLoader loads in worker processes")
def dataloader(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    p = a.procs
    if not p:
        raise SkipCheck("no process tree in the recording (a replay, or the processes were not visible): the "
                        "DataLoader's worker count is unknown")
    if not p.get("torch_seen"):
        raise SkipCheck("no watched process loaded torch: no DataLoader to judge")
    if p.get("workers_max"):
        return []
    wait = _step_wait(w)
    steps = w.summary.get("step_count") if isinstance(w.summary, dict) else None
    torch_s = (p.get("torch_samples") or 0) * (a.interval_s or 0.5)
    if not steps and torch_s < 2.0:
        raise SkipCheck(f"torch was loaded for only {torch_s:g} s of the recording and no step timer reported: "
                        "too short to say whether a DataLoader runs without workers")
    gs = _working(a)
    main = p.get("main_cpu_pct_p50")
    ev = [Evidence("watch.summary.dataloader_workers", 0, ">= 1"),
          Evidence("watch.summary.processes.main_cpu_pct_p50", main)]
    ctxt = []
    if wait is not None:
        ctxt.append(f"steps wait for their batch {100 * wait:.1f}% of the time")
        ev.append(Evidence("watch.summary.data_wait_fraction", wait))
    if gs:
        ctxt.append(f"GPU utilisation p50 {pct([g.util_p50 for g in gs], 0.5):g}%")
    elif wait is None:
        ctxt.append(f"whether it slows this run cannot be told: {_no_gpu_reason(w)} and no step timer")
    if steps:
        head = (f"No DataLoader worker process while the loop ran {steps} steps: every batch is loaded in the "
                "training process (num_workers=0)")
    else:
        head = (f"No worker process for {torch_s:g} s after torch loaded: if this run iterates a DataLoader, it "
                "loads every batch in the training process (num_workers=0)")
    return [LOADER.warning(
        "main-process", f"{head}; the training process used {main if main is not None else '?'}% of a core (p50); "
        + "; ".join(ctxt),
        evidence=ev, confidence="high" if steps else "medium",
        detail="With num_workers=0 the training loop stops to read, decode and augment each batch; workers do it "
               "in parallel while the GPU computes. The count is read from the watched process tree. "
               + (_unseen_text(w) or ""),
        fix=Fix("Load in worker processes", commands=[loader_line(w, a, gpu=bool(gs))]))]


# --------------------------------------------------------------------------- GPUs one by one

IDLE = Findings("watch.idle-gpu", "GPU_IDLE_UNUSED")


@check(IDLE, "Every GPU of the run does work")
def idle_gpu(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    if not a.gpus or all(g.util_p90 is None for g in a.gpus):
        raise SkipCheck(_no_gpu_reason(w))
    idle = [g for g in a.gpus if g.util_p90 is not None and g.util_p90 < IDLE_P90]
    if not idle:
        return []
    ev = [Evidence(f"watch.summary.gpus[{g.index}].util_p90", g.util_p90, f">= {IDLE_P90:g}") for g in idle]
    def mem(g):
        return f", holding {g.mem_used_mib_max:g} MiB" if g.mem_used_mib_max is not None else ""
    names = ", ".join(f"GPU {g.index}{mem(g)}" for g in idle)
    if len(idle) == len(a.gpus):
        return [IDLE.warning(
            "all-idle", f"No GPU did any work in {a.sample_count} samples ({a.duration_s:g} s): {names}",
            evidence=ev, confidence=_confidence(a, direct=False),
            detail="Either the job has not started using the GPUs yet (loading the model, data or a compile), it "
                   "runs on the CPU, or it waits on its input the whole time (a DataLoader in the main process "
                   "with heavy augmentation shows this). " + (_unseen_text(w) or ""),
            fix=Fix("Check that the model and the batches are on the GPU (.to('cuda')) and watch past the start-up; "
                    "if the GPU waits on input, see watch.bottleneck"))]
    busy = [g for g in a.gpus if g not in idle]
    return [IDLE.warning(
        "unused", f"{names} did no work (utilisation p90 under {IDLE_P90:g}%) while "
        + ", ".join(f"GPU {g.index} ran at p50 {g.util_p50:g}%" for g in busy[:4]),
        evidence=ev, confidence=_confidence(a, direct=False),
        detail="A GPU given to the job that never works: the code uses one device (DataParallel not applied, "
               "a hard-coded cuda:0, CUDA_VISIBLE_DEVICES wider than the launch), or a framework reserved its "
               "memory without running on it. If nobody meant to use it, it is only idle. "
               + (_unseen_text(w) or ""),
        fix=Fix("Launch one process per GPU (torchrun --nproc_per_node=<GPUs>) with DistributedDataParallel, or "
                "hide the unused GPU (CUDA_VISIBLE_DEVICES) so it can serve another job"))]


STRAGGLER = Findings("watch.straggler", "GPU_STRAGGLER")


@check(STRAGGLER, "No GPU lags behind the others")
def straggler(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    working = _working(a)
    if len(working) < 2:
        raise SkipCheck("fewer than two working GPUs in the recording: nothing to compare")
    out: List[Finding] = []
    seen = set()
    for e in a.lags:
        if e.gpu in seen or e.gpu not in {g.index for g in working}:
            continue
        seen.add(e.gpu)
        drop = (f"; meanwhile the other GPUs' power fell {e.others_power_drop_pct:g}% at 'full' utilisation: they "
                "were waiting for it in a collective") if e.others_power_drop_pct and e.others_power_drop_pct > 25 \
            else ""
        n = sum(1 for x in a.lags if x.gpu == e.gpu)
        total = round(sum(x.duration_s for x in a.lags if x.gpu == e.gpu), 1)
        out.append(STRAGGLER.warning(
            "lagging", f"GPU {e.gpu} stood idle for {total:g} s ({n} episode{'s' if n > 1 else ''}, the longest "
            f"{max(x.duration_s for x in a.lags if x.gpu == e.gpu):g} s from t={e.start_s:g} s) while the others "
            f"worked{drop}",
            evidence=[Evidence(f"watch.summary.lags[{a.lags.index(e)}].duration_s", e.duration_s)],
            confidence=_confidence(a, direct=False),
            detail="One rank doing extra work stops them all at the next collective. Periodic episodes on rank 0 "
                   "are usually rank-0-only work: saving a checkpoint, evaluation, logging; otherwise a slower GPU "
                   "(clocks, throttling) or an uneven batch. " + (_unseen_text(w) or ""),
            fix=Fix("Make rank-0 work asynchronous or shared (torch.distributed.checkpoint.async_save, save less "
                    "often, evaluate on every rank); if the same GPU always lags, compare its clocks "
                    "(nvidia-smi -q -d CLOCK,PERFORMANCE)")))
    med = pct([g.util_p50 for g in working], 0.5) or 0.0
    for g in working:
        if g.index in seen:
            continue
        others = pct([x.util_p50 for x in working if x is not g], 0.5) or 0.0
        if others - (g.util_p50 or 0) >= STRAGGLER_GAP and others >= 50:
            hot = f"; it runs at {g.temperature_max_c:g} °C" if g.temperature_max_c else ""
            out.append(STRAGGLER.warning(
                "slower", f"GPU {g.index} works at p50 {g.util_p50:g}% while the others reach {others:g}% "
                f"(median of all {med:g}%){hot}",
                evidence=[Evidence(f"watch.summary.gpus[{g.index}].util_p50", g.util_p50, f">= {others - 30:g}")],
                confidence=_confidence(a, direct=False),
                detail="An uneven split (nn.DataParallel gathers on GPU 0 and gives the others less), a slower or "
                       "throttled GPU, or a rank with more work. The recording cannot tell which without clocks "
                       "and throttle reasons. " + (_unseen_text(w) or ""),
                fix=Fix("Use DistributedDataParallel (one process per GPU) rather than nn.DataParallel; compare the "
                        "GPUs' clocks and throttle reasons (nvidia-smi -q -d CLOCK,PERFORMANCE)")))
    return out


# --------------------------------------------------------------------------- stalls, memory, clocks

STALLS = Findings("watch.stalls", "CHECKPOINT_STALL")


@check(STALLS, "The GPUs do not stop together mid-run", categories=("CHECKPOINT_STALL", "GPU_UNDERFED"))
def stalls(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    if not _working(a):
        raise SkipCheck(_no_gpu_reason(w) if not a.gpus else "no GPU worked in the recording: no stall to tell")
    if not a.stalls:
        return []
    total = round(sum(e.duration_s for e in a.stalls), 1)
    share = total / max(a.duration_s, 1e-9)
    longest = max(e.duration_s for e in a.stalls)
    ev = [Evidence(f"watch.summary.stalls[{i}].duration_s", e.duration_s) for i, e in enumerate(a.stalls[:5])]
    writes = [e.disk_write_mbps for e in a.stalls if e.disk_write_mbps is not None]
    text = (f"All GPUs stopped together {len(a.stalls)} time{'s' if len(a.stalls) > 1 else ''} for {total:g} s "
            f"({100 * share:.0f}% of the run, the longest {longest:g} s)")
    if writes and max(writes) >= 50:
        return [STALLS.warning(
            "checkpoint", f"{text} while the disk wrote {max(writes):g} MB/s: checkpoint saves", evidence=ev,
            confidence=_confidence(a, direct=False), detail=_unseen_text(w),
            fix=Fix("Save asynchronously (torch.distributed.checkpoint.async_save, or a background thread after "
                    "copying the state to CPU), less often, or to a faster local disk"))]
    return [STALLS.warning(
        "stall", f"{text}: the pattern of a checkpoint save, an evaluation pass or a synchronisation"
        + ("" if writes else "; no disk samples to tell a checkpoint write"),
        category="GPU_UNDERFED", evidence=ev, confidence="low" if not writes else "medium",
        detail=_unseen_text(w),
        fix=Fix("Find what runs at those times (checkpoint, eval, logging): save asynchronously, evaluate less often"))]


MEMORY = Findings("watch.gpu-memory", "GPU_MEMORY_PRESSURE")


@check(MEMORY, "GPU memory has headroom")
def gpu_memory(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    known = [g for g in a.gpus if g.mem_used_pct_p90 is not None]
    if not known:
        raise SkipCheck("GPU memory used against total unknown in the recording" if a.gpus else _no_gpu_reason(w))
    full = [g for g in known if g.mem_used_pct_p90 >= MEM_PRESSURE_PCT]
    if not full:
        return []
    return [MEMORY.warning(
        "nearly-full", "GPU memory nearly full: " + ", ".join(
            f"GPU {g.index} {g.mem_used_pct_p90:g}% of {g.mem_total_mib:g} MiB (p90)" for g in full),
        evidence=[Evidence(f"watch.summary.gpus[{g.index}].mem_used_pct_p90", g.mem_used_pct_p90,
                           f"< {MEM_PRESSURE_PCT:g}") for g in full],
        confidence=_confidence(a, direct=False),
        detail="At the edge of memory PyTorch's caching allocator frees and retries (torch.cuda.memory_stats()"
               "['num_alloc_retries'] counts it), each retry a synchronisation, and the next larger batch fails "
               "with out-of-memory. High utilisation with full memory is a truly compute-bound run.",
        fix=Fix("Cut memory per sample: mixed precision (bf16), activation checkpointing, a smaller batch with "
                "gradient accumulation; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation"))]


THROTTLE = Findings("watch.throttle", "GPU_THROTTLED")


@check(THROTTLE, "GPU clocks are not held back during the run")
def throttle(ctx: CheckContext) -> List[Finding]:
    w = _watch(ctx)
    a = _analysis(w)
    judged = [g for g in a.gpus if g.throttled_fraction is not None]
    if not judged:
        raise SkipCheck("no clock-event (throttle) readings in the recording" if a.gpus else _no_gpu_reason(w))
    hit = [g for g in judged if g.throttled_fraction >= THROTTLED_SHARE]
    if not hit:
        return []
    return [THROTTLE.warning(
        "during-run", "Clocks held back during the run: " + ", ".join(
            f"GPU {g.index} {100 * g.throttled_fraction:.0f}% of steady samples ({', '.join(g.throttle_reasons)}"
            + (f", up to {g.temperature_max_c:g} °C" if g.temperature_max_c else "") + ")" for g in hit),
        evidence=[Evidence(f"watch.summary.gpus[{g.index}].throttled_fraction", g.throttled_fraction,
                           f"< {THROTTLED_SHARE:g}") for g in hit],
        confidence=_confidence(a, direct=True),
        detail="Power or thermal limits lower the SM clock under load; every step takes longer by about the clock "
               "ratio. " + (_unseen_text(w) or ""),
        fix=Fix("Check cooling (fans, airflow, ambient) and the power limit (nvidia-smi -q -d POWER; restore it "
                "with sudo nvidia-smi -pl <default>)"))]


