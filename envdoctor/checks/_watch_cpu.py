"""Whether a watched run got the CPU it asked for (issue 41): shared by the worker advice (checks/_watch.py) and
the CPU-share verdict (checks/watch_main.py), one rule for both."""

from __future__ import annotations

from ..domain.recording import Analysis

THROTTLED_PCT = 20.0  # of the run's cgroup quota periods throttled (p50): the quota holds it back
CPU_WAIT_SHARE = 0.3  # of the training process's time ready to run without a core: held back from the CPU


def cpu_held(a: Analysis) -> bool:
    """Whether the run was held back from the CPU it asked for (issue 41): its cgroup's quota throttled it in a
    fifth of the periods or more (p50), or its training process waited on the run queue for a core 30% of the time
    or more. Its loads then wait for a core, not on latency: more workers than cores would not overlap anything."""
    p = a.procs or {}
    thr = p.get("cgroup_throttled_pct_p50")
    main = p.get("main") if isinstance(p.get("main"), dict) else {}
    waited = main.get("cpu_wait_share")
    return (isinstance(thr, (int, float)) and thr >= THROTTLED_PCT) or \
        (isinstance(waited, (int, float)) and waited >= CPU_WAIT_SHARE)
