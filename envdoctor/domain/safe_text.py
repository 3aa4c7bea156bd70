"""Text made safe where it leaves the process: lone surrogates escaped, once, at the boundary.

A path or an error message read from the machine may hold bytes that are not UTF-8 (a directory named in
Latin-1, ``caf\\xe9``). Python keeps such a byte as a lone surrogate (``os.fsdecode``, ``surrogateescape``:
U+DC80..U+DCFF stand for the bytes 0x80..0xFF), and JSON read from a target keeps whatever ``\\udXXX`` it was
given. A lone surrogate cannot be encoded as UTF-8: ``"caf\\udce9".encode("utf-8")`` raises
UnicodeEncodeError, which is how one such path in torch's import error crashed node-health, its JSON and its
metrics (issue 40). The facts keep the text as read; each place text leaves the process (the console, a JSON
document, the metrics, node-health's line, a file) passes it through one of these functions, which write the
byte the surrogate stands for as ``\\xe9`` (another lone surrogate as ``\\udXXX``): nothing is lost, nothing
crashes, and the same input gives the same output.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
# in JSON text (ensure_ascii), every escape from left to right: a surrogate pair (an astral character, kept),
# a \uXXXX escape, or any other escaped character (\\ \" \n ...: consumed, so that "\\udce9" is not read as one)
_JSON_ESCAPE = re.compile(r"\\(?:u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|u([0-9a-f]{4})|.)", re.IGNORECASE)


def _escaped(point: int) -> str:
    """The text that stands for one lone surrogate: the byte it escaped (``\\xe9``), else its code point."""
    return f"\\x{point - 0xDC00:02x}" if 0xDC80 <= point <= 0xDCFF else f"\\u{point:04x}"


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written out (``\\xe9``, ``\\udXXX``): encodable as UTF-8."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: _escaped(ord(m.group())), text)


def _json_escape(m: re.Match) -> str:
    if m.group(1):  # a pair: an astral character as ensure_ascii writes it
        return m.group()
    point = int(m.group(3), 16) if m.group(3) else None
    if point is None or not 0xD800 <= point <= 0xDFFF:
        return m.group()
    return "\\" + _escaped(point)  # in JSON the backslash itself is escaped: the string reads \xe9


def escape_json_surrogates(json_text: str) -> str:
    """A JSON document with every lone surrogate in its strings written out as ``\\xe9`` (or ``\\udXXX``) text:
    ``json.dumps`` writes one as the escape ``\\udce9`` (ensure_ascii) or as itself (ensure_ascii=False); either
    way a strict reader rejects or replaces it, and a UTF-8 encoder raises. The document stays valid JSON
    (a backslash only occurs inside strings) and parses to the escaped text."""
    if "\\u" in json_text:
        json_text = _JSON_ESCAPE.sub(_json_escape, json_text)
    if _SURROGATE.search(json_text):
        json_text = _SURROGATE.sub(lambda m: "\\" + _escaped(ord(m.group())), json_text)
    return json_text
