"""Renderers over one Report: rich console, JSON contract, Markdown for issues; plus redaction.

Each name is imported from its module when first asked for (PEP 562), so that a JSON run never loads rich,
which only the console (and the Markdown built on it) needs.
"""

from typing import Any

_HOME = {
    "redact_facts_dict": "redact",
    "redact_report": "redact",
    "redact_text": "redact",
    "render_console": "console",
    "render_json": "json_report",
    "render_markdown": "markdown",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
