"""What `envdoctor watch` shows: a compact live view (one line per GPU, one for the CPU, one per disk, sparklines
of the last minute) on a terminal, and at the end a timeline of each series."""

from __future__ import annotations

import sys
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, TextIO, Tuple

from ..report.bench_view import sparkline

LIVE_S = 60.0  # the live sparklines cover the last minute
WIDTH = 40


def _series(samples: Sequence[Dict[str, Any]]) -> Dict[str, List[Optional[float]]]:
    """Named series over the samples: "GPU 0 util %", "GPU 0 mem MiB", "CPU busy %", "disk nvme0n1 MB/s" ..."""
    out: Dict[str, List[Optional[float]]] = {}
    n = len(samples)

    def put(name: str, i: int, v: Any) -> None:
        col = out.get(name)
        if col is None:  # made once per series (setdefault's default was a new n-long list per call: n x n)
            col = out[name] = [None] * n
        col[i] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    many = max((len(s.get("gpus") or []) for s in samples), default=0) > 4  # then utilisation alone per GPU
    for i, s in enumerate(samples):
        for g in s.get("gpus") or []:
            idx = g.get("index")
            put(f"GPU {idx} util %", i, g.get("util_pct"))
            if many:
                continue
            if g.get("sm_active_pct") is not None:
                put(f"GPU {idx} SM active %", i, g.get("sm_active_pct"))
            if g.get("mem_used_mib") is not None:
                put(f"GPU {idx} mem MiB", i, g.get("mem_used_mib"))
            if g.get("power_w") is not None:
                put(f"GPU {idx} power W", i, g.get("power_w"))
        h = s.get("host") or {}
        if h.get("cpu_busy_pct") is not None:
            put("CPU busy %", i, h.get("cpu_busy_pct"))
        if h.get("cpu_iowait_pct") is not None:
            put("CPU iowait %", i, h.get("cpu_iowait_pct"))
        for name, d in (h.get("disks") or {}).items():
            put(f"disk {name} read MB/s", i, (d or {}).get("read_mbps"))
            if (d or {}).get("util_pct") is not None:
                put(f"disk {name} busy %", i, d.get("util_pct"))
        p = s.get("procs") or {}
        if p:
            put("loader workers", i, p.get("workers"))
            put("process CPU %", i, p.get("cpu_pct"))
    return {k: v for k, v in out.items() if any(x is not None for x in v)}


def percent_scale(name: str) -> Optional[Tuple[float, float]]:
    """0-100 for a series that is a share (utilisation, busy, iowait): its bars then read as levels, so a GPU at
    100 % throughout is a full bar and one at 0 % an empty one. The watched processes' CPU % counts cores (400 on
    four) and keeps its own range."""
    return (0.0, 100.0) if name.endswith(" %") and not name.startswith("process ") else None


def _fmt(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}"


def timeline(samples: Sequence[Dict[str, Any]], width: int = WIDTH) -> List[str]:
    """One line per series: its name, a sparkline over the whole recording, min / p50 / max."""
    from ..domain.recording import pct

    series = _series(samples)
    if not series:
        return []
    name_w = max(len(k) for k in series)
    t_end = samples[-1].get("t_s") if samples else None
    lines = [f"Timeline ({len(samples)} samples" + (f", {t_end:g} s" if isinstance(t_end, (int, float)) else "")
             + "; min / median / max)"]
    for name, vals in series.items():
        nums = [v for v in vals if v is not None]
        lines.append(f"  {name:<{name_w}}  {sparkline(nums, width, percent_scale(name)):<{width}}  "
                     f"{_fmt(min(nums))} / {_fmt(pct(nums, 0.5))} / {_fmt(max(nums))}")
    return lines


