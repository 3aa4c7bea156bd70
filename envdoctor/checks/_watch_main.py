"""What the watch checks read from the training process's own state (issue 41): its main thread's state letters
(envdoctor.watch.sample.main_state), its I/O and its time on and off the CPU; gaps in the steps named by what the
process did during them; a majority over windows of samples before a verdict is called sure."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..domain.recording import Analysis, activity, io_windows
from ..model.facts import Watch
from ..model.findings import Evidence, Finding, Fix
from ._watch import unseen_text
from .base import Findings

GAP_BYTES = 1 << 20  # bytes written (read) in a gap beyond the run's own rate: the gap wrote (read)
GAP_RUNNING = 0.5  # the main thread running or ready to run this share of a gap: it computed
GAP_LETTERS = 5  # state samples a gap needs (about a quarter second) to be named by them, not by its I/O alone
WINDOW = 10  # samples per window for the majority
MAJORITY = 0.6  # of the samples in a window that must agree


def main_of(a: Analysis) -> Dict[str, Any]:
    m = a.procs.get("main") if a.procs else None
    return m if isinstance(m, dict) else {}


CPU_WAITED = 0.5  # on a CPU under this share of the run's own on-CPU share during a gap: it waited for a core


def _typical_rate(wins, gaps, key: str) -> float:
    """The run's own rate of ``key`` (bytes per s) in the ticks that overlap no gap (a log line per step, a metrics
    file): p50 over at least three such ticks; 0 when fewer (the gaps fill the run: then nothing the run does
    between them is known to subtract)."""
    clean = sorted(c.get(key, 0.0) / (b - a) for a, b, c in wins
                   if not any(min(b, s + d) > max(a, s) for s, d, _ in gaps))
    return clean[len(clean) // 2] if len(clean) >= 3 else 0.0


def _attributed(w: Watch, a: Analysis, gaps) -> List[Dict[str, float]]:
    """Bytes written and read in each gap: each tick's bytes beyond the run's own rate, over the tick's real window
    (``io_windows``: the counters are read after the tick's t_s, later still on a loaded box), shared among the gaps
    in that window by their overlap. A write of a megabyte or more takes the loop out of its steps (the timer sees
    that step as a gap), so a window's excess belongs to its gaps, not spread over the whole tick, where a short
    save in a tick of steps would be diluted below what names a checkpoint."""
    wins = io_windows(w.samples, a.interval_s)
    rate = {k: _typical_rate(wins, gaps, k) for k in ("wchar", "rchar")}
    out = [{"wchar": 0.0, "rchar": 0.0} for _ in gaps]
    for lo, hi, c in wins:
        ov = [max(0.0, min(hi, s + d) - max(lo, s)) for s, d, _ in gaps]
        tot = sum(ov)
        if tot <= 0:
            continue
        for k in ("wchar", "rchar"):
            excess = max(0.0, c.get(k, 0.0) - rate[k] * (hi - lo))
            for i, x in enumerate(ov):
                if x > 0:
                    out[i][k] += excess * x / tot
    return out


def gap_activity(w: Watch, a: Analysis, start_s: float, duration_s: float,
                 io: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
    """What the training process did in a gap of the steps, named: ``name`` is "checkpoint" (it wrote), "input"
    (it read), "evaluation" (it computed without steps), "cpu-wait" (it was ready to run but hardly got a core:
    other processes' time, not the loop's), "pause" (none of these: a sleep, a lock, a wait on another process) or
    "unknown" (no state samples fell inside). ``io``: the gap's bytes from ``_attributed``."""
    act = activity(w.samples, start_s, start_s + duration_s, a.interval_s)
    m = main_of(a)
    if io is None:
        io = _attributed(w, a, [(start_s, duration_s, False)])[0]
    wrote, read = io["wchar"], io["rchar"]
    share = act.get("share") or {}
    typical_cpu = m.get("on_cpu_share")
    if wrote >= GAP_BYTES:
        name = "checkpoint"
    elif read >= GAP_BYTES:
        name = "input"
    elif act["letters"] < GAP_LETTERS:
        name = "unknown"  # two or three looks at a short gap: a loaded box's preemption looks as long
    elif share.get("running", 0.0) >= GAP_RUNNING:
        got = act.get("oncpu")
        waited = got is not None and typical_cpu and got < CPU_WAITED * typical_cpu
        name = "cpu-wait" if waited else "evaluation"
    else:
        name = "pause"
    return dict(act, name=name, wrote=max(0, round(wrote)), read=max(0, round(read)))


IO_NAMES = ("checkpoint", "input")


def name_gaps(w: Watch, a: Analysis, gaps: Sequence[Tuple[Any, ...]]) -> Dict[str, Dict[str, Any]]:
    """Gaps (start s, length s[, brief]) grouped by name: count, seconds, bytes written and read, the longest. A
    brief gap (under the step timer's STALL_MIN_S) counts only when its writes or reads name it: a loaded box's
    preemptions are as long, and look like computing or a pause."""
    full = [(float(g[0]), float(g[1]), bool(g[2]) if len(g) > 2 else False) for g in gaps]
    io = _attributed(w, a, full)
    out: Dict[str, Dict[str, Any]] = {}
    for (start, dur, brief), got in zip(full, io):
        act = gap_activity(w, a, start, dur, got)
        if brief and act["name"] not in IO_NAMES:
            continue
        g = out.setdefault(act["name"], {"count": 0, "seconds": 0.0, "wrote": 0, "read": 0, "longest_s": 0.0})
        g["count"] += 1
        g["seconds"] = round(g["seconds"] + dur, 3)
        g["wrote"] += act["wrote"]
        g["read"] += act["read"]
        g["longest_s"] = max(g["longest_s"], round(dur, 3))
    return out


def write_bursts(w: Watch, a: Analysis, burst_bytes: int) -> List[Tuple[float, float]]:
    """Without steps or GPU samples: the runs of ticks in which the training process wrote ``burst_bytes`` or more
    each (a save, not a log line), with the ticks after them spent in uninterruptible I/O (the flush), as
    (start s, length s) over the steady part."""
    iv = a.interval_s or 0.5
    rows = []
    for s in w.samples:
        m = (s.get("procs") or {}).get("main") if isinstance(s.get("procs"), dict) else None
        t = s.get("t_s")
        if isinstance(m, dict) and isinstance(t, (int, float)):
            st = m.get("states") if isinstance(m.get("states"), str) else ""
            heavy = (m.get("wchar") or 0) >= burst_bytes
            flushing = bool(st) and st.count("D") / len(st) >= 0.5
            rows.append((float(t), heavy, flushing))
    spans: List[Tuple[float, float]] = []
    cur: Optional[List[float]] = None
    for t, heavy, flushing in rows:
        if heavy or (cur is not None and flushing):
            if cur is None:
                cur = [t - iv, t]
            else:
                cur[1] = t
        elif cur is not None:
            spans.append((cur[0], cur[1] - cur[0]))
            cur = None
    if cur is not None:
        spans.append((cur[0], cur[1] - cur[0]))
    return spans


WORKERS_BUSY_PCT = 20.0  # the loader workers' summed CPU % when they work (p90 of the ticks) for lulls to mean
WORKERS_BUSY_SHARE = 0.25  # of the ticks in which they worked (half that level): a phase, not each epoch's fill
WORKERS_LULL = 0.25  # a tick whose workers used under this share of that level: they were not asked
LULL_TICKS = 2  # consecutive such ticks (a second at the default interval) while the training process ran on


def worker_lulls(w: Watch, a: Analysis) -> List[Tuple[float, float]]:
    """Without a step timer: the spans in which every DataLoader worker of the run stood idle (their summed CPU
    under WORKERS_LULL of their working level, all of them alive and measured) for LULL_TICKS ticks or more, in a
    run whose workers worked (WORKERS_BUSY_PCT) in a real share of its ticks (WORKERS_BUSY_SHARE). Workers stop
    when the loop stops asking for batches (their prefetch queue is full): the loop was doing something else, which
    the process's own state then names (an evaluation pass: it computed; a save: it wrote; a pause). [] where
    the workers never worked enough to tell, or worked only as each epoch started (a loop whose step is slower
    than its loading keeps its workers idle too: that is no lull)."""
    iv = a.interval_s or 0.5
    n = (a.procs or {}).get("workers_max") or 0
    rows = []
    for s in w.samples:
        p, t = s.get("procs"), s.get("t_s")
        if not isinstance(p, dict) or not isinstance(t, (int, float)) or t <= a.warmup_s:
            continue
        cpu = [x for x in p.get("worker_cpu_pct") or [] if isinstance(x, (int, float))]
        whole = n > 0 and p.get("workers") == n and len(cpu) == n
        rows.append((float(t), sum(cpu) if whole else None))
    seen = sorted(c for _, c in rows if c is not None)
    level = seen[min(len(seen) - 1, int(0.9 * len(seen)))] if seen else 0.0
    if level < WORKERS_BUSY_PCT or sum(1 for c in seen if c >= 0.5 * level) < WORKERS_BUSY_SHARE * len(seen):
        return []
    bar = WORKERS_LULL * level
    spans: List[Tuple[float, float]] = []
    run: List[float] = []
    for t, c in rows + [(float("inf"), None)]:
        if c is not None and c <= bar:
            run.append(t)
            continue
        if len(run) >= LULL_TICKS:
            spans.append((run[0] - iv, len(run) * iv))
        run = []
    return spans


def majority(w: Watch, a: Analysis, vote: Callable[[Dict[str, Any]], Optional[bool]]) -> Optional[float]:
    """The share of windows (``WINDOW`` samples after the warm-up) in which at least ``MAJORITY`` of the samples
    that voted agree with a verdict (``vote`` says per sample: True agrees, False disagrees, None abstains); None
    when no window had votes. A verdict is called sure only when most windows agree: a run that is input-bound for
    a third of its time and compute-bound for the rest has an input-bound average, not an input-bound run."""
    start = a.warmup_s
    votes = [vote(s) for s in w.samples if isinstance(s.get("t_s"), (int, float)) and s["t_s"] > start]
    windows = [votes[i:i + WINDOW] for i in range(0, len(votes), WINDOW)]
    judged = []
    for win in windows:
        cast = [v for v in win if v is not None]
        if len(cast) >= max(2, len(win) // 2):
            judged.append(sum(1 for v in cast if v) / len(cast) >= MAJORITY)
    if not judged:
        return None
    return round(sum(judged) / len(judged), 3)


def sure(a: Analysis, agree: Optional[float], direct: bool = True) -> str:
    """Confidence with the majority: high only when most windows agree (``agree`` >= MAJORITY) and a direct
    measurement backs it; medium when the windows are split or the measurement is indirect; low with few samples."""
    if a.steady_count < 5:
        return "low"
    if agree is None or agree < MAJORITY:
        return "medium"
    return "high" if direct else "medium"


def main_letters(s: Dict[str, Any]) -> str:
    m = (s.get("procs") or {}).get("main") if isinstance(s.get("procs"), dict) else None
    st = m.get("states") if isinstance(m, dict) else None
    return st if isinstance(st, str) else ""


MAIN_RUNNING = 0.8  # the training process's main thread running or ready to run this share of its samples
ONE_CORE_PCT = 150.0  # ... while the whole process used at most this % of a core (p50): one thread's work


def main_busy(loader: Findings, w: Watch, a: Analysis) -> Optional[Finding]:
    """No worker process, no step timer, no GPU: the training process's own state. Its main thread running (or
    ready to run) nearly all the time while the process as a whole uses about one core is one thread doing the
    loading and the step in turn (torch's own compute on large tensors would spread over its intra-op threads).
    How much of that is loading only the step timer can say, so no worker count is proposed from this alone."""
    m = main_of(a)
    share = (m.get("share") or {}).get("running")
    cpu = m.get("cpu_pct_p50")
    if share is None or share < MAIN_RUNNING or (cpu is not None and cpu > ONE_CORE_PCT):
        return None
    agree = majority(w, a, lambda s: (main_letters(s).count("R") / len(main_letters(s)) >= MAIN_RUNNING)
                     if main_letters(s) else None)
    conf = sure(a, agree, direct=False)
    return loader.warning(
        "main-process", f"No DataLoader worker process, and the training process ran (or was ready to run) "
        f"{100 * share:.0f}% of the time in one thread (the process used {cpu or 0:g}% of a core, p50): loading "
        "and the step take turns on one core",
        evidence=[Evidence("watch.summary.dataloader_workers", 0, ">= 1"),
                  Evidence("watch.summary.processes.main.share.running", share, f"< {MAIN_RUNNING:g}"),
                  Evidence("watch.summary.processes.main.cpu_pct_p50", cpu, f"> {ONE_CORE_PCT:g}")],
        confidence=conf,
        detail="Read from the training process's own state (its main thread sampled between ticks): with "
               "num_workers=0 every batch is read, decoded and collated by the loop itself. Whether loading is a "
               "large part of each step only the step timer shows: wrap the loader in timed() and watch again "
               "before adding workers. " + (unseen_text(w) or ""),
        fix=Fix("Time the loading first: `from envdoctor.watch import timed` and `for batch in timed(loader): ...`; "
                "if the steps wait for their batch, load in worker processes (num_workers >= 1) where a core is "
                "free beside the step"))
