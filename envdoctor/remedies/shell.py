"""Shell command text from argument lists: every value is quoted for the target shell, never interpolated raw."""

from __future__ import annotations

import re
import shlex
from typing import Iterable, List, Optional, Sequence, Union

POSIX = "posix"  # bash, zsh, dash: what Linux, macOS and WSL users paste into
POWERSHELL = "powershell"  # the default shell of Windows Terminal; cmd.exe is not targeted


class Raw(str):
    """Shell syntax envdoctor writes itself (``&&``, ``|``, ``$PATH``): inserted as is, never from the facts."""


class Placeholder(str):
    """A value the user fills in (``<n>``): quoted so that pasting it unchanged runs nothing unexpected."""


Arg = Union[str, int, float, Raw, Placeholder]


class UnsafeValue(ValueError):
    """A value that cannot be written into a one-line command (a newline, a control character)."""


def _breaks_line(value: str) -> bool:
    # str.splitlines() is what renderers split on: \n, \r, \v, \f, \x1c-\x1e, \x85, \u2028, \u2029;
    # other control characters (ESC, NUL, BEL) would reach the terminal raw.
    if len(("a" + value + "a").splitlines()) > 1:
        return True
    return any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value)


# PowerShell treats the typographic single quotes as quote characters too (about_Quoting_Rules), so they
# are doubled like the ASCII one.
_PS_QUOTES = "'\u2018\u2019\u201a\u201b"
_PS_SAFE = re.compile(r"[A-Za-z0-9_\-./:=+\\]+")


def quote(value: Arg, shell: str = POSIX) -> str:
    """One argument, quoted so the shell reads it as exactly one word with no expansion."""
    if isinstance(value, Raw):
        return str(value)
    text = str(value)
    if _breaks_line(text):
        raise UnsafeValue("contains a line break or control character")
    if shell == POWERSHELL:
        if text and _PS_SAFE.fullmatch(text):
            return text
        return "'" + "".join(c * 2 if c in _PS_QUOTES else c for c in text) + "'"
    return shlex.quote(text)


def _flatten(args: Iterable[Union[Arg, Sequence[Arg]]]) -> List[Arg]:
    out: List[Arg] = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_flatten(a))
        elif a is not None:
            out.append(a)
    return out


def _clean_comment(comment: str) -> str:
    # comments are envdoctor's own prose; a control character in one would still end the line
    return " ".join("".join(" " if _breaks_line(c) else c for c in comment).split())


def command(*args: Union[Arg, Sequence[Arg]], comment: Optional[str] = None, shell: str = POSIX,
            what: str = "a value from the facts") -> str:
    """The command line for ``args`` (nested lists are flattened, None dropped), quoted for ``shell``.

    A value that would break the line (a newline in a path or an environment value) is not embedded: the
    command becomes a comment that says so, so nothing pasted runs half a command.
    """
    flat = _flatten(args)
    try:
        words = [quote(a, shell) for a in flat]
    except UnsafeValue:
        return f"# not written out: {what} contains a line break or control character; edit it by hand"
    if shell == POWERSHELL and flat and not isinstance(flat[0], Raw) and words[0] != str(flat[0]):
        # a quoted program name is a string to PowerShell; the call operator runs it
        words.insert(0, "&")
    line = " ".join(words)
    if comment:
        line += "   # " + _clean_comment(comment)
    return line


def comment_line(text: str) -> str:
    """A command-list entry that is only a comment (a hint that is not a command)."""
    return "# " + _clean_comment(text)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name):
        raise ValueError(f"not an environment variable name: {name!r}")
    return name


def export(name: str, value: Arg, shell: str = POSIX, comment: Optional[str] = None) -> str:
    """``export NAME='value'`` (POSIX) or ``$env:NAME = 'value'`` (PowerShell), the value quoted."""
    name = env_name(name)
    try:
        quoted = quote(value, shell)
    except UnsafeValue:
        return comment_line(f"not written out: the new value of {name} contains a line break or control "
                            "character; set it by hand")
    if shell == POWERSHELL:
        if not quoted.startswith("'"):
            quoted = "'" + quoted + "'"
        line = f"$env:{name} = {quoted}"
    else:
        line = f"export {name}={quoted}"
    return line + (f"   # {_clean_comment(comment)}" if comment else "")


def unset(name: str, shell: str = POSIX, comment: Optional[str] = None) -> str:
    name = env_name(name)
    line = f"Remove-Item Env:{name}" if shell == POWERSHELL else f"unset {name}"
    return line + (f"   # {_clean_comment(comment)}" if comment else "")


def rename_local(paths: List[str], cwd: str, shell: str = POSIX) -> List[str]:
    """The commands that move files or packages in the working directory out of the way of the modules they are
    named like: each renamed to <stem>_local[.ext] beside itself, then the directory's __pycache__ (which would
    still hold their compiled copies) removed."""
    cmds = []
    for path in paths:
        head, _, base = path.rstrip("/").rpartition("/")
        stem, dot, ext = base.partition(".")
        cmds.append(command("mv", path.rstrip("/"), f"{head}/{stem}_local{dot}{ext}", shell=shell, what="a path"))
    cmds.append(command("rm", "-rf", cwd.rstrip("/") + "/__pycache__", shell=shell, what="a path"))
    return cmds
