"""Watch verdicts on the host side of a run: /dev/shm filling up, threads queueing for the CPUs (the watched
processes' own runnable threads while the run trains; the host's run queue where a replay has only that)."""

from __future__ import annotations

from typing import List

from ..model.findings import Evidence, Finding, Fix
from ..remedies.shell import command as shell_command
from ._watch import analysis_of, confidence, cpus_text, oversubscription, recording, unseen_text
from ._watch_cpu import others_share_cores
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


SHM = Findings("watch.shm", "SHM_TOO_SMALL", kinds=("nearly-full",))


@check(SHM, "/dev/shm has room for the loader's batches during the run")
def shm(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    total = w.summary.get("shm_total_bytes") if isinstance(w.summary, dict) else None
    used = (a.host.get("shm_used_bytes") or {}).get("max")
    if not isinstance(total, (int, float)) or not total or used is None:
        raise SkipCheck("/dev/shm use during the run unknown (a replay, or /dev/shm not readable)")
    share = used / total
    if share < 0.9:
        return []
    gib = 2**30
    return [SHM.warning(
        "nearly-full", f"/dev/shm reached {used / gib:.2f} of {total / gib:.2f} GiB ({100 * share:.0f}%) during the run",
        evidence=[Evidence("watch.summary.host.shm_used_bytes.max", used, f"< {0.9 * total:.0f}")],
        confidence="high",
        detail="DataLoader workers hand batches to the training process through shared memory; when it fills they "
               "die with 'bus error' or 'unable to write to file </torch_...>'. Docker's default is 64 MB.",
        fix=Fix("Give the container more shared memory", commands=["docker run --shm-size=16g ...   # or --ipc=host"]))]


OVERSUB = Findings("watch.oversubscribed", "CPU_STARVED", kinds=("oversubscribed",))


@check(OVERSUB, "The run's threads do not queue for the CPUs")
def oversubscribed(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    own = a.procs.get("threads_running_p50") if a.procs else None
    if own is None and "run_queue" not in a.host:
        raise SkipCheck("no run-queue samples (a live watch reads /proc/stat; a replay needs vmstat's 'r' column)")
    if not w.cpu_available:
        raise SkipCheck("the CPUs the run may use are unknown")
    if own is None and "cpu_busy_pct" not in a.host:
        raise SkipCheck("no CPU samples in the recording")
    found = oversubscription(a, w)
    if found is None:
        return []
    rq, cpus, ev = found
    whose = "of the watched processes' threads" if own is not None else "threads"
    ranks = max(1, a.procs.get("trainers_max") or 0) if a.procs else 1
    workers = (a.procs.get("workers_max") or 0) if a.procs else 0
    # the loader workers keep their count (they feed the GPU; issue 41 measured "num_workers=1" here making a run
    # 0.64x as fast): the training processes' thread pools take the cores the workers leave, at least one each
    per_rank = max(1, int((cpus - workers) // ranks)) if workers else max(1, int(cpus // ranks))
    threads = f"{per_rank}"
    others = others_share_cores(w)
    if others is not None:
        # other tenants' threads wait for the same cores: the scheduler shares them by thread, so a narrower pool
        # hands them this run's share (scripts/watch41c_threads_ratio.py on a 2-core box at load 5-7: 2 threads
        # made 0.19-0.31x the steps/s of 16). No thread count is proposed there.
        fix = Fix(f"Other processes' threads also wait for these cores ({others:g} ready to run, p50): a narrower "
                  "pool would hand them this run's share and make it slower on this box. Free the cores first "
                  "(watch.cpu-share names the load); on a box that is the run's own, size each training "
                  "process's pool to the cores it may use")
    else:
        fix = Fix(f"Give each training process {threads} thread(s)"
                  + (f", the cores its {workers} loader workers leave (keep the workers: they feed the step; "
                     "OpenCV: cv2.setNumThreads(0) in them)" if workers else ""),
                  commands=[shell_command("export", f"OMP_NUM_THREADS={threads}",
                                          comment="before launching; or torch.set_num_threads() in the script")])
    return [OVERSUB.warning(
        "oversubscribed", f"{rq:g} {whose} are ready to run (p50) for the {cpus_text(w)} this run may use: they "
        f"queue for the cores ({ranks} training process{'es' if ranks > 1 else ''}"
        + (f", {workers} loader workers" if workers else "") + ")",
        evidence=ev, confidence=confidence(a, direct=True),
        detail="Each training process starts an intra-op thread pool as large as the machine (torch, OpenMP, MKL, "
               "OpenCV), and loader workers add their own; more runnable threads than cores means every step "
               "waits for a core and the caches are shared thin. On a box that is the run's own, runs right-sized "
               "to the cores are measurably faster. " + (unseen_text(w) or ""),
        fix=fix)]

