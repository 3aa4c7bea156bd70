"""Benchmark display: live progress while kernels run, the results table per device, sustained sparklines."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..bench.expect import expect
from ..model.facts import Bench, Facts, ProbeStatus

if TYPE_CHECKING:
    from ..compat.queries import Compat

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: List[float], width: int = 40, scale: Optional[Tuple[float, float]] = None) -> str:
    """Bars for ``values`` (averaged into ``width`` buckets when there are more). With ``scale`` (a percentage's
    0-100) a bar's height is its value on that scale; without it, the series' own range, and a flat series is
    drawn at the height it has: at the bottom when it is 0 throughout (nothing happened), mid-height otherwise."""
    vals = [v for v in values if isinstance(v, (int, float))]
    if not vals:
        return ""
    if len(vals) > width:  # average into ``width`` buckets
        step = len(vals) / width
        vals = [sum(vals[int(i * step):int((i + 1) * step)] or [vals[int(i * step)]])
                / max(1, len(vals[int(i * step):int((i + 1) * step)])) for i in range(width)]
    if scale is not None and scale[1] > scale[0]:
        lo, hi = scale
        return "".join(SPARK[max(0, min(7, int((v - lo) / (hi - lo) * 7.999)))] for v in vals)
    lo, hi = min(vals), max(vals)
    if hi - lo < 1e-12:
        return (SPARK[0] if abs(hi) < 1e-12 else SPARK[3]) * len(vals)
    return "".join(SPARK[min(7, int((v - lo) / (hi - lo) * 7.999))] for v in vals)


def short_note(note: str, limit: int) -> str:
    """``note`` within ``limit`` characters, shortened at a word with " …" (never cut inside a word or a path)."""
    if len(note) <= limit:
        return note
    cut = note[:limit - 2]
    head = cut.rsplit(" ", 1)[0] if " " in cut and note[limit - 2] != " " else cut
    return head.rstrip() + " …"


def _fmt(v: Optional[float]) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else (f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}")


def rows(facts: Facts, compat: Compat) -> List[Dict[str, Any]]:
    """One row per result: device, name, value, expected, ratio, verdict, note (what the table shows)."""
    out = []
    for r in facts.bench.results:
        e = expect(facts, compat, r)
        note = r.reason if r.status != ProbeStatus.OK else (e.basis if e.expected is None else "")
        if r.status == ProbeStatus.OK and r.params.get("shape"):
            note = (note + " " if note else "") + "shape " + "x".join(str(x) for x in r.params["shape"])
        out.append({"device": r.device or "-", "name": r.name, "value": r.value, "unit": r.unit or "",
                    "expected": e.expected, "ratio": e.ratio, "verdict": e.verdict if r.status == ProbeStatus.OK
                    else r.status, "note": (note or "").strip(), "duration_s": r.duration_s})
    return out


def summary_line(bench: Bench) -> str:
    ran = [r for r in bench.results if r.status == ProbeStatus.OK]
    skipped = [r for r in bench.results if r.status == ProbeStatus.SKIPPED]
    failed = [r for r in bench.results if r.status == ProbeStatus.FAILED]
    took = f" in {bench.duration_s:.1f} s" if bench.duration_s is not None else ""
    return f"{len(ran)} ran, {len(skipped)} skipped, {len(failed)} failed{took}"


def render_console_table(facts: Facts, compat: Compat, file: Any = None, color: Optional[bool] = None) -> str:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, force_terminal=color, no_color=color is False, record=file is None)
    if not console.is_terminal or file is None:
        console.width = 150  # a pipe or a file: rich would assume 80 columns and fold every cell
    table = Table(title=f"Benchmarks ({summary_line(facts.bench)})", show_lines=False)
    for col in ("device", "benchmark", "value", "expected", "ratio", "verdict", "s", "notes"):
        table.add_column(col, overflow="fold")
    style = {"ok": "green", "warning": "yellow", "error": "red", "failed": "red", "skipped": "dim"}
    for row in sorted(rows(facts, compat), key=lambda x: (x["device"], x["name"])):
        table.add_row(row["device"], row["name"], f"{_fmt(row['value'])} {row['unit']}".strip(),
                      _fmt(row["expected"]), f"{row['ratio']:.0%}" if row["ratio"] is not None else "-",
                      f"[{style.get(row['verdict'], '')}]{row['verdict']}[/]" if style.get(row["verdict"])
                      else row["verdict"], _fmt(row["duration_s"]), short_note(row["note"], 160))
    console.print(table)
    for r in facts.bench.results:
        if r.name == "sustained" and r.samples:
            tf = sparkline([s.get("tflops") for s in r.samples])
            clk = sparkline([s.get("sm_clock_mhz") for s in r.samples])
            console.print(f"sustained {r.device}: TFLOP/s {tf}  ({r.params.get('tflops_first')} -> "
                          f"{r.params.get('tflops_last')})")
            if clk:
                console.print(f"sustained {r.device}: SM MHz  {clk}  ({r.params.get('sm_clock_min_mhz')}-"
                              f"{r.params.get('sm_clock_max_mhz')})")
    return console.export_text() if file is None else ""


def _with_unit(v: Optional[float], unit: str) -> str:
    return "-" if v is None else f"{_fmt(v)} {unit}".strip()


# the notes column needs this much room beside the seven others (their widest values: 'cuda:0', 'disk_rand_read',
# '1,126 TFLOP/s' twice, '100%', 'no reference', '12.3 s', and the gaps), more for a longer device name (a disk's
# data path); narrower, each note goes under the table
NOTES_COLUMN_MIN_WIDTH = 104


def bench_console_renderables(facts: Facts, compat: Compat, width: int) -> List[Any]:
    """The results as the console report shows them, before its verdict: a table in ``width`` columns, each
    value and expectation with its unit, then the sustained sparklines. Names and figures are never cut; the
    notes fold in their own column where the width allows it (NOTES_COLUMN_MIN_WIDTH), else each follows the
    table on its own lines ("matmul_fp32 on cpu: ...")."""
    from rich import box
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    listed = sorted(rows(facts, compat), key=lambda x: (x["device"], x["name"]))
    # a data path as a disk's device takes room from the notes: wide enough means for the longest one too
    longest_device = max((len(str(r["device"])) for r in listed), default=6)
    wide = width >= NOTES_COLUMN_MIN_WIDTH + max(0, longest_device - 6)
    # narrow: one space between columns (the box's own), so that the seven fit 80 (their widest values take 71)
    table = Table(title=f"Benchmarks ({summary_line(facts.bench)})", title_justify="left", box=box.SIMPLE,
                  show_edge=False, pad_edge=False, width=width if wide else None,
                  padding=(0, 1) if wide else (0, 0))
    table.add_column("device", overflow="fold", min_width=6)  # 'cuda:0'; a disk's is its data path: it folds
    table.add_column("benchmark", no_wrap=True)
    table.add_column("measured", justify="right", no_wrap=True)
    table.add_column("expected", justify="right", no_wrap=True)
    table.add_column("ratio", justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("took", justify="right", no_wrap=True)
    if wide:
        table.add_column("notes", overflow="fold", ratio=1, min_width=8)
    style = {"ok": "green", "warning": "yellow", "error": "red", "failed": "red", "skipped": "dim"}
    notes: List[Any] = []
    for row in listed:
        cells = [row["device"], row["name"], _with_unit(row["value"], row["unit"]),
                 _with_unit(row["expected"], row["unit"]),
                 f"{row['ratio']:.0%}" if row["ratio"] is not None else "-",
                 Text(str(row["verdict"]), style=style.get(row["verdict"], "")),
                 f"{_fmt(row['duration_s'])} s" if row["duration_s"] is not None else "-"]
        if wide:
            cells.append(short_note(row["note"], 160))
        elif row["note"]:
            notes.append(Padding(Text(f"{row['name']} on {row['device']}: {short_note(row['note'], 160)}"),
                                 (0, 0, 0, 2)))
        table.add_row(*cells)
    out: List[Any] = [table] + notes
    spark_width = max(10, min(40, width - 40))
    for r in facts.bench.results:
        if r.name == "sustained" and r.samples:
            tf = sparkline([s.get("tflops") for s in r.samples], spark_width)
            clk = sparkline([s.get("sm_clock_mhz") for s in r.samples], spark_width)
            out.append(Text(f"sustained {r.device}: TFLOP/s {tf} ({r.params.get('tflops_first')} -> "
                            f"{r.params.get('tflops_last')})"))
            if clk:
                out.append(Text(f"sustained {r.device}: SM MHz  {clk} ({r.params.get('sm_clock_min_mhz')}-"
                                f"{r.params.get('sm_clock_max_mhz')})"))
    return out


def render_markdown_table(facts: Facts, compat: Compat) -> str:
    def md_escape(text: str) -> str:  # one line, pipes escaped: safe inside a table cell
        return " ".join(text.split()).replace("|", "\\|")

    lines = ["", "## Benchmarks", "", summary_line(facts.bench), "",
             "| device | benchmark | value | expected | ratio | verdict | s | notes |", "|---|---|---|---|---|---|---|---|"]
    for row in sorted(rows(facts, compat), key=lambda x: (x["device"], x["name"])):
        lines.append("| " + " | ".join(md_escape(str(c)) for c in (
            row["device"], row["name"], f"{_fmt(row['value'])} {row['unit']}".strip(), _fmt(row["expected"]),
            f"{row['ratio']:.0%}" if row["ratio"] is not None else "-", row["verdict"], _fmt(row["duration_s"]),
            short_note(row["note"], 200))) + " |")
    for r in facts.bench.results:
        if r.name == "sustained" and r.samples:
            lines += ["", f"sustained {md_escape(r.device or '')}: `{sparkline([s.get('tflops') for s in r.samples])}`"]
    return "\n".join(lines) + "\n"


class LiveProgress:
    """A rich progress bar on stderr per benchmark: name, device, elapsed against its budget."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress = None
        self._task = None
        self._started = 0.0
        self._budget = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      TextColumn("{task.fields[clock]}"), console=Console(stderr=True),
                                      transient=True)
            self._progress.start()
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._progress is not None:
            self._progress.stop()

    def _tick(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                if self._progress is not None and self._task is not None:
                    el = time.monotonic() - self._started
                    self._progress.update(self._task, completed=min(el, self._budget),
                                          clock=f"{el:4.1f} / {self._budget:g} s")

    def __call__(self, event: Dict[str, Any]) -> None:
        if self._progress is None:
            return
        with self._lock:
            if event.get("event") == "start":
                if self._task is not None:
                    self._progress.update(self._task, completed=self._budget)
                self._budget = float(event.get("budget_s") or 0.0) or 1.0
                self._started = time.monotonic()
                self._task = self._progress.add_task(f"{event.get('name')} on {event.get('device')}",
                                                     total=self._budget, clock="")
            elif event.get("event") == "result" and self._task is not None:
                r = event.get("result") or {}
                took = r.get("duration_s")
                self._progress.update(self._task, completed=self._budget,
                                      clock=f"{r.get('status')}" + (f" in {took:g} s" if took is not None else ""))
            elif event.get("event") == "info":
                self._progress.console.print(f"torch {event.get('torch')} in the target interpreter, "
                                             f"{len(event.get('devices') or [])} CUDA device(s)")
