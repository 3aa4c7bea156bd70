"""The Markdown renderer: a report to paste into a GitHub issue, redacted by default."""

from __future__ import annotations

import json
import re
from typing import List

from ..model.findings import Report, Severity
from ..remedies import POWERSHELL
from .facts_view import key_fact_rows
from .redact import redact_report
from .reply import closing, is_paste_reply, reply_view
from .summary import (
    check_counts,
    check_note,
    check_summary,
    check_symbol,
    finding_views,
    header_line,
    several_pythons,
    verdict,
)

# Characters GitHub would render: emphasis (`__version__` -> bold "version"), raw HTML (`<installed>` vanishes),
# links, strikethrough, entities, headings. CommonMark lets a backslash escape any ASCII punctuation.
_MD_SPECIAL = re.compile(r"([\\`*_<>\[\]~&|])")
_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def md_text(text: str) -> str:
    """Plain text as Markdown that renders as written: code spans kept, everything else escaped."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:m.start()]))
        out.append(m.group(0))  # a code span renders its content literally
        pos = m.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:]))
    return "".join(out)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, Markdown escaped, pipes escaped even in code."""
    text = md_text(" ".join(text.split()))
    # GFM splits cells at an unescaped pipe even inside a code span: escape those too
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def _url(url: str) -> str:
    """An autolink: its text is not Markdown, so underscores in it stay as they are."""
    return f"<{url}>" if re.match(r"https?://[^\s<>]+$", url) else md_text(url)


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


def _fence_language(shell: str) -> str:
    """The fence language of fix commands: the shell they are quoted for (PowerShell on Windows)."""
    return "powershell" if shell == POWERSHELL else "bash"


def _findings_md(report: Report, views) -> List[str]:
    """The findings table, then each finding's detail and fix (a consequence under its root)."""
    out: List[str] = []
    out.append("| Severity | Category | Summary |")
    out.append("| --- | --- | --- |")
    for v in views:
        f = v.finding
        summary = ("↳ follows from the above: " if v.follows else "") + f.summary
        out.append(f"| {f.severity} | `{f.category}` | {cell(summary)} |")
    out.append("")
    for v in views:
        f = v.finding
        if v.follows:
            continue  # listed under its root cause
        if f.severity == Severity.INFO and f.fix is None:
            continue
        out.append(f"### {f.severity}: {cell(f.summary)}")
        out.append("")
        out.append(f"`{f.category}` · `{f.code}`" + (f" · about `{f.about}`" if f.about else "")
                   + (f" · in {cell(_code_span(f.subject))}" if f.subject and several_pythons(report.facts)
                      else ""))
        out.append("")
        if f.items:  # one finding of one cause: every member (file) it covers
            out.extend(f"- {md_text(i)}" for i in f.items)
            out.append("")
        if f.detail:
            out.append(md_text(f.detail))
            out.append("")
        if v.consequences:
            out.append("Follows from it (fixed with it):")
            out.append("")
            out.extend(f"- {c.severity}: {md_text(c.summary)} (`{c.code}`)" for c in v.consequences)
            out.append("")
        if f.fix is not None:
            out.append(f"**Fix:** {md_text(f.fix.summary)}")
            out.append("")
            if f.fix.commands:
                out.append(_fence("\n".join(f.fix.commands), _fence_language(v.shell)))
                out.append("")
            if f.fix.url:
                out.append(f"More: {_url(f.fix.url)}")
                out.append("")
    return out


