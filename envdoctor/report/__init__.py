"""Renderers over one Report: rich console, JSON contract, Markdown for issues; plus redaction."""

from .console import render_console
from .json_report import render_json
from .markdown import render_markdown
from .redact import redact_facts_dict, redact_report, redact_text

__all__ = [
    "redact_facts_dict",
    "redact_report",
    "redact_text",
    "render_console",
    "render_json",
    "render_markdown",
]
