"""Reader for environment variables in a paste: LD_LIBRARY_PATH, CUDA_HOME, ... and every variable of
compat_data/env_vars.json (CUDA_LAUNCH_BLOCKING, OMP_NUM_THREADS, NCCL_*, PYTORCH_CUDA_ALLOC_CONF, ...)."""

from __future__ import annotations

import re
from typing import Any, Iterable, List

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


def read_env(paste: Paste, acc: Acc, names: Iterable[str] = ()) -> None:
    lines = paste.lines
    n = len(lines)
    for i in paste.distinct(paste.with_any(_ENV_NAMES, case=True)):
        line = lines[i]
        for name in _ENV_NAMES:
            if name not in line:
                continue
            m = re.search(rf"(?:export\s+)?\b{name}\s*[=:]\s*(\S+)", line)
            if m and "$" not in m.group(1)[:1] and name != "PATH":
                acc.put_env(name, m.group(1).strip("'\""), LOOSE, "a NAME=value line", line)
                continue
            if re.search(rf"echo\s+\"?\${{?{name}\b", line):
                j = i + 1
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and not re.match(r"^\s*(?:\$|>>>|#)", lines[j]):
                    acc.put_env(name, lines[j].strip(), REPL, f"echo ${name}", line)
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
            elif re.search(rf"echo\s+\"?\${{?{re.escape(name)}\b", line):
                j = i + 1
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and not re.match(r"^\s*(?:\$|>>>|#)", lines[j]):
                    acc.put_env(name, lines[j].strip(), REPL, f"echo ${name}", line)
