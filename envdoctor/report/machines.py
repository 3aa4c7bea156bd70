"""Several machines in one paste (``Report.machines``): each machine as a section of the console and Markdown report.

The paste's shared part comes first (the header, which machines the paste held and what differed between them),
then one section per machine, rendered as that machine's own report would be (its key facts, checks and findings,
its verdict), then the verdict over every machine. A machine's section is the ordinary renderer run over
``machine_report``: nothing here decides what a machine's checks mean.
"""

from __future__ import annotations

from typing import Callable, List

from ..model.findings import MachineReport, Report
from .facts_view import summary_rows
from .summary import SEVERITY_SYMBOLS, header_line, verdict


def machine_report(report: Report, machine: MachineReport) -> Report:
    """One machine of ``report`` as a report of its own (what its section renders)."""
    return Report(facts=machine.facts, checks=machine.checks, envdoctor_version=report.envdoctor_version,
                  compat_as_of=report.compat_as_of, schema_version=report.schema_version,
                  compat_source=report.compat_source)


def _machine_verdicts(report: Report, where: str) -> List[str]:
    return [f"{m.label}: {verdict(machine_report(report, m), where=where)}" for m in report.machines]


def console_text(report: Report, verbose: bool, color: bool, width: int, render_one: Callable[..., str],
                 header_lines: Callable[[Report, int], List[str]]) -> str:
    """The console report of a several-machine paste (``render_console`` hands it over, then writes it):
    ``render_one`` renders one machine's report (``render_console`` itself), ``header_lines`` the paste's header.
    Handed in, so that this module imports no renderer (no import cycle: tests/unit/test_layers.py)."""
    import textwrap

    from rich.color import ColorSystem
    from rich.style import Style

    def styled(text: str, style: str) -> str:
        return Style.parse(style).render(text, color_system=ColorSystem.STANDARD) if color else text

    out = [styled(head, "bold") for head in header_lines(report, width)]
    out += ["", styled("Key facts", "bold underline")]
    rows = summary_rows(report.facts)
    pad = max((len(label) for label, _ in rows), default=0)
    for label, value in rows:
        lines = textwrap.wrap(value, max(20, width - pad - 4)) or [""]
        out.append(f"  {styled(label.ljust(pad), 'bold')}  {lines[0]}")
        out.extend(" " * (pad + 4) + line for line in lines[1:])
    for m in report.machines:
        rule = f"━━ {m.label} "
        out += ["", styled(rule + "━" * max(0, width - len(rule)), "bold")]
        body = render_one(machine_report(report, m), verbose=verbose, color=color, width=width, bench_table=False,
                          as_reply=False)  # a machine's section is its report; the paste's asks are not per machine
        # its own header (envdoctor, facts, matrix) is the paste's, printed once above: from its key facts on
        out.extend(body.split("\n\n", 1)[-1].rstrip("\n").splitlines())
    worst = report.worst()
    if worst in ("error", "warning"):
        symbol, style = SEVERITY_SYMBOLS[worst]
    elif not report.judged:
        symbol, style = SEVERITY_SYMBOLS["warning"]
    else:
        symbol, style = "✓", "bold green"
    out += ["", styled(f"{symbol} ", style) + styled(f"{len(report.machines)} machines: {verdict(report)}", "bold")]
    return "\n".join(line.rstrip() for line in out) + "\n"


def markdown_text(report: Report, redact: bool, render_one: Callable[..., str], md_text: Callable[[str], str],
                  cell: Callable[[str], str]) -> str:
    """The Markdown report of a several-machine paste (``render_markdown`` hands it over, with itself as
    ``render_one`` and its escaping): a section per machine, each the machine's own Markdown report with its
    headings one level down."""
    out = ["# envdoctor report" + (f": {md_text(verdict(report).split(' — ')[0])}"
                                   if report.worst() in ("error", "warning") else ""), ""]
    out += [md_text(header_line(report)) + ("  (redacted)" if redact else ""), ""]
    out += [f"**Verdict:** {md_text(verdict(report, where='below'))}", ""]
    out += [f"- {md_text(line)}" for line in _machine_verdicts(report, "in its section below")] + [""]
    rows = summary_rows(report.facts)
    if rows:
        out += ["## Machines", "", "| | |", "| --- | --- |"]
        out += [f"| {cell(label)} | {cell(value)} |" for label, value in rows] + [""]
    for m in report.machines:
        out += [f"## {md_text(m.label)}", ""]
        body = render_one(machine_report(report, m), redact=redact, as_reply=False).split("\n")
        # its title, header line and verdict are the paste's (above) or in the list of verdicts: from its first
        # section on, each heading one level down
        start = next((i for i, line in enumerate(body) if line.startswith("## ")), len(body))
        out += [("#" + line) if line.startswith("#") and not line.startswith("#!") else line for line in body[start:]]
    return "\n".join(out).rstrip("\n") + "\n"
