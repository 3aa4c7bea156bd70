"""Lay a fix command out in a terminal's width without changing what the shell runs: break only between
words, continue with the shell's own continuation, never inside a quoted string or after a comment.

The shell is the one the command was quoted for (``remedies.shell``: POSIX or POWERSHELL, chosen by
``remedies.platform.fix_shell``). Bash continues a line with a trailing backslash (the backslash-newline pair
is removed); PowerShell with a trailing backtick, its escape character (about_Escape_Characters, "Indicating
Line Continuation": https://learn.microsoft.com/en-us/previous-versions/dd347662(v=technet.10)). A bash
backslash means nothing to PowerShell, so a Windows command continued with one would run in pieces.
"""

from __future__ import annotations

import textwrap
from typing import List, Optional, Tuple

from .shell import _PS_QUOTES, POSIX, POWERSHELL

# PowerShell reads the typographic double quotes as quote characters too (about_Quoting_Rules)
_PS_DOUBLE = "\"\u201c\u201d\u201e"
_PS_ESCAPE = "`"
CONTINUATION_INDENT = 4  # extra columns for the continuation lines of a long command


def continuation(shell: str = POSIX) -> str:
    """The character that, last on a line, continues the command on the next one."""
    return _PS_ESCAPE if shell == POWERSHELL else "\\"


class _Scanner:
    """Quote and escape state of one shell line, a character at a time."""

    def __init__(self, shell: str) -> None:
        self.shell = shell
        self.quote: Optional[str] = None  # "'" or '"' (the family, for PowerShell's typographic quotes)
        self.escaped = False

    def feed(self, ch: str) -> bool:
        """Consume ``ch``; True when it is outside any quote and not escaped (it may split or start a comment)."""
        if self.escaped:
            self.escaped = False
            return False
        if self.shell == POWERSHELL:
            single, double = ch in _PS_QUOTES, ch in _PS_DOUBLE
            # the backtick escapes outside quotes and inside double quotes, never inside single ones
            escape = ch == _PS_ESCAPE and self.quote != "'"
        else:
            single, double = ch == "'", ch == '"'
            escape = ch == "\\" and self.quote != "'"
        if escape:
            self.escaped = True
            return False
        if self.quote:
            if (self.quote == "'" and single) or (self.quote == '"' and double):
                self.quote = None
            return False
        if single or double:
            self.quote = "'" if single else '"'
            return False
        return True


def split_words(line: str, shell: str = POSIX) -> List[str]:
    """Split a shell line at spaces outside quotes, keeping the quotes in the words."""
    words: List[str] = []
    current: List[str] = []
    scan = _Scanner(shell)
    for ch in line:
        if scan.feed(ch) and ch == " ":
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    if shell == POWERSHELL:
        # the call operator stays with the program it calls: "& 'C:\Program Files\...\python.exe'"
        glued: List[str] = []
        for word in words:
            if glued and glued[-1] == "&":
                glued[-1] = f"& {word}"
            else:
                glued.append(word)
        words = glued
    return words


def split_comment(line: str, shell: str = POSIX) -> Tuple[str, Optional[str]]:
    """(code, comment) of a shell line: the comment starts at the first unquoted ``#`` that begins a word."""
    scan = _Scanner(shell)
    for i, ch in enumerate(line):
        if scan.feed(ch) and ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line, None


def _comment_lines(text: str, width: int, pad: str) -> List[str]:
    return textwrap.wrap(text, width=max(width, len(pad) + 20), initial_indent=pad + "# ",
                         subsequent_indent=pad + "# ", break_long_words=False, break_on_hyphens=False) \
        or [pad + "#"]


def wrap_command(command: str, width: int, indent: int = 6, shell: str = POSIX) -> List[str]:
    """Lay a shell command out in ``width`` columns without breaking it.

    A line that fits is kept as is. A longer one is broken only between words (never inside quotes), with
    the shell's continuation (`` \\`` for POSIX shells, `` ` `` for PowerShell) last on each line but the
    last, so the lines still paste as one command. A trailing ``# comment`` never takes a continuation
    (after ``#`` the continuation is comment text and the next line would run on its own): it moves to
    comment lines of its own above the command. A single word longer than the width (a very long URL) is
    never cut: it stays whole on its own line.
    """
    pad = " " * indent
    mark = continuation(shell)
    out: List[str] = []
    for raw in command.splitlines() or [""]:
        line = raw.rstrip()
        if len(pad) + len(line) <= width:
            out.append(pad + line)
            continue
        code, comment = split_comment(line, shell)
        if comment is not None:
            out.extend(_comment_lines(comment, width, pad))
        if not code.strip():
            continue
        if len(pad) + len(code) <= width:
            out.append(pad + code)
            continue
        cont = pad + " " * CONTINUATION_INDENT
        prefix, current = pad + code[: len(code) - len(code.lstrip())], ""
        for word in split_words(code, shell):
            if not current:
                current = word
            elif len(prefix) + len(current) + 1 + len(word) + 2 <= width:
                current += " " + word
            else:
                out.append(f"{prefix}{current} {mark}")
                prefix, current = cont, word
        out.append(prefix + current)
    return out


def join_continued(lines: List[str], shell: str = POSIX) -> List[str]:
    """Wrapped lines back to the command lines the shell runs: a line ending in the continuation joins the
    next (bash drops the backslash-newline pair, PowerShell reads the escaped newline as a space; either way
    the words are what they were), and each line loses its indentation."""
    mark = continuation(shell)
    out: List[str] = []
    pending: Optional[str] = None
    for line in lines:
        text = line.strip() if pending is None else pending + line.strip()
        if text.endswith(mark) and split_comment(text, shell)[1] is None:
            pending = text[:-1]
        else:
            out.append(text)
            pending = None
    if pending is not None:
        out.append(pending)
    return out
