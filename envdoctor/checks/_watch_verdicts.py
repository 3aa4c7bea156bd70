"""Two watch verdict helpers, kept apart from watch.py for the check-module size limit: a rank that waits on
communication, and how sure a GPU-bound verdict is (a majority of windows, issue 41)."""

from __future__ import annotations

from typing import List, Optional

from ..domain.recording import Analysis, GpuStats, pct
from ..model.facts import Watch
from ._watch import (
    BOUND_P50,
)
from ._watch_main import MAJORITY, majority


def comm_wait(w: Watch, gs: List[GpuStats]) -> Optional[float]:
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


def gpu_bound_confidence(w: Watch, a: Analysis, gs: List[GpuStats], conf: str) -> str:
    """GPU-bound is sure only where most windows of samples are (issue 41): a run busy for half its windows and
    waiting for the other half averages to a high p50 without being GPU-bound throughout."""
    idx = {g.index for g in gs}

    def vote(s):
        us = [float(g["util_pct"]) for g in s.get("gpus") or [] if isinstance(g, dict) and g.get("index") in idx
              and isinstance(g.get("util_pct"), (int, float))]
        return None if not us else pct(us, 0.5) >= BOUND_P50
    agree = majority(w, a, vote)
    return "medium" if conf == "high" and agree is not None and agree < MAJORITY else conf
