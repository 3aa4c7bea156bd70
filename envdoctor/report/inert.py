"""Strings from outside made inert before they reach a terminal or a Markdown page: one place for all renderers.

A snapshot's GPU name or executable, an error message a target printed, a pasted report: any of them may hold
terminal control sequences (an OSC title set, a screen clear, a cursor move that overwrites the verdict, a
hyperlink that hides its target) or lone surrogates (which a UTF-8 terminal cannot even encode). inert_text()
removes ESC-introduced sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-byte escapes), their 8-bit C1 forms,
every other C0/C1 control except newline and tab, and writes a lone surrogate out as the byte it stands for
(``\\xe9``, domain/safe_text.py). inert_report()
applies it to every string of a report (facts, check reasons, findings) before the console and Markdown
renderers see it; the JSON output keeps the values as they were read (JSON escapes them itself).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..domain.safe_text import escape_surrogates

# ESC sequences first (so their parameters go with them), then the bytes left
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC ... ST
    r"|\x1b[ -/]*[0-~]?"  # other escapes (ESC c: full reset; ESC ( B ...), or a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x9c)?"  # 8-bit DCS, SOS, OSC, PM, APC
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANY = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def inert_text(text: str) -> str:
    """``text`` without terminal control sequences or control characters (newline and tab kept)."""
    if not _ANY.search(text):
        return text
    text = _SEQUENCE.sub("", text)
    text = _CONTROL.sub("", text)
    return escape_surrogates(text)


def inert(obj: Any) -> Any:
    """``obj`` with inert_text applied to every string in it: dataclasses (frozen ones rebuilt only where a
    string changed), lists, tuples and dicts (keys too); anything else as it is."""
    if isinstance(obj, str):
        return inert_text(obj)
    if isinstance(obj, list):
        new = [inert(v) for v in obj]
        return new if any(a is not b for a, b in zip(new, obj)) else obj
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        new_t = tuple(inert(v) for v in obj)
        return new_t if any(a is not b for a, b in zip(new_t, obj)) else obj
    if isinstance(obj, dict):
        items = [(inert(k), inert(v)) for k, v in obj.items()]
        changed = any(nk is not k or nv is not v for (nk, nv), (k, v) in zip(items, obj.items()))
        return dict(items) if changed else obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            value = getattr(obj, f.name)
            new_v = inert(value)
            if new_v is not value:
                changes[f.name] = new_v
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj


def inert_report(report: Any) -> Any:
    """The report with every string made inert (facts, check titles and reasons, findings and fixes)."""
    return inert(report)
