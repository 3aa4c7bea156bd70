"""`envdoctor watch`'s report: the header (what was watched, for how long, the summary's numbers), a timeline of
each series (a sparkline, min / median / max), the verdict of the watch checks; as console text, Markdown (the
timeline in a code block above the report's Markdown) or the report's JSON. A ``Report`` of the watch checks in
(``services.watch``), text out. The live view while a run goes is report/watch_live.py."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .bench_view import sparkline

WIDTH = 40  # a timeline's sparkline, and the live view's widest


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


def fmt(v: Optional[float]) -> str:
    """A number as the views print it: no decimals from 10 up, one below, '-' when unknown."""
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
                     f"{fmt(min(nums))} / {fmt(pct(nums, 0.5))} / {fmt(max(nums))}")
    return lines


def header(w: Any) -> str:
    """The first lines: what was watched, how long, the summary's numbers, what could not be seen."""
    s = w.summary or {}
    what = " ".join(w.command) if w.command else (f"pid {w.pid}" if w.pid else w.source or "the GPUs")
    parts = [f"envdoctor watch: {what}: {s.get('sample_count', len(w.samples))} samples over "
             f"{s.get('duration_s', '?')} s"]
    if s.get("warmup_s"):
        parts.append(f"warm-up {s['warmup_s']:g} s")
    if s.get("dataloader_workers") is not None:
        parts.append(f"DataLoader workers {s['dataloader_workers']}")
    if s.get("data_wait_fraction") is not None:
        parts.append(f"data wait {100 * s['data_wait_fraction']:.1f}% of {s.get('step_count')} steps")
    if w.exit_code is not None:
        parts.append(f"exit code {w.exit_code}")
    out = ", ".join(parts)
    for u in w.unseen:
        out += f"\n  not seen: {u}"
    for n in s.get("notes") or []:
        out += f"\n  note: {n}"
    return out


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


def _watch_of(report: Any) -> Any:
    return report.facts.watch


def render_console(report: Any, verbose: bool = False, width: int = 100, redact: bool = True) -> str:
    """The console report: the header, the timeline, the verdict (``width``: the terminal's, for the verdict's
    wrapping); host names and home paths redacted unless ``redact`` is False."""
    from .redact import redact_text

    w = _watch_of(report)
    text = "\n".join([header(w), *timeline(w.samples), "", *verdict_lines(report, verbose, width)])
    return redact_text(text) if redact else text


def render_markdown(report: Any, redact: bool = True) -> str:
    """The header, the timeline as a code block, then the report's Markdown."""
    from .markdown import render_markdown as report_markdown

    w = _watch_of(report)
    lines = timeline(w.samples)
    md = report_markdown(report, redact=redact)
    block = ["", "### Timeline", "", "```", *lines, "```", ""] if lines else []
    return header(w) + "\n" + "\n".join(block) + "\n" + md


def render_json(report: Any, redact: bool = True) -> str:
    """The report's JSON (docs/json-schema.md): the recording is its facts' ``watch``."""
    from .json_report import render_json as report_json

    return report_json(report, redact=redact)
