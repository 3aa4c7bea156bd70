"""Watch verdicts from the training process's own state (issue 41): what its main thread spent the run doing
(waiting on its own writes or reads, sleeping), whether it got the CPUs it asked for (a CPU quota, other
processes), and the run's phases (a cold first epoch, train and evaluation loops apart). They need no step timer
and no GPU: the state letters, /proc/PID/io and /proc/PID/schedstat of the watched process are enough."""

from __future__ import annotations

from typing import List

from ..domain.recording import BURST_BYTES, SYNC_AMPLIFY
from ..model.findings import Evidence, Finding, Fix
from ._watch import analysis_of, cpus_text, recording, tree_cpus, unseen_text
from ._watch_cpu import CPU_WAIT_SHARE, THROTTLED_PCT
from ._watch_main import MAJORITY, main_letters, main_of, majority, sure
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

SYNC_WRITE_TICKS = 0.5  # the process wrote in at least this share of its samples: every step, not a save
DISK_SHARE = 0.05  # of the main thread's time in uninterruptible I/O: what the writes cost, worth a word
READ_SHARE = 0.2  # in uninterruptible I/O with reads: the process waits on its own input
SLEEP_SHARE = 0.2  # asleep (time.sleep, a timed wait)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


MAIN = Findings("watch.main-process", "LOOP_WAITS_ON_WRITES", kinds=("sync-writes", "own-reads", "sleeps"),
                kind_categories={"own-reads": "INPUT_STORAGE_BOUND", "sleeps": "LOOP_PAUSED"})