def _paste_reply(report: Report, redact: bool) -> str:
    """A pasted report's reply (issue 42): what the paste shows, the cause, what to ask the reporter for; the
    checks and the facts folded below it."""
    unread, na = check_counts(report)
    reply = reply_view(report, unread, na)
    views = finding_views(report)
    out: List[str] = []
    title = "envdoctor report"
    worst = report.worst()
    if worst in (Severity.ERROR, Severity.WARNING):
        title += f": {md_text(verdict(report).split(' — ')[0])}"
    out += [f"# {title}", "", md_text(header_line(report)) + ("  (redacted)" if redact else ""), ""]
    asks_below = not reply.causes and bool(reply.unrecognised)
    out += [f"**Verdict:** {md_text(verdict(report, where='below' if asks_below else 'above'))}", ""]
    out += ["## What the paste shows", "", "| | |", "| --- | --- |"]
    out += [f"| {cell(label)} | {cell(value)} |" for label, value in reply.shows]
    out += ["", "## Cause", ""]
    if views:
        out.extend(_findings_md(report, views))
    else:
        out += ["None: the paste shows no error line, and nothing the checks could fault.", ""]
    out += ["## Ask the reporter for", ""]
    if reply.asks:
        for i, ask in enumerate(reply.asks, 1):
            what = _code_span(ask.what) if ask.command else md_text(ask.what)
            out.append(f"{i}. {what}: {md_text(ask.why)}")
    else:
        out.append(md_text(closing(reply) or ""))
    out.append("")
    if report.checks:
        summary = check_summary(report)
        counts = [f"{len(report.checks) - unread - na} judged"]
        counts += [f"{unread} could not be judged from this paste"] if unread else []
        counts += [f"{na} did not apply"] if na else []
        out.append(f"<details><summary>Checks ({', '.join(counts)})</summary>")
        out.append("")
        out.extend(_area_lines(summary))
        out.append("")
        out.append("</details>")
        out.append("")
    out.extend(_facts_json(report))
    return "\n".join(out)


def _facts_json(report: Report) -> List[str]:
    facts_json = json.dumps(report.facts.to_dict(), sort_keys=True, indent=2)
    return ["<details><summary>Facts</summary>", "", _fence(facts_json, "json"), "", "</details>", ""]


def _area_lines(summary) -> List[str]:
    """The per-area lines and the not-applied / unread counts, as the console prints them (report and reply)."""
    out = [cell(f"- `{a.mark[0]}` {a.area}: {a.counts}") for a in summary.areas]
    return out + [cell(f"- {line}") for line in (summary.not_applied, summary.unread) if line]


def render_markdown(report: Report, redact: bool = True, as_reply: bool = True) -> str:
    """Render ``report`` as Markdown: verdict, findings table, fixes, key facts, folded facts JSON; a paste's
    report (``as_reply``, not a machine's section of a several-machine paste) as a maintainer's reply."""
    from .inert import inert_report

    report = inert_report(report)  # no terminal escape from a snapshot, a target or a paste in the page
    if report.machines:  # several machines in one paste: a section each (report/machines.py)
        from .machines import markdown_text

        return markdown_text(report, redact, render_markdown, md_text, cell)
    if redact:
        report = redact_report(report)
    if as_reply and is_paste_reply(report):
        return _paste_reply(report, redact)
    views = finding_views(report)
    out: List[str] = []
    worst = report.worst()
    title = "envdoctor report"
    if worst in (Severity.ERROR, Severity.WARNING):
        title += f": {md_text(verdict(report).split(' — ')[0])}"
    out.append(f"# {title}")
    out.append("")
    out.append(md_text(header_line(report)) + ("  (redacted)" if redact else ""))
    out.append("")
    out.append(f"**Verdict:** {md_text(verdict(report, where='below'))}")
    out.append("")

    if views:
        out.append("## Findings")
        out.append("")
        out.extend(_findings_md(report, views))
    out.append("## Key facts")
    out.append("")
    out.append("| | |")
    out.append("| --- | --- |")
    for label, value in key_fact_rows(report.facts):
        out.append(f"| {cell(label)} | {cell(value)} |")
    out.append("")

    if report.checks:
        # the per-area lines, as the console prints them; every check's line folded below them, so that a
        # healthy box's report stays a screen long (the findings above already say what failed)
        out.append("## Checks")
        out.append("")
        summary = check_summary(report)
        out.extend(_area_lines(summary))
        out.append("")
        out.append(f"<details><summary>Every check ({len(report.checks)})</summary>")
        out.append("")
        for c in report.checks:
            symbol, _ = check_symbol(c)
            line = f"- `{symbol}` {c.headline} (`{c.id}`)"
            note = check_note(c)
            if note is not None:
                line += f": {note}"
            out.append(cell(line))
        out.append("")
        out.append("</details>")
        out.append("")

    facts_json = json.dumps(report.facts.to_dict(), sort_keys=True, indent=2)
    out.append("<details><summary>Facts</summary>")
    out.append("")
    out.append(_fence(facts_json, "json"))
    out.append("")
    out.append("</details>")
    out.append("")
    return "\n".join(out)
