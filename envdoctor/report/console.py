"""The console renderer: header, key facts, a doctor-style checklist, findings with fixes, a verdict.

What is said comes from the summary view (``report.summary``, shared with Markdown) and the key facts
(``report.facts_view``); this module lays it out for a terminal with rich. Findings are laid out in
``report.console_findings``; fix commands are wrapped by ``remedies.shell_wrap`` for the shell they were
quoted for.
"""

from __future__ import annotations

import io
import os
from typing import IO, List, Optional, Tuple

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..model.facts import Facts
from ..model.findings import CheckStatus, Report, Severity
from ..remedies.platform import fix_shell
from ..remedies.shell_wrap import wrap_command
from .console_findings import COMMAND_INDENT, consequence_renderables, finding_renderables
from .facts_view import UNKNOWN, fmt, key_fact_rows
from .reply import Reply, closing, is_paste_reply, reply_view
from .summary import (
    SEVERITY_SYMBOLS,
    check_counts,
    check_note,
    check_summary,
    check_symbol,
    console_header,
    finding_views,
    interrupted_probes,
    plural,
    several_pythons,
    verdict,
)

__all__ = ["COMMAND_INDENT", "fmt", "key_fact_rows", "render_console", "terminal_width", "to_ascii_marks"]

_ASCII_MARKS = {"✓": "+", "✗": "x", "≤": "<=", "—": "-", "·": "|", "…": "..."}


def to_ascii_marks(text: str) -> str:
    """The report's marks in ASCII: '+' passed, 'x' error, '!' warning, '-' skipped."""
    for mark, plain in _ASCII_MARKS.items():
        text = text.replace(mark, plain)
    return text


MIN_WIDTH = 60  # narrower than this, the checklist and commands are unreadable anyway
DEFAULT_WIDTH = 100  # not a terminal and no $COLUMNS: a width that pastes well into an issue


def terminal_width() -> int:
    """The console's width: $COLUMNS, else the terminal's, else 100; never below 60 columns."""
    import shutil

    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


# --------------------------------------------------------------------------- the renderables


def _heading(text: str) -> Text:
    return Text(text, style="bold underline")


def _key_facts(facts: Facts, rows: Optional[List[Tuple[str, str]]] = None) -> Padding:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for label, value in (key_fact_rows(facts) if rows is None else rows):
        table.add_row(label, value)
    return Padding(table, (0, 0, 0, 2))