@check(MAIN, "The training process does not wait on its own writes, reads or sleeps")
def main_process(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    m = main_of(a)
    share = m.get("share") if m else None
    if not share:
        raise SkipCheck("no samples of the training process's own state in the recording (a replay, a recording "
                        "made before envdoctor sampled it, or /proc/PID/stat not readable)")
    notseen = unseen_text(w) or ""
    disk, sleep = share.get("disk", 0.0), share.get("sleep", 0.0)
    hit = m.get("write_bytes_per_s") or 0.0
    sw = m.get("synced_writes") or {}
    sdisk = sw.get("disk_share")
    if sw.get("tick_share", 0.0) >= SYNC_WRITE_TICKS and sdisk is not None and sdisk >= DISK_SHARE:
        agree = majority(w, a, _synced)
        return [MAIN.warning(
            "sync-writes", f"The training process writes to the disk through its loop and waits for it: in "
            f"{_pct(sw['tick_share'])} of its samples from its first such write to its last, each small write was "
            f"forced out ({sw['syscw_per_s']:g} write calls/s, {sw['wchar_per_s'] / 1e3:.1f} kB/s written, "
            f"{sw['write_bytes_per_s'] / 1e3:.1f} kB/s reaching the disk: fsync or O_SYNC), and it spent "
            f"{_pct(sdisk)} of that time in uninterruptible I/O (state D)",
            evidence=[Evidence("watch.summary.processes.main.synced_writes.tick_share", sw["tick_share"],
                               f"< {SYNC_WRITE_TICKS:g}"),
                      Evidence("watch.summary.processes.main.synced_writes.disk_share", sdisk, f"< {DISK_SHARE:g}"),
                      Evidence("watch.summary.processes.main.synced_writes.write_bytes_per_s",
                               sw["write_bytes_per_s"])],
            confidence=sure(a, agree),
            detail="A log line or a metric written and synced every step makes every step wait for the disk (and, "
                   "on a busy machine, for a core again after each wake-up); the step timer shows it as a longer "
                   "step, not as a stall. " + notseen,
            fix=Fix("Write logs and metrics without syncing each line (buffered, flushed every N steps or from a "
                    "background thread: logging.handlers.QueueHandler, a TensorBoard/W&B writer's own flush), "
                    "and keep os.fsync for checkpoints"))]
    reads = a.procs.get("reads") or {}
    front = reads.get("front_s") is not None and reads.get("window_s") and \
        reads["front_s"] <= 0.4 * reads["window_s"]
    rd = m.get("read_bytes_per_s") or 0.0
    if disk >= READ_SHARE and rd >= 1e6 and rd >= hit and not front:
        agree = majority(w, a, lambda s: _state_share(s, "D") >= READ_SHARE if main_letters(s) else None)
        return [MAIN.warning(
            "own-reads", f"The training process waits on its own reads {_pct(disk)} of the time (state D), reading "
            f"{rd / 1e6:.1f} MB/s from the disk"
            + (" with no loader workers" if not a.procs.get("workers_max") else ""),
            evidence=[Evidence("watch.summary.processes.main.share.disk", disk, f"< {READ_SHARE:g}"),
                      Evidence("watch.summary.processes.main.read_bytes_per_s", rd)],
            confidence=sure(a, agree),
            detail="The loop reads its input itself and waits for the disk each time. " + notseen,
            fix=Fix("Read in DataLoader workers (they overlap the reads with the step) and from local NVMe or a "
                    "RAM cache; pack small files into shards read sequentially"))]
    if sleep >= SLEEP_SHARE:
        agree = majority(w, a, lambda s: _state_share(s, "N") >= SLEEP_SHARE if main_letters(s) else None)
        return [MAIN.warning(
            "sleeps", f"The training process sleeps {_pct(sleep)} of the time (time.sleep or a timed wait)",
            evidence=[Evidence("watch.summary.processes.main.share.sleep", sleep, f"< {SLEEP_SHARE:g}")],
            confidence=sure(a, agree),
            detail="Its main thread was seen in a kernel sleep (hrtimer_nanosleep): a sleep in the loop (a rate "
                   "limit, a poll of a file or a service, a retry back-off) stops training for as long. " + notseen,
            fix=Fix("Find the sleep (py-spy dump --pid <pid> while it sleeps) and remove it or move it off the "
                    "training loop"))]
    return []


def _state_share(s, letter: str) -> float:
    st = main_letters(s)
    return st.count(letter) / len(st) if st else 0.0


def _synced(s):
    """A sample's vote for synced writes: it wrote and its writes reached the disk a page each; None before the
    process wrote anything (the start-up)."""
    m = (s.get("procs") or {}).get("main") if isinstance(s.get("procs"), dict) else None
    if not isinstance(m, dict) or not isinstance(m.get("write_bytes"), int):
        return None
    wb, wc = m["write_bytes"], m.get("wchar") or 0
    if not wb and not m.get("syscw"):
        return None
    return wb > 0 and wb >= SYNC_AMPLIFY * wc and wc < BURST_BYTES


CPU = Findings("watch.cpu-share", "CPU_CONTENDED", kinds=("quota-throttled", "other-processes"),
               kind_categories={"quota-throttled": "CPU_STARVED"})


@check(CPU, "The run gets the CPU time it asks for")
def cpu_share(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    p = a.procs or {}
    m = main_of(a)
    throttled = p.get("cgroup_throttled_pct_p50")
    waited = m.get("cpu_wait_share") if m else None
    if throttled is None and waited is None:
        raise SkipCheck("neither the run's cgroup throttling nor its main thread's run-queue wait in the recording "
                        "(a replay, an older recording, or no /proc/PID/schedstat)")
    notseen = unseen_text(w) or ""
    wait_text = f"; the training process waited for a core {_pct(waited)} of the time" if waited is not None else ""
    if throttled is not None and throttled >= THROTTLED_PCT:
        quota = p.get("cgroup_quota_cpus")

        def vote(s):
            c = (s.get("procs") or {}).get("cgroup") if isinstance(s.get("procs"), dict) else None
            v = c.get("throttled_pct") if isinstance(c, dict) else None
            return None if not isinstance(v, (int, float)) else v >= THROTTLED_PCT
        return [CPU.warning(
            "quota-throttled", f"The run's CPU quota held it back: its cgroup ({quota:g} CPUs) was throttled in "
            f"{throttled:g}% of the quota's periods (p50){wait_text}",
            evidence=[Evidence("watch.summary.processes.cgroup_throttled_pct_p50", throttled, f"< {THROTTLED_PCT:g}"),
                      Evidence("watch.summary.processes.cgroup_quota_cpus", quota)],
            confidence=sure(a, majority(w, a, vote)),
            detail="A cgroup CPU quota (cpu.max, cpu.cfs_quota_us: docker --cpus, a Kubernetes CPU limit, a Slurm "
                   "job's cores) lets the run use that much CPU time per period and then stops every one of its "
                   "threads until the next; the machine's other cores stay idle. " + notseen,
            fix=Fix("Raise the quota (docker run --cpus, the pod's resources.limits.cpu, the job's --cpus-per-task) "
                    "or make each step need less CPU; more threads or workers would only share the same quota"))]
    if waited is None or waited < CPU_WAIT_SHARE:
        return []
    own = p.get("threads_running_p50")
    cpus = w.cpu_available
    if own is not None and cpus and own >= cpus:
        return []  # the run's own threads fill the cores (watch.oversubscribed)
    tree = tree_cpus(a, w)
    busy = (a.host.get("cpu_busy_pct") or {}).get("p50")

    def vote(s):
        mm = (s.get("procs") or {}).get("main") if isinstance(s.get("procs"), dict) else None
        if not isinstance(mm, dict) or not isinstance(mm.get("cpu_wait_ms"), (int, float)):
            return None
        return mm["cpu_wait_ms"] / 1000.0 / (a.interval_s or 0.5) >= CPU_WAIT_SHARE
    return [CPU.warning(
        "other-processes", f"Other processes hold the CPUs: the training process waited for a core {_pct(waited)} of "
        "the time (ready to run, on the run queue)"
        + (f" while the run's own threads ({own:g} ready to run, p50) fit the {cpus_text(w)}" if own is not None
           and cpus else "")
        + (f"; the watched processes used {tree:g} CPUs" if tree is not None else "")
        + (f", the host's CPUs were {busy:g}% busy (p50)" if busy is not None else ""),
        evidence=[Evidence("watch.summary.processes.main.cpu_wait_share", waited, f"< {CPU_WAIT_SHARE:g}")]
        + ([Evidence("watch.summary.processes.threads_running_p50", own, f"< {cpus:g}")] if own is not None and cpus
           else []),
        confidence=sure(a, majority(w, a, vote)),
        detail="The time a thread is ready to run but waits on a run queue (/proc/PID/schedstat) is time the run "
               "loses to whatever else the CPUs run. The scheduler shares the cores by thread: a narrower thread pool "
               "would hand them more of this run's share, and a loader worker more, up to the cores, takes some back. "
               + notseen,
        fix=Fix("Find what holds the CPUs (`top -o %CPU`, `ps -eo pid,pcpu,comm --sort=-pcpu | head`) and stop it, "
                "or move the run (or pin it: taskset/cgroup cpusets) to cores nobody else uses"))]


PHASES = Findings("watch.phases", "COLD_FIRST_EPOCH", kinds=("cold-first-epoch", "cold-start-reads", "loops"),
                  kind_categories={"loops": "NOTE"})
COLD_RATIO = 1.5  # the first epoch's mean step at least this many times the later epochs'
FRONT_MB = 16.0  # read from the disk in the recording's first part: a cold start worth naming
LOOPS_RATIO = 2.0  # two loops whose typical steps differ this much are phases apart


@check(PHASES, "The run's phases (first epoch, train and evaluation) look alike")
def phases(ctx: CheckContext) -> List[Finding]:
    w = recording(ctx)
    a = analysis_of(w)
    summ = w.summary if isinstance(w.summary, dict) else {}
    loops = [x for x in summ.get("step_loops_detail") or [] if isinstance(x, dict)]
    reads = (a.procs or {}).get("reads") or {}
    if not loops and not reads:
        raise SkipCheck("neither a step timer that counts epochs and loops nor the watched processes' reads in the "
                        "recording: phases cannot be told")
    out: List[Finding] = []
    read_text = ""
    if reads.get("front_s") is not None and reads.get("total_mb", 0) >= FRONT_MB and reads.get("window_s") and \
            reads["front_s"] <= 0.4 * reads["window_s"]:
        read_text = (f"the watched processes read {reads['total_mb']:g} MB from the disk, 80% of it in the first "
                     f"{reads['front_s']:g} s of {reads['window_s']:g} s")
    cold = None
    for x in loops:
        rows = [r for r in x.get("epochs") or [] if isinstance(r, list) and len(r) == 3 and r[0] >= 3]
        if len(rows) < 2:
            continue
        first = rows[0][1] / rows[0][0]
        later = sorted(r[1] / r[0] for r in rows[1:])
        rest = later[len(later) // 2]
        if rest > 0 and first >= COLD_RATIO * rest:
            cold = (x, first, rest, len(x.get("epochs") or []))
            break
    if cold is not None:
        x, first, rest, n = cold
        out.append(PHASES.info(
            "cold-first-epoch", f"The first epoch was slower: {1000 * first:.1f} ms a step against {1000 * rest:.1f} "
            f"ms in the {n - 1} later epoch{'s' if n > 2 else ''} of loop '{x['loop']}' ({first / rest:.1f}x)"
            + (f"; {read_text}" if read_text else ""),
            evidence=[Evidence(f"watch.summary.step_loops_detail[{loops.index(x)}].epochs", x.get("epochs"))],
            confidence="high" if read_text else "medium",
            detail="A cold first epoch: the data came from the disk the first time and from the page cache after "
                   "(or caches, lazy set-up and compilation warmed up). Judge the run's speed on the later epochs; "
                   "a run whose data does not fit in RAM reads from the disk every epoch."))
    elif read_text and not loops:
        out.append(PHASES.info(
            "cold-start-reads", f"The run read from the disk at its start and hardly after: {read_text} (a cold "
            "first pass over the data, then the page cache)",
            evidence=[Evidence("watch.summary.processes.reads.front_s", reads["front_s"]),
                      Evidence("watch.summary.processes.reads.total_mb", reads["total_mb"])],
            confidence="medium",
            detail="Without the step timer the epochs are not seen; the reads are. The start of the run is slower "
                   "than the rest; judge its speed on the rest."))
    timed_loops = [x for x in loops if (x.get("steps") or 0) >= 3 and isinstance(x.get("step_p50_ms"), (int, float))]
    if len(timed_loops) >= 2:
        p50s = [x["step_p50_ms"] for x in timed_loops]
        if min(p50s) > 0 and max(p50s) >= LOOPS_RATIO * min(p50s):
            out.append(PHASES.info(
                "loops", "Phases apart: " + "; ".join(
                    f"'{x['loop']}' {x['steps']} steps at {x['step_p50_ms']:g} ms (p50)"
                    + (f", {x['step_s']:g} s in all" if isinstance(x.get("step_s"), (int, float)) else "")
                    for x in timed_loops),
                evidence=[Evidence(f"watch.summary.step_loops_detail[{i}].step_p50_ms", x["step_p50_ms"])
                          for i, x in enumerate(timed_loops)],
                confidence="high",
                detail="The step timer's loops (timed(loader, name=...)) are reported apart: an evaluation loop's "
                       "steps are not training steps, and the data-wait fraction is over all of them."))
    return out


__all__ = ["CHECKS", "MAJORITY"]