class Live:
    """The live view on stderr when it is a terminal: redrawn in place each second when nothing else writes
    there (--pid, bare watch); a new block every 10 s when a launched command shares the terminal."""

    def __init__(self, stream: TextIO = sys.stderr, in_place: bool = True, interval_s: float = 0.5,
                 columns: Optional[int] = None) -> None:
        self.stream = stream
        self.enabled = bool(getattr(stream, "isatty", lambda: False)())
        self.in_place = in_place
        self.recent: Deque[Dict[str, Any]] = deque(maxlen=max(2, int(LIVE_S / max(interval_s, 0.05))))
        self._drawn = 0
        self._last = 0.0
        self.verdict: Optional[str] = None  # the verdict so far (set_verdict), shown on the view's first line
        self.columns = columns

    def set_verdict(self, text: Optional[str]) -> None:
        self.verdict = text

    def _width(self) -> int:
        if self.columns:
            return self.columns
        import shutil

        return max(40, shutil.get_terminal_size((80, 24)).columns)

    def _row(self, head: str, hist: Sequence[Any], tail: str,
             scale: Optional[Tuple[float, float]] = None) -> str:
        """One series row within the terminal: the sparkline takes what the head and the numbers leave."""
        cols = self._width()
        spark_w = max(8, min(WIDTH, cols - len(head) - len(tail) - 2))
        line = f"{head} {sparkline(list(hist), spark_w, scale):<{spark_w}} {tail}"
        return line if len(line) <= cols else line[:cols - 1] + "…"

    def update(self, sample: Dict[str, Any]) -> None:
        self.recent.append(sample)
        if not self.enabled:
            return
        t = float(sample.get("t_s") or 0.0)
        every = 1.0 if self.in_place else 10.0
        if t - self._last < every:
            return
        self._last = t
        lines = self.lines()
        if self.in_place and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()
        self._drawn = len(lines)

    def lines(self) -> List[str]:
        recent = list(self.recent)
        last = recent[-1] if recent else {}
        cols = self._width()
        head = f"envdoctor watch  t={float(last.get('t_s') or 0):.0f} s"
        out = [head]
        if self.verdict:
            text = f"  now: {self.verdict}"
            out.append(text if len(text) <= cols else text[:cols - 1] + "…")
        for g in last.get("gpus") or []:
            idx = g.get("index")
            hist = [x.get("util_pct") for s in recent for x in (s.get("gpus") or []) if x.get("index") == idx]
            mem = f" mem {_fmt(g.get('mem_used_mib'))}/{_fmt(g.get('mem_total_mib'))} MiB" \
                if g.get("mem_total_mib") else ""
            out.append(self._row(f"  GPU {idx}", hist, f"util {_fmt(g.get('util_pct'))}%{mem} "
                                                       f"{_fmt(g.get('power_w'))} W {_fmt(g.get('temperature_c'))} C",
                                 percent_scale("GPU util %")))
        h = last.get("host") or {}
        cpu = [(s.get("host") or {}).get("cpu_busy_pct") for s in recent]
        p = last.get("procs") or {}
        out.append(self._row("  CPU   ", cpu, f"busy {_fmt(h.get('cpu_busy_pct'))}% iowait "
                                            f"{_fmt(h.get('cpu_iowait_pct'))}%"
                             + (f" workers {p.get('workers')}" if p else ""), percent_scale("CPU busy %")))
        for name, d in (h.get("disks") or {}).items():
            hist = [((s.get("host") or {}).get("disks") or {}).get(name, {}).get("read_mbps") for s in recent]
            out.append(self._row(f"  {name:<6}", hist, f"read {_fmt(d.get('read_mbps'))} MB/s await "
                                                      f"{_fmt(d.get('await_ms'))} ms busy {_fmt(d.get('util_pct'))}%"))
        return out

    def close(self) -> None:
        if self.enabled and self.in_place and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self.stream.flush()


def headline(report: Any) -> Optional[str]:
    """The verdict so far in one phrase: the worst finding's summary up to its first ';' or ':' clause, its
    category and how sure it is; None when nothing was judged yet."""
    found = headline_of(report)
    return found[1] if found else None


def headline_of(report: Any) -> Optional[Tuple[str, str]]:
    """(the worst finding's code, its headline), or None when nothing was judged yet."""
    rank = {"error": 0, "warning": 1, "info": 2}
    findings = sorted(report.findings, key=lambda f: rank.get(f.severity, 3))
    if not findings:
        return None
    f = findings[0]
    short = f.summary.split(";")[0].split(": ")[0].strip()
    return f.code, f"{short} ({f.category}, {f.confidence or 'unknown'} confidence)"


class StableVerdict:
    """The live view's verdict with hysteresis: a new verdict (another finding code) replaces the one shown only
    once ``need`` updates in a row agree on it, so the line does not flip on every update while the evidence
    hovers at a threshold (issue 41); the same verdict with new numbers refreshes at once, and an update that
    judged nothing keeps what is shown."""

    def __init__(self, need: int = 2) -> None:
        self.need = need
        self.key: Optional[str] = None
        self.text: Optional[str] = None
        self._pending: Optional[str] = None
        self._count = 0

    def offer(self, found: Optional[Tuple[str, str]]) -> Optional[str]:
        if found is None:
            return self.text
        key, text = found
        if key == self.key or self.key is None:
            self.key, self.text, self._pending, self._count = key, text, None, 0
            return self.text
        self._count = self._count + 1 if key == self._pending else 1
        self._pending = key
        if self._count >= self.need:
            self.key, self.text, self._pending, self._count = key, text, None, 0
        return self.text


def verdict_lines(report: Any, verbose: bool = False, width: int = 100) -> List[str]:
    """The verdict for a terminal: each finding (mark, summary, category and confidence, why, the fix), then
    what could not be judged and why. Only the watch checks: the machine's report is `envdoctor check`'s."""
    import textwrap

    marks = {"error": "x", "warning": "!", "info": "i"}
    out: List[str] = ["Verdict"]

    def wrap(text: str, indent: str) -> List[str]:
        return textwrap.wrap(text, width=max(60, width), initial_indent=indent, subsequent_indent=indent) or [indent]

    findings = sorted(report.findings, key=lambda f: {"error": 0, "warning": 1, "info": 2}.get(f.severity, 3))
    for f in findings:
        out += textwrap.wrap(f"{marks.get(f.severity, '-')} {f.summary}", width=max(60, width),
                             subsequent_indent="  ")
        tag = f"{f.severity} · {f.category}" + (f" about {f.about}" if f.about else "") + f" · {f.code}" \
            + (f" · confidence {f.confidence}" if f.confidence else "")
        out += wrap(tag, "  ")
        if f.detail:
            out += wrap(f.detail, "  ")
        if verbose:
            for e in f.evidence:
                out += wrap(f"evidence: {e.path} = {e.value}" + (f" (expected {e.expected})" if e.expected else ""),
                            "  ")
        if f.fix:
            out += wrap(f"Fix: {f.fix.summary}", "  ")
            out += [f"      {c}" for c in f.fix.commands]
        out.append("")
    if not findings:
        out.append("  no verdict: nothing the checks could judge (see below)")
        out.append("")
    skipped = [c for c in report.checks if c.status == "skipped"]
    if skipped:
        out.append("Not judged")
        for c in skipped:
            out += textwrap.wrap(f"- {c.title} ({c.id}): {c.reason}", width=max(60, width), initial_indent="  ",
                                 subsequent_indent="    ")
    return out
