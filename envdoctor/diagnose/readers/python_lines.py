"""The interpreter's Python version where a paste says it without a REPL banner or collect_env (issue 29): an issue
template's "Python version" field with the value under it (``### Python version`` then ``3.13``, ``Python Version (if
applicable):`` then ``- 3.12.0``), and, last of all, the interpreter's own directory in a path (``C:\\Python312\\Lib\\``,
``/usr/lib/python3.12/site-packages/``)."""

from __future__ import annotations

import re

from .base import BARE, LOOSE, Acc, Paste

# a field name alone on its line (Markdown heading, bold, or "Name:" with nothing after it)
_FIELD = re.compile(r"^\s*(?:#{1,6}\s*)?(?:\*\*)?python\s+version(?:\s*\(if applicable\))?\s*:?\s*(?:\*\*)?\s*:?\s*$",
                    re.I)
# its value on one of the next lines: "3.13", "- 3.12.0", "Python 3.10.4", "v3.9"
_VALUE = re.compile(r"^\s*(?:[-*]\s*)?(?:`)?(?:python\s*|cpython\s*|v)?(3\.\d{1,2}(?:\.\d+)?)\b(?!\.)", re.I)
# the interpreter's own directory: C:\Python312\, .../python3.12/site-packages, lib/python3.11/
_WIN_DIR = re.compile(r"(?i)(?:^|[\\/:\s\"'])Python3(\d{1,2})(?:-32)?[\\/]")
_POSIX_DIR = re.compile(r"/lib(?:64)?/python(3\.\d{1,2})/(?:site-packages|dist-packages|lib-dynload|[\w-]+\.py)")

_LOOKAHEAD = 4  # lines under a field name that may hold its value (blank lines between)


def read_python_lines(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    for i, line in enumerate(lines):
        if _FIELD.match(line):
            for nxt in lines[i + 1:i + 1 + _LOOKAHEAD]:
                if not nxt.strip():
                    continue
                m = _VALUE.match(nxt)
                if m:
                    acc.put("python.version", m.group(1), LOOSE, f"{line.strip()} / {nxt.strip()}"[:160])
                break  # the first non-blank line is the field's value, or it has none
            continue
        if "python" in line.lower():
            m = _WIN_DIR.search(line)
            if m:
                acc.put("python.version", f"3.{m.group(1)}", BARE, f"the interpreter's directory: {line.strip()[:120]}")
                continue
            m = _POSIX_DIR.search(line)
            if m:
                acc.put("python.version", m.group(1), BARE, f"the interpreter's directory: {line.strip()[:120]}")
