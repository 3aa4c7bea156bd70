"""The Markdown renderer: a report to paste into a GitHub issue, redacted by default."""

from __future__ import annotations

import json
import re
from typing import List

from ..findings import CheckStatus, Report, Severity
from ..remedies import POWERSHELL, platform_of
from .console import check_symbol, header_line, key_fact_rows, verdict
from .redact import redact_report


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _fence(body: str, lang: str) -> str:
    """A fenced block whose fence is longer than any backtick run inside it."""
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}{lang}\n{body}\n{fence}"


def _code_span(text: str) -> str:
    """Inline code that holds any text: a backtick run longer than any inside it (CommonMark code spans)."""
    text = " ".join(text.split())
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _fence_language(report: Report) -> str:
    """The fence language of fix commands: they are quoted for PowerShell on Windows (envdoctor.remedies)."""
    return "powershell" if platform_of(report.facts).shell == POWERSHELL else "bash"


def render_markdown(report: Report, redact: bool = True) -> str:
    """Render ``report`` as Markdown: verdict, findings table, fixes, key facts, folded facts JSON."""
    if redact:
        report = redact_report(report)
    findings = report.findings
    out: List[str] = []
    worst = report.worst()
    title = "envdoctor report"
    if worst in (Severity.ERROR, Severity.WARNING):
        title += f": {verdict(report).split(' — ')[0]}"
    out.append(f"# {title}")
    out.append("")
    out.append(header_line(report) + ("  (redacted)" if redact else ""))
    out.append("")
    out.append(f"**Verdict:** {verdict(report, where='below')}")
    out.append("")

    if findings:
        out.append("## Findings")
        out.append("")
        out.append("| Severity | Category | Summary |")
        out.append("| --- | --- | --- |")
        for f in findings:
            out.append(f"| {f.severity} | `{f.category}` | {_cell(f.summary)} |")
        out.append("")
        for f in findings:
            if f.severity == Severity.INFO and f.fix is None:
                continue
            out.append(f"### {f.severity}: {_cell(f.summary)}")
            out.append("")
            out.append(f"`{f.category}` · `{f.code}`"
                       + (f" · in {_cell(_code_span(f.subject))}" if f.subject and len(report.facts.pythons) > 1 else ""))
            out.append("")
            if f.detail:
                out.append(f.detail)
                out.append("")
            if f.fix is not None:
                out.append(f"**Fix:** {f.fix.summary}")
                out.append("")
                if f.fix.commands:
                    out.append(_fence("\n".join(f.fix.commands), _fence_language(report)))
                    out.append("")
                if f.fix.url:
                    out.append(f"More: {f.fix.url}")
                    out.append("")

    out.append("## Key facts")
    out.append("")
    out.append("| | |")
    out.append("| --- | --- |")
    for label, value in key_fact_rows(report.facts):
        out.append(f"| {_cell(label)} | {_cell(value)} |")
    out.append("")

    if report.checks:
        out.append("## Checks")
        out.append("")
        for c in report.checks:
            symbol, _ = check_symbol(c)
            line = f"- `{symbol}` {c.title} (`{c.id}`)"
            if c.status == CheckStatus.SKIPPED:
                line += f": skipped: {c.reason or 'no reason given'}"
            elif c.status == CheckStatus.ERRORED:
                line += f": check errored: {c.reason or 'no reason given'}"
            out.append(_cell(line))
        out.append("")

    facts_json = json.dumps(report.facts.to_dict(), sort_keys=True, indent=2)
    out.append("<details><summary>Facts</summary>")
    out.append("")
    out.append(_fence(facts_json, "json"))
    out.append("")
    out.append("</details>")
    out.append("")
    return "\n".join(out)
