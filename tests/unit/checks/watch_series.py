"""What the watch checks' tests share: samples built from per-GPU columns, and the verdicts of the watch.* checks
on them (test_watch.py, test_watch_gpus.py, test_watch_host.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.domain.recording import summarize
from envdoctor.model.facts import Facts, ProbeStatus, Watch
from envdoctor.services.collect import judge


def series(utils: List[List[Optional[float]]], interval: float = 0.5, host: Optional[List[Dict[str, Any]]] = None,
           procs: Optional[List[Dict[str, Any]]] = None, **gpu_fields: List[List[Any]]) -> List[Dict[str, Any]]:
    """Samples from per-GPU utilisation columns (utils[gpu][tick]) and optional per-tick host/process dicts."""
    n = len(utils[0]) if utils else len(host or procs or [])
    out = []
    for t in range(n):
        s: Dict[str, Any] = {"t_s": round(t * interval, 3)}
        if utils:
            s["gpus"] = [dict({"index": g, "util_pct": utils[g][t]},
                              **{k: v[g][t] for k, v in gpu_fields.items()}) for g in range(len(utils))]
        if host:
            s["host"] = host[t]
        if procs:
            s["procs"] = procs[t]
        out.append(s)
    return out


def verdicts(samples, steps=None, cpu_available=None, unseen=(), summary_extra=None) -> Dict[str, Any]:
    summary = summarize(samples, None, steps)
    summary.update(summary_extra or {})
    w = Watch(status=ProbeStatus.OK, source="test", samples=samples, summary=summary, cpu_available=cpu_available,
              unseen=list(unseen))
    report = judge(Facts(watch=w), only=["watch.*"])
    return {"findings": {(f.about or f.category): f for f in report.findings},
            "checks": {c.id: c for c in report.checks}}


def cats(v) -> set:
    return set(v["findings"])


def steady(level: float, n: int = 40, jitter: float = 3.0) -> List[float]:
    return [level + (jitter if i % 2 else -jitter) for i in range(n)]
