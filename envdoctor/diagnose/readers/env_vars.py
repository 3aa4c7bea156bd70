"""Reader for environment variables in a paste: LD_LIBRARY_PATH, CUDA_HOME, ... and every variable of
compat_data/env_vars.json (CUDA_LAUNCH_BLOCKING, OMP_NUM_THREADS, NCCL_*, PYTORCH_CUDA_ALLOC_CONF, ...)."""

from __future__ import annotations

import re
from typing import Any, Iterable, List, Optional

from .base import LOOSE, REPL, Acc, Paste

_ENV_NAMES = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "PATH")
# a value as a shell line writes it: quoted (possibly empty) or one word
_VALUE = r"(\"[^\"]*\"|'[^']*'|[^\s;'\"]*)"


def table_names(compat: Any) -> List[str]:
    """The variables compat_data/env_vars.json judges (none when the matrix has no such table)."""
    table = getattr(compat, "env_vars", None) if compat is not None else None
    return table.names() if table is not None else []


def _assignment(name: str) -> re.Pattern[str]:
    """``name`` set on a line of its own: ``export NAME=v``, ``NAME=v cmd`` at a prompt, ``ENV NAME=v`` (a
    Dockerfile), ``setenv NAME v``, ``$env:NAME = 'v'``, ``os.environ["NAME"] = "v"``, or ``env``'s ``NAME=v``
    output; a commented-out line (``# export ...``) sets nothing. Not a
    mention inside prose or an error message ("For debugging consider passing CUDA_LAUNCH_BLOCKING=1")."""
    n = re.escape(name)
    prompt = r"^\s*(?:[$>%]\s*)?"
    return re.compile(
        rf"{prompt}(?:(?:export|ENV|set|env)\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*{n}\s*=\s*{_VALUE}(?=\s|$|;)"
        rf"|{prompt}setenv\s+{n}\s+{_VALUE}(?=\s|$|;)"
        rf"|{prompt}\$env:{n}\s*=\s*{_VALUE}"
        rf"|os\.environ\[[\"']{n}[\"']\]\s*=\s*{_VALUE}")


# the value an `echo $NAME` printed, as a value of such a variable: one word, or paths (which may hold spaces)
_ONE_WORD = re.compile(r"^\S+$")
_PATHS = re.compile(r"^(?:[A-Za-z]:)?[\\/~.][^\n]*$")


def _echoed(lines: List[str], i: int, name: str) -> Optional[str]:
    """What ``echo $NAME`` printed, where line ``i`` is that command on a line of its own (after a shell prompt or
    none) and the very next line is a plausible value: one word, or a path list for a path variable. Prose that
    mentions the command ("I can echo $CUDA_VISIBLE_DEVICES and see nothing is set") is no command, and the line
    after it (a date in reports-batch2/121) is no value; a blank line after the command says the value is empty or
    the paste skipped it, so nothing is read."""
    n_ = re.escape(name)
    if not re.match(rf"^(?:.*?[$#%>]\s+)?echo\s+\"?\${{?{n_}\}}?\"?\s*$", lines[i]):
        return None
    if i + 1 >= len(lines):
        return None
    value = lines[i + 1].strip()
    if not value or re.match(r"^\s*(?:\$|>>>|#)", lines[i + 1]):
        return None
    path_like = "PATH" in name or name.endswith("_HOME") or name.endswith("_DIR")
    return value if _ONE_WORD.match(value) or (path_like and _PATHS.match(value)) else None


def read_env(paste: Paste, acc: Acc, names: Iterable[str] = ()) -> None:
    lines = paste.lines
    for i in paste.distinct(paste.with_any(_ENV_NAMES, case=True)):
        line = lines[i]
        for name in _ENV_NAMES:
            if name not in line:
                continue
            m = re.search(rf"(?:export\s+)?\b{name}\s*[=:]\s*(\S+)", line)
            if m and "$" not in m.group(1)[:1] and name != "PATH":
                acc.put_env(name, m.group(1).strip("'\""), LOOSE, "a NAME=value line", line)
                continue
            value = _echoed(lines, i, name)
            if value is not None:
                acc.put_env(name, value, REPL, f"echo ${name}", line)
    table = [x for x in names if x not in _ENV_NAMES]
    if not table:
        return
    patterns = {x: _assignment(x) for x in table}
    for i in paste.distinct(paste.with_any(table, case=True)):
        line = lines[i]
        for name in table:
            if name not in line:
                continue
            m = patterns[name].search(line)
            if m:
                value = next(g for g in m.groups() if g is not None)
                if value[:1] in ("'", '"'):
                    value = value[1:-1]
                if "$" not in value:  # a value built from another variable says nothing by itself
                    acc.put_env(name, value, LOOSE, "an export or assignment line", line)
                    acc.add_found("environment variables set in the shell or the job script")
            else:
                echoed = _echoed(lines, i, name)
                if echoed is not None:
                    acc.put_env(name, echoed, REPL, f"echo ${name}", line)
