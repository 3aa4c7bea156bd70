"""One finding for the terminal: its mark and summary, the meta line, detail, fix (commands wrapped for the
shell they were quoted for) and evidence; a consequence as a short line under its root cause."""

from __future__ import annotations

import re
from typing import List, Tuple

from rich.console import RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..model.catalogue import UNRECOGNISED
from ..model.findings import Severity
from ..remedies.shell_wrap import wrap_command
from .summary import SEVERITY_SYMBOLS, FindingView

COMMAND_INDENT = 6  # columns before a fix command
MAX_EVIDENCE = 2  # evidence lines of a problem shown without -v
MAX_ITEMS = 12  # members of a grouped finding listed without -v


def item_text(items: List[str], verbose: bool) -> str:
    """The members of a grouped finding as one paragraph ("Affects (10): libcudnn.so.9 (9.0.0); ..."); without -v
    at most MAX_ITEMS, the rest counted (the JSON lists them all)."""
    shown = items if verbose or len(items) <= MAX_ITEMS else items[:MAX_ITEMS - 1]
    more = f"; and {len(items) - len(shown)} more (-v lists them)" if len(shown) < len(items) else ""
    return f"Affects ({len(items)}): " + "; ".join(shown) + more


def _evidence_lines(view: FindingView) -> List[Text]:
    lines = []
    for ev in view.evidence:
        text = Text(ev.text)
        if ev.expected:
            text.append(f"; expected {ev.expected}")
        if ev.source:
            text.append(f"; source: {ev.source}", style="dim")
        lines.append(text)
    return lines


def consequence_renderables(view: FindingView, verbose: bool) -> List[RenderableType]:
    """A consequence under its root cause: what it is, not a fix of its own (fixing the root fixes it)."""
    finding = view.finding
    symbol, style = SEVERITY_SYMBOLS.get(finding.severity, ("?", ""))
    head = Table.grid(padding=(0, 1))
    head.add_column(no_wrap=True)
    head.add_column(overflow="fold")
    head.add_row(Text("↳", style="dim"), Text(f"{symbol} {finding.summary}", style=style))
    out: List[RenderableType] = [Padding(head, (0, 0, 0, 2))]
    meta = f"follows from the above · {finding.severity} · {finding.category} · {finding.code}"
    out.append(Padding(Text(meta, style="dim"), (0, 0, 0, 6)))
    if verbose and finding.evidence:
        for line in _evidence_lines(view):
            out.append(Padding(line, (0, 0, 0, 6)))
    return out


# "To confirm, paste the output of `cmd`." at the end of a signature finding's detail: a paste's reply says it
# once, in its asks
_TO_CONFIRM = re.compile(r"\s*To confirm, paste the output of `[^`]*`\.\s*$")


def finding_renderables(view: FindingView, verbose: bool, width: int, show_subject: bool = False,
                        evidence: bool | None = None, reply: bool = False) -> List[Tuple[RenderableType, bool]]:
    """Renderables for one finding; the flag marks pre-laid-out command lines (never re-wrapped). ``reply``: in
    a paste's reply (issue 42) what to paste is said once, in its asks, so an unrecognised line is its summary
    alone and a detail's "To confirm, paste ..." and the source URL are for -v."""
    finding = view.finding
    out: List[Tuple[RenderableType, bool]] = []
    symbol, style = SEVERITY_SYMBOLS.get(finding.severity, ("?", ""))
    head = Table.grid(padding=(0, 1))
    head.add_column(no_wrap=True)
    head.add_column(overflow="fold")
    head.add_row(Text(symbol, style=style), Text(finding.summary, style="bold"))
    out.append((head, False))
    meta = f"{finding.severity} · {finding.category} · {finding.code}"
    if finding.about:
        meta += f" · about {finding.about}"
    if finding.confidence:
        meta += f" · confidence {finding.confidence}"
    if show_subject and finding.subject:
        # several interpreters were judged: say which one this finding (and its fix) is about
        meta += f" · in {finding.subject}"
    brief = not verbose and finding.severity == Severity.INFO  # a note: its detail and fix under -v
    compact = reply and not verbose
    brief = brief or (compact and finding.category == UNRECOGNISED)
    out.append((Padding(Text(meta, style="dim"), (0, 0, 0, 2)), False))
    if finding.items:  # one finding of one cause: what it covers (files), wrapped as one paragraph
        out.append((Padding(Text(item_text(finding.items, verbose)), (0, 0, 0, 2)), False))
    if brief:
        return out
    detail = _TO_CONFIRM.sub("", finding.detail) if compact and finding.detail else finding.detail
    if detail:
        out.append((Padding(Text(detail), (0, 0, 0, 2)), False))
    if finding.fix is not None:
        fix_text = Text("Fix: ", style="bold green")
        fix_text.append(finding.fix.summary)
        out.append((Padding(fix_text, (0, 0, 0, 2)), False))
        for command in finding.fix.commands:
            for line in wrap_command(command, width, COMMAND_INDENT, view.shell):
                out.append((Text(line, style="cyan"), True))
        if finding.fix.url and not compact:
            out.append((Padding(Text(f"More: {finding.fix.url}"), (0, 0, 0, 2)), False))
    # a grouped finding's items say what its evidence says, once per member: the evidence under -v
    if (verbose if evidence is None else evidence and not finding.items) and finding.evidence:
        lines = _evidence_lines(view)
        shown = lines if verbose else lines[:MAX_EVIDENCE]
        out.append((Padding(Text("Evidence:", style="bold"), (0, 0, 0, 2)), False))
        for line in shown:
            out.append((Padding(line, (0, 0, 0, 4)), False))
    return out
