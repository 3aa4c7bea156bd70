"""What the watch verdict checks share: the recording, its analysis, the host-side evidence, the fixes."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..domain.recording import Analysis, GpuStats, analyze, pct
from ..model.facts import Watch
from ..model.findings import Evidence
from ._watch_cpu import main_waited, others_share_cores, quota_throttled
from ._watch_text import gpu_evidence, gpu_line, local_copy  # noqa: F401  (the watch checks import them from here)
from .base import CheckContext, SkipCheck

BOUND_P50 = 85.0  # steady utilisation at or above: the GPU is the limit
DIPS_MAX = 0.2  # at most this share of steady samples below 70 %
WAIT_INPUT = 0.2  # steps waiting for their batch this share of the time: input-bound
IDLE_P90 = 5.0  # a GPU whose p90 stays below this never worked
STRAGGLER_GAP = 30.0  # points of p50 below the other GPUs' median
DISK_UTIL = 80.0
DISK_AWAIT_MS = 10.0
IOWAIT = 10.0
CPU_SATURATED = 90.0
CORE_SATURATED = 85.0  # one process at this % of a core is pegged
MEM_PRESSURE_PCT = 97.0
THROTTLED_SHARE = 0.1


def recording(ctx: CheckContext) -> Watch:
    w = ctx.facts.watch
    if w is None:
        raise SkipCheck("no watch recording in the facts (envdoctor watch, or watch --replay FILE)", not_applicable="no watch recording")
    if w.status != "ok":
        raise SkipCheck(f"the watch recording is unusable ({w.status}: {w.reason or 'no reason given'})")
    if not w.samples and not (isinstance(w.summary, dict) and (
            w.summary.get("data_wait_fraction") is not None or w.summary.get("loader_warning")
            or w.summary.get("data_storage") or w.summary.get("step_stall_fraction") is not None
            or w.summary.get("reported_symptoms"))):
        # a paste's training log (its data_time) or a framework's loader warning is judged without samples
        raise SkipCheck("the watch recording holds no samples")
    return w


_LAST: List[Any] = [None, None]  # (the Watch judged last, its Analysis)


def analysis_of(w: Watch) -> Analysis:
    """The recording's analysis, made once per recording: every watch check asks for it, and a long replay's
    analysis is the largest part of judging it (ten checks made it ten times). Kept for the last Watch object
    only, compared by identity (facts are frozen, so the same object is the same recording)."""
    if _LAST[0] is w:
        return _LAST[1]
    started = w.summary.get("steps_started_s") if isinstance(w.summary, dict) else None
    a = analyze(w.samples, w.interval_s, started if isinstance(started, (int, float)) else None)
    _LAST[0], _LAST[1] = w, a
    return a


def working(a: Analysis) -> List[GpuStats]:
    return [g for g in a.gpus if g.util_p90 is not None and g.util_p90 >= IDLE_P90]


def no_gpu_reason(w: Watch) -> str:
    why = next((u for u in w.unseen if "GPU" in u), None)
    return why or "no GPU samples in the recording"


def unseen_text(w: Watch) -> Optional[str]:
    return ("Not seen: " + "; ".join(w.unseen) + ".") if w.unseen else None


def confidence(a: Analysis, *, direct: bool, w: Optional[Watch] = None) -> str:
    """high: a direct measurement (step timer, process tree) backs it over enough samples; low: few samples.
    A pasted training log's data_time (``w.summary.step_log_lines``) is a direct measurement over its lines."""
    lines = w.summary.get("step_log_lines") if w is not None and isinstance(w.summary, dict) else None
    if direct and isinstance(lines, int) and not a.sample_count:
        return "high" if lines >= 5 else "medium"
    if a.steady_count < 5:
        return "low"
    return "high" if direct else "medium"


