"""Whether a watched run got the CPU it asked for (issue 41), and whose threads it waited behind: shared by the
worker advice (checks/_watch.py), the thread advice (checks/watch_host.py) and the CPU-share verdict
(checks/watch_main.py), one rule for all."""

from __future__ import annotations

from typing import Optional

from ..domain.recording import Analysis, pct
from ..model.facts import Watch

THROTTLED_PCT = 20.0  # of the run's cgroup quota periods throttled (p50): the quota holds it back
CPU_WAIT_SHARE = 0.3  # of the training process's time ready to run without a core: held back from the CPU
OTHERS_RUNNABLE = 1.0  # other tenants' threads ready to run (p50) beside the run's: they share its cores by thread


def cpu_held(a: Analysis) -> bool:
    """Whether the run was held back from the CPU it asked for (issue 41): its cgroup's quota throttled it in a
    fifth of the periods or more (p50), or its training process waited on the run queue for a core 30% of the time
    or more. Its loads then wait for a core, not on latency: more workers than cores would not overlap anything."""
    return quota_throttled(a) or main_waited(a)


def quota_throttled(a: Analysis) -> bool:
    """The run's cgroup quota throttled it in THROTTLED_PCT of the periods or more (p50)."""
    thr = (a.procs or {}).get("cgroup_throttled_pct_p50")
    return isinstance(thr, (int, float)) and thr >= THROTTLED_PCT


def main_waited(a: Analysis) -> bool:
    """The run's training process waited on the run queue for a core CPU_WAIT_SHARE of the time or more."""
    p = a.procs or {}
    main = p.get("main") if isinstance(p.get("main"), dict) else {}
    waited = main.get("cpu_wait_share")
    return isinstance(waited, (int, float)) and waited >= CPU_WAIT_SHARE


def other_runnable(w: Watch) -> Optional[float]:
    """Threads of other processes running or ready to run (p50 over the ticks): the host's run queue (less the
    reader) less the watched processes' own runnable threads, read in the same tick. None without both."""
    vals = []
    for s in w.samples:
        h, p = s.get("host"), s.get("procs")
        rq = h.get("run_queue") if isinstance(h, dict) else None
        own = p.get("threads_running") if isinstance(p, dict) else None
        if isinstance(rq, (int, float)) and isinstance(own, (int, float)):
            vals.append(max(0.0, float(rq) - float(own)))
    return pct(vals, 0.5) if vals else None


def others_share_cores(w: Watch) -> Optional[float]:
    """Other processes' runnable threads (p50) where they reach OTHERS_RUNNABLE, else None. The scheduler then
    shares the cores by thread: a narrower thread pool hands the run's share to them (watch.oversubscribed
    proposes no thread count), and a loader worker more, up to the cores, takes a share back (the worker advice
    keeps proposing it). Measured on the 2-core box at load 6-13 (tests/integration/test_watch_workers_advice.py's
    loop, medians of 3 alternating; single runs vary 2x there): num_workers 0 -> 1 at 0.95x and 1.68x (the loop
    with its step's matmul; the second with two CPU burners beside it), 0.81-1.22x in 5 runs of the loop without
    it (loading alone: a worker adds no runnable thread, so noise decides); 1 -> 2 at 1.20-1.42x in 5 runs."""
    others = other_runnable(w)
    return others if others is not None and others >= OTHERS_RUNNABLE else None
