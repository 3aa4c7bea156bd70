"""`envdoctor watch`'s live view on a terminal while the run goes (one line per GPU, one for the CPU, one per disk,
sparklines of the last minute, the verdict so far) and the verdict's hysteresis. ``LiveView`` is what the command
line hands ``services.watch.watch`` as its view: samples as they come, the report so far, notices."""

from __future__ import annotations

import sys
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, TextIO, Tuple

from .bench_view import sparkline
from .watch import WIDTH, fmt, percent_scale

LIVE_S = 60.0  # the live sparklines cover the last minute


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
            mem = f" mem {fmt(g.get('mem_used_mib'))}/{fmt(g.get('mem_total_mib'))} MiB" \
                if g.get("mem_total_mib") else ""
            out.append(self._row(f"  GPU {idx}", hist, f"util {fmt(g.get('util_pct'))}%{mem} "
                                                       f"{fmt(g.get('power_w'))} W {fmt(g.get('temperature_c'))} C",
                                 percent_scale("GPU util %")))
        h = last.get("host") or {}
        cpu = [(s.get("host") or {}).get("cpu_busy_pct") for s in recent]
        p = last.get("procs") or {}
        out.append(self._row("  CPU   ", cpu, f"busy {fmt(h.get('cpu_busy_pct'))}% iowait "
                                            f"{fmt(h.get('cpu_iowait_pct'))}%"
                             + (f" workers {p.get('workers')}" if p else ""), percent_scale("CPU busy %")))
        for name, d in (h.get("disks") or {}).items():
            hist = [((s.get("host") or {}).get("disks") or {}).get(name, {}).get("read_mbps") for s in recent]
            out.append(self._row(f"  {name:<6}", hist, f"read {fmt(d.get('read_mbps'))} MB/s await "
                                                      f"{fmt(d.get('await_ms'))} ms busy {fmt(d.get('util_pct'))}%"))
        return out

    def close(self) -> None:
        if self.enabled and self.in_place and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self.stream.flush()


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


class LiveView:
    """The view ``services.watch.watch`` reports to: the live view (``Live``, drawn only on a terminal) with the
    verdict so far through ``StableVerdict``, and notices (the command being stopped) on the same stream."""

    def __init__(self, stream: TextIO = sys.stderr, columns: Optional[int] = None) -> None:
        self.stream = stream
        self.columns = columns
        self.live: Optional[Live] = None
        self.stable = StableVerdict()

    @property
    def enabled(self) -> bool:
        """Whether samples are shown as they come (a terminal): only then is a verdict so far worth judging."""
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def begin(self, launched: bool, interval_s: float) -> None:
        # redrawn in place when nothing else writes there (--pid, bare watch); a launched command shares it
        self.live = Live(stream=self.stream, in_place=not launched, interval_s=interval_s, columns=self.columns)

    def sample(self, sample: Dict[str, Any]) -> None:
        if self.live is not None:
            self.live.update(sample)

    def judged(self, report: Any) -> None:
        if self.live is not None:
            self.live.set_verdict(self.stable.offer(headline_of(report)))

    def notice(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # the terminal hung up (EIO): the command is stopped all the same
            pass

    def close(self) -> None:
        if self.live is not None:
            try:
                self.live.close()
            except (OSError, ValueError):  # the terminal hung up (EIO): the command is stopped all the same
                pass