def _checklist(report: Report) -> List[RenderableType]:
    out: List[RenderableType] = []
    for area, checks in check_summary(report).by_area.items():
        out.append(Text(f"  {area}", style="bold"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for check in checks:
            symbol, style = check_symbol(check)
            text = Text(check.headline)
            text.append(f" ({check.id})", style="dim")
            note = check_note(check)
            if note is not None:
                text.append(f" — {note}", style="magenta" if check.status == CheckStatus.ERRORED else "dim")
            else:
                counted = [f for f in check.findings if f.severity != Severity.INFO]
                if counted:
                    text.append(f" — {plural(len(counted), 'finding')}", style=style)
            grid.add_row(Text(symbol, style=style), text)
        out.append(Padding(grid, (0, 0, 0, 4)))
    return out


def _area_lines(report: Report, reply: bool = False) -> List[RenderableType]:
    """One line per area with what was judged, then what did not apply and what could not be read (a paste's
    reply: one count of both, the lists behind -v)."""
    summary = check_summary(report)
    if reply:  # a reply: the judged areas on one line, then the count of the rest
        line = Text()  # padded, not prefixed: a line that wraps keeps its indent
        for i, a in enumerate(summary.areas):
            if i:
                line.append(" · ", style="dim")
            line.append(f"{a.mark[0]} ", style=a.mark[1])
            line.append(a.area, style="bold")
            line.append(f" {a.counts}")
        out_: List[RenderableType] = [Padding(line, (0, 0, 0, 2))] if summary.areas else []
        rest = _unjudged_line(report)
        if rest:
            out_.append(Padding(Text(rest, style="dim"), (0, 0, 0, 2)))
        return out_
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in summary.areas:
        grid.add_row(Text(line.mark[0], style=line.mark[1]), Text(line.area, style="bold"), Text(line.counts))
    out: List[RenderableType] = [Padding(grid, (0, 0, 0, 2))]
    if summary.not_applied:
        out.append(Padding(Text(f"{summary.not_applied}; -v shows all", style="dim"), (0, 0, 0, 2)))
    if summary.unread:
        out.append(Padding(Text(f"{summary.unread}; -v says why"), (0, 0, 0, 2)))
    return out


def _unjudged_line(report: Report) -> str:
    """"41 checks could not be judged from this paste, 44 did not apply; -v lists them" (a paste's reply)."""
    unread, na = check_counts(report)
    parts = []
    if unread:
        parts.append(f"{plural(unread, 'check')} could not be judged from this paste")
    if na:
        parts.append(f"{na} did not apply" if parts else f"{plural(na, 'check')} did not apply")
    return "; ".join([", ".join(parts), "-v lists them"]) if parts else ""


def _asks(reply: Reply, width: int, shell: str) -> List[tuple]:
    """(renderable, is_command) lines of "Ask the reporter for": each command laid out as a fix command is (broken
    only between words, with the shell's continuation, so it pastes whole), what it settles under it."""
    out: List[tuple] = []
    if not reply.asks:
        out.append((Text("  " + (closing(reply) or "")), False))
        return out
    for i, ask in enumerate(reply.asks, 1):
        head = f"  {i}. "
        if ask.command:
            lines = wrap_command(ask.what, width, len(head), shell)
            out.append((Text(head + lines[0][len(head):], style="bold"), True))
            out.extend((Text(line, style="bold"), True) for line in lines[1:])
        else:
            grid = Table.grid()
            grid.add_column(no_wrap=True)
            grid.add_column(overflow="fold")
            grid.add_row(Text(head), Text(ask.what, style="bold"))
            out.append((grid, False))
        out.append((Padding(Text(ask.why, style="dim"), (0, 0, 0, len(head))), False))
    return out


def _header_lines(report: Report, width: int) -> List[str]:
    """The header, broken between its " · " parts (not inside a date or a phrase) to fit ``width``."""
    lines: List[str] = []
    for part in console_header(report).split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def _probe_table(facts: Facts) -> Table:
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    table.add_column("probe", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("duration", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for probe in facts.probes:
        duration = f"{probe.duration_s:.2f} s" if probe.duration_s is not None else UNKNOWN
        table.add_row(probe.name, probe.status, duration, probe.reason or "")
    return table


def render_console(
    report: Report,
    verbose: bool = False,
    color: bool | None = None,
    width: int | None = None,
    file: IO[str] | None = None,
    bench_table: bool = True,
    as_reply: bool = True,
) -> str:
    """Render ``report`` for a terminal and return the text; also write it to ``file`` if given.

    ``color=None`` means colour only when ``file`` is a terminal. Every line fits ``width``
    columns, except a single shell word longer than that (never cut, so commands paste whole).
    ``width=None`` is the terminal's width ($COLUMNS, else the terminal's size, else 100), at least 60.
    ``as_reply``: a paste's report is a maintainer's reply (what the paste shows, the cause, what to ask for;
    report/reply.py); a machine's section of a several-machine paste is not.
    """
    from .inert import inert_report

    report = inert_report(report)  # no escape sequence from a snapshot, a target or a paste reaches the terminal
    if width is None:
        width = terminal_width()
    if color is None:
        # https://no-color.org: NO_COLOR set to anything non-empty turns colour off
        isatty = getattr(file, "isatty", None)
        color = bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
    if report.machines:  # several machines in one paste: a section each (report/machines.py)
        from .machines import console_text

        return _emit(console_text(report, verbose, color, width, render_console, _header_lines), file)
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
        force_jupyter=False,
        force_interactive=False,
    )

    def pr(renderable: RenderableType = "") -> None:
        console.print(renderable)

    def raw(line: Text) -> None:
        # Commands are laid out by wrap_command: print each line as one line, never re-wrapped.
        console.print(line, no_wrap=True, overflow="ignore", crop=False, soft_wrap=True)

    reply = reply_view(report) if as_reply and is_paste_reply(report) else None
    for head in _header_lines(report, width):
        pr(Text(head, style="bold"))
    pr()
    pr(_heading("What the paste shows" if reply is not None else "Key facts"))
    pr(_key_facts(report.facts, reply.shows if reply is not None else None))
    pr()
    pr(_heading("Checks"))
    if not report.checks:
        pr(Text("  no checks ran"))
    for item in (_checklist(report) if verbose else
                 _area_lines(report, reply is not None) if report.checks else []):
        pr(item)
    views = finding_views(report)
    said: set = set()  # (detail, fix) already shown in a reply: a second cause of the same message says so
    if reply is not None and not views:
        pr()
        pr(_heading("Cause"))
        pr(Text("  none: the paste shows no error line, and nothing the checks could fault"))
    if views:
        pr()
        pr(_heading("Cause" if reply is not None else "Findings"))
        for i, view in enumerate(views):
            if view.follows:
                for renderable in consequence_renderables(view, verbose):
                    pr(renderable)
                continue
            if i:
                pr()
            # a paste's reply quotes the line in the finding's summary: its evidence is for -v
            shown = verbose or (view.finding.severity != Severity.INFO and reply is None)
            key = (view.finding.detail, view.finding.fix.summary if view.finding.fix else None)
            if reply is not None and not verbose and view.finding.detail and key in said:
                # one message that proves two causes: its explanation and fix once
                for renderable, _ in finding_renderables(view, verbose, width, several_pythons(report.facts),
                                                         evidence=False, reply=True)[:2]:
                    pr(renderable)
                pr(Padding(Text("The same message, explanation and fix as the cause above.", style="dim"),
                           (0, 0, 0, 2)))
                continue
            said.add(key)
            for renderable, is_command in finding_renderables(view, verbose, width, several_pythons(report.facts),
                                                              evidence=shown, reply=reply is not None):
                if is_command:
                    raw(renderable)  # type: ignore[arg-type]
                else:
                    pr(renderable)
    if verbose and report.facts.probes:
        pr()
        pr(_heading("Probes"))
        pr(Padding(_probe_table(report.facts), (0, 0, 0, 2)))
    if report.facts.bench.results and bench_table:
        from ..compat import load_compat
        from .bench_view import bench_console_renderables

        pr()
        for renderable in bench_console_renderables(report.facts, load_compat(), width):
            pr(renderable)
    pr()
    worst = report.worst()
    if worst in (Severity.ERROR, Severity.WARNING):
        symbol, style = SEVERITY_SYMBOLS[worst]
    elif interrupted_probes(report) or not report.judged or report.measured_nothing:
        symbol, style = SEVERITY_SYMBOLS[Severity.WARNING]
    else:
        symbol, style = "✓", "bold green"
    line = Text(f"{symbol} ", style=style)
    # a reply whose only problem is an unrecognised line: what to paste is the asks below, not the findings above
    asks_below = reply is not None and not reply.causes and bool(reply.unrecognised)
    line.append(verdict(report, where="below" if asks_below else "above"), style="bold")
    pr(line)
    if reply is not None:  # a paste's reply ends with what to ask the reporter for
        pr()
        pr(_heading("Ask the reporter for"))
        for renderable, is_command in _asks(reply, width, fix_shell(report.facts)):
            if is_command:
                raw(renderable)
            else:
                pr(renderable)

    # Padded cells fill the width with spaces: drop them so pasted output stays clean.
    text = "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"
    return _emit(text, file)


def _emit(text: str, file: IO[str] | None) -> str:
    """Write the rendered ``text`` to ``file`` (when given) and return it."""
    if file is not None:
        try:
            file.write(text)
        except UnicodeEncodeError:
            # a terminal that cannot show ✓ or ≤ (a legacy Windows code page, PYTHONIOENCODING=ascii): use
            # ASCII marks that keep pass, error and warning distinct, then "?" for anything else
            encoding = getattr(file, "encoding", None) or "ascii"
            file.write(to_ascii_marks(text).encode(encoding, "replace").decode(encoding))
    return text