def step_wait(w: Watch) -> Optional[float]:
    v = w.summary.get("data_wait_fraction") if isinstance(w.summary, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# --------------------------------------------------------------------------- the host side


def storage_busy(a: Analysis) -> Optional[Tuple[str, List[Evidence]]]:
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


WORKERS_BLOCKED = 0.5  # the loader workers' observed time in uninterruptible I/O (state D) at or above: storage


def workers_blocked(a: Analysis) -> Optional[Tuple[str, List[Evidence]]]:
    """The loader workers spend most of their time blocked in reads (state D), whatever the disk's own counters
    say (a virtual disk's %util and await are unreliable, and an NFS or FUSE mount has no block device)."""
    p = a.procs
    share = p.get("worker_disk_sleep_share") if p else None
    if not p or not p.get("workers_max") or share is None or share < WORKERS_BLOCKED:
        return None
    reads = "; ".join(f"disk {n} reads {d['read_mbps_p90']:g} MB/s (p90)" for n, d in a.disks.items()
                      if d.get("read_mbps_p90"))
    return (f"the {p['workers_max']} loader workers are blocked in reads {100 * share:.0f}% of the time"
            + (f" ({reads})" if reads else ""),
            [Evidence("watch.summary.processes.worker_disk_sleep_share", share, f"< {WORKERS_BLOCKED:g}")])


WORKERS_COMPUTING = 0.5  # the loader workers' observed time running or waiting for a core (state R) at or above


def workers_computing(a: Analysis, w: Watch) -> Optional[Tuple[str, List[Evidence]]]:
    """The loader workers are running, or ready to run and waiting for a core (state R), most of the time: their
    work is computation, whether they get the cores (each pegged) or other processes hold them (each at a fraction
    of a core, still runnable). A worker with its batches ready sleeps on its index queue (S); one reading waits
    in D."""
    p = a.procs
    share = p.get("worker_running_share") if p else None
    if not p or not p.get("workers_max") or share is None or share < WORKERS_COMPUTING:
        return None
    wcpu = p.get("worker_cpu_pct_p50")
    text = (f"the {p['workers_max']} loader workers are running or waiting for a core {100 * share:.0f}% of the "
            "time (state R)")
    ev = [Evidence("watch.summary.processes.worker_running_share", share, f"< {WORKERS_COMPUTING:g}")]
    if wcpu is not None:
        text += f", each using {wcpu:g}% of a core (p50)"
        ev.append(Evidence("watch.summary.processes.worker_cpu_pct_p50", wcpu))
        busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
        tree = tree_cpus(a, w)
        if wcpu < CORE_SATURATED and busy is not None and busy >= CPU_SATURATED and tree is not None and \
                w.cpu_available and tree < 0.8 * w.cpu_available:
            text += (f": the CPUs are {busy:g}% busy and the watched processes get only {tree:g} of them, "
                     "other processes hold the rest")
    return text, ev


def tree_input_verdict(a: Analysis, w: Watch) -> Optional[Tuple[str, str, List[Evidence]]]:
    """Without a step timer or GPU samples: what the process tree says about the input, as (kind, text,
    evidence), kind "storage", "cpu" or "compute"; None when it says nothing. Workers blocked in reads (state D)
    beside a busy disk are storage-bound; workers pegged at a core each are CPU-bound; a training process pegged
    while its workers idle is its own step's limit (the input keeps up)."""
    p = a.procs
    if not p or not p.get("workers_max"):
        return None
    dsleep = p.get("worker_disk_sleep_share")
    wcpu, main = p.get("worker_cpu_pct_p50"), p.get("main_cpu_pct_p50")
    blocked = workers_blocked(a)
    if blocked:
        return "storage", blocked[0], blocked[1]
    # workers that compute (state R) are not waiting on a disk, however busy another tenant keeps it
    disk = None if workers_computing(a, w) else storage_busy(a)
    if disk and ((dsleep is not None and dsleep >= 0.3) or (wcpu is not None and wcpu < 50)):
        text, ev = disk
        why = (f"the {p['workers_max']} loader workers are blocked in reads {100 * dsleep:.0f}% of the time"
               if dsleep is not None and dsleep >= 0.3 else
               f"the {p['workers_max']} loader workers use only {wcpu:g}% of a core each (p50)")
        return "storage", f"{why}; {text}", ev + [Evidence("watch.summary.processes.worker_disk_sleep_share",
                                                          dsleep, "< 0.3")]
    if wcpu is not None and wcpu >= CORE_SATURATED:
        return "cpu", (f"the {p['workers_max']} loader workers each use {wcpu:g}% of a core (p50)"), \
            [Evidence("watch.summary.processes.worker_cpu_pct_p50", wcpu, f"< {CORE_SATURATED:g}")]
    computing = workers_computing(a, w)
    if computing:
        return "cpu", computing[0], computing[1]
    if main is not None and main >= CORE_SATURATED and (wcpu is None or wcpu < 30) and not disk:
        return "compute", (f"the training process uses {main:g}% of a core (p50) while its "
                           f"{p['workers_max']} workers idle ({wcpu or 0:g}% each)"), \
            [Evidence("watch.summary.processes.main_cpu_pct_p50", main),
             Evidence("watch.summary.processes.worker_cpu_pct_p50", wcpu, "< 30")]
    return None


def oversubscription(a: Analysis, w: Watch) -> Optional[Tuple[float, float, List[Evidence]]]:
    """(runnable threads p50, CPUs, evidence) when the run's threads queue for the cores it may use; None otherwise.

    The watched tree's own threads in state R (running or ready to run) when the sampler read them: what this run
    asks of the cores, whatever other tenants add. Otherwise (a replay's vmstat 'r') the host's run queue while
    the CPUs are saturated and the watched processes are what fills them."""
    cpus = w.cpu_available
    own = a.procs.get("threads_running_p50") if a.procs else None
    if own is not None and cpus:
        if own < 1.5 * cpus:
            return None
        ev = [Evidence("watch.summary.processes.threads_running_p50", own,
                       f"< {1.5 * cpus:g} (1.5 x the {cpus:g} CPUs)")]
        th = a.procs.get("threads_p50")
        if th is not None:
            ev.append(Evidence("watch.summary.processes.threads_p50", th))
        return own, cpus, ev
    rq = (a.host.get("run_queue") or {}).get("p50")
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
    if rq is None or not cpus or busy is None or busy < CPU_SATURATED:
        return None
    tree = tree_cpus(a, w)
    if tree is not None and tree < 0.8 * cpus:
        return None  # another tenant's threads, not this run's
    if rq < 1.5 * cpus:
        return None
    ev = [Evidence("watch.summary.host.run_queue.p50", rq, f"<= {1.5 * cpus:g} (1.5 x the {cpus:g} CPUs)"),
          Evidence("watch.summary.host.cpu_busy_pct.p50", busy)]
    th = a.procs.get("threads_p50") if a.procs else None
    if th is not None:
        ev.append(Evidence("watch.summary.processes.threads_p50", th))
    return rq, cpus, ev


def tree_cpus(a: Analysis, w: Watch) -> Optional[float]:
    """CPUs the watched processes used (p50 of their summed CPU %, in CPUs), when the tree was read."""
    vals = [float(s["procs"]["cpu_pct"]) for s in w.samples[1:]
            if isinstance(s.get("procs"), dict) and isinstance(s["procs"].get("cpu_pct"), (int, float))]
    v = pct(vals, 0.5)
    return round(v / 100.0, 2) if v is not None else None


def cpu_saturated(a: Analysis, w: Watch) -> Optional[Tuple[str, List[Evidence]]]:
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")
    tree = tree_cpus(a, w)
    if busy is not None and busy >= CPU_SATURATED and (tree is None or not w.cpu_available
                                                       or tree >= 0.8 * w.cpu_available):
        # with the process tree read, the run itself must be what fills the CPUs (not another tenant)
        return (f"the CPUs are {busy:g}% busy (p50)" + (f", {tree:g} of them used by the watched processes"
                                                         if tree is not None else ""),
                [Evidence("watch.summary.host.cpu_busy_pct.p50", busy, f"< {CPU_SATURATED:g}")])
    used = (a.host.get("cgroup_cpu_used") or {}).get("p50")
    if used is not None and w.cpu_available and used >= 0.9 * w.cpu_available and (
            tree is None or tree >= 0.8 * w.cpu_available):
        return (f"the container uses {used:g} CPUs (p50) of {cpus_text(w)}",
                [Evidence("watch.summary.host.cgroup_cpu_used.p50", used, f"< {0.9 * w.cpu_available:g}")])
    p = a.procs
    if p.get("workers_max") and (p.get("worker_cpu_pct_p50") or 0) >= CORE_SATURATED:
        return (f"the {p['workers_max']} loader workers each use {p['worker_cpu_pct_p50']:g}% of a core (p50)",
                [Evidence("watch.summary.processes.worker_cpu_pct_p50", p["worker_cpu_pct_p50"],
                          f"< {CORE_SATURATED:g}")])
    computing = workers_computing(a, w)
    if computing:
        return computing
    if p and not p.get("workers_max") and (p.get("main_cpu_pct_p50") or 0) >= CORE_SATURATED:
        return (f"the training process, with no worker processes, uses {p['main_cpu_pct_p50']:g}% of a core (p50)",
                [Evidence("watch.summary.processes.main_cpu_pct_p50", p["main_cpu_pct_p50"],
                          f"< {CORE_SATURATED:g}")])
    return None


def _workers_advice(w: Watch, a: Analysis, latency: bool) -> Tuple[Optional[int], Optional[int], str, int]:
    """(the worker count to propose or None, the run's own count per training process or None, the sizing comment,
    training processes)."""
    ranks = max(1, a.procs.get("trainers_max") or 0, len(working(a)))
    cpus = w.cpu_available
    quota = a.procs.get("cgroup_quota_cpus") if a.procs else None
    cpus_said = cpus_text(w)
    if isinstance(quota, (int, float)) and quota > 0 and (not cpus or quota < cpus):
        # the run's own cgroup has a tighter quota than the watch saw for itself (issue 41)
        cpus, cpus_said = float(quota), f"a CPU quota of {quota:g} CPUs (the run's cgroup)"
    procs = f"{ranks} training process{'es' if ranks > 1 else ''}"
    have = a.procs.get("workers_max") if a.procs else None
    per_rank = int(have // ranks) if isinstance(have, (int, float)) and have else (0 if a.procs else None)
    if cpus and latency:
        # the loads wait rather than compute, so every core may run a worker (the training process waits too);
        # never more workers than cores: on a small box that only adds switching
        n: Optional[int] = max(1, min(16, int(cpus // ranks)))
        size = f"   # {cpus_said} / {procs}: the loads wait rather than compute, one worker per core"
    elif cpus:
        # computing workers need a core beside each training process: with none left over (a quota of 1.5
        # CPUs, one training process) a worker only takes turns with the step on the same core (issue 41)
        n = max(0, min(16, int(cpus // ranks) - 1))
        size = f"   # {cpus_said} available / {procs}, one core each kept"
        others = others_share_cores(w)
        if per_rank is not None and n > per_rank and (quota_throttled(a) or (main_waited(a) and others is None)):
            # the training process already waits for a core its own quota or its own threads hold: a worker would
            # queue for the same cores (issue 41 measured num_workers 0 -> 1 at 0.93x on a 2-core box at load 15)
            n = per_rank
            size = (f"   # {cpus_said} / {procs}, but the training process already waits for a core (its quota or "
                    "its own threads hold them)")
        elif others is not None and per_rank is not None and n > per_rank:
            # other processes' threads wait for the same cores: the scheduler shares them by thread, and a worker
            # takes this run a share (measured 0.95-1.68x for 0 -> 1, 1.20-1.42x for 1 -> 2 at load 6-13 on 2
            # cores; checks/_watch_cpu.py)
            size += (f"; other processes' threads wait for these cores too ({others:g} ready to run, p50): the "
                     "workers take this run a share of them")
    else:
        n, size = None, ""
    return n, per_rank, size, ranks


def more_workers_help(w: Watch, a: Analysis, latency: bool = False) -> bool:
    """Whether proposing more loader workers can speed this run up: False when the run already has as many per
    training process as the CPUs it may use allow (more would queue for the same cores: issue 41 measured
    such advice making a run 0.59-0.64x as fast). Unknown CPUs or an unknown count: True (the advice then
    says how to size it, not a number)."""
    n, have, _, _ = _workers_advice(w, a, latency)
    return n is None or have is None or n > have


def cpus_text(w: Watch) -> str:
    """The CPUs the run may use, said with where the number comes from when it is a quota: a container's CPU
    quota (cgroup cpu.max) caps a run below the cores it sees, and the fix differs (raise the quota)."""
    cpus = w.cpu_available
    if cpus is None:
        return "an unknown number of CPUs"
    src = w.summary.get("cpu_available_from") if isinstance(w.summary, dict) else None
    if src == "cgroup CPU quota":
        return f"a CPU quota of {cpus:g} CPUs (the cgroup's cpu.max)"
    return f"{cpus:g} CPUs"


def loader_line(w: Watch, a: Analysis, gpu: bool, latency: bool = False) -> str:
    """A DataLoader(...) line sized to the CPUs this run may use: one core per training process kept free; a
    latency-bound load (waits with idle CPUs) overlaps more waits than there are cores. Never the run's own
    worker count or fewer as the fix: when the run already has what the cores allow, the line keeps its count
    and says so (persistent workers and prefetching still apply)."""
    n, have, size, ranks = _workers_advice(w, a, latency)
    pin = ", pin_memory=True" if gpu else ""
    if n is None:
        if have:
            return (f"DataLoader(dataset, batch_size=..., num_workers={have}{pin}, persistent_workers=True, "
                    f"prefetch_factor=4)   # it has {have}: add workers only while the CPUs per training process "
                    "minus one allow")
        return (f"DataLoader(dataset, batch_size=..., num_workers=4{pin}, persistent_workers=True, prefetch_factor=4)"
                "   # size num_workers to the CPUs per training process minus one")
    if have is not None and n <= have:
        return (f"DataLoader(dataset, batch_size=..., num_workers={have}{pin}, persistent_workers=True, "
                f"prefetch_factor=4)   # keep {have}: {size.strip(' #')}; more workers would queue for the same "
                "cores")
    return f"DataLoader(dataset, batch_size=..., num_workers={n}{pin}, persistent_workers=True, prefetch_factor=4)" + size


