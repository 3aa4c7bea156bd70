"""Reader for environment variables in a paste (LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES, CUDA_HOME, ...)."""

from __future__ import annotations

import re

from .base import Acc, Paste

_ENV_NAMES = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "PATH")


def read_env(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    n = len(lines)
    for i in paste.distinct(paste.with_any(_ENV_NAMES, case=True)):
        line = lines[i]
        for name in _ENV_NAMES:
            if name not in line:
                continue
            m = re.search(rf"(?:export\s+)?\b{name}\s*[=:]\s*(\S+)", line)
            if m and "$" not in m.group(1)[:1] and name != "PATH":
                acc.env.setdefault(name, m.group(1).strip("'\""))
                continue
            if re.search(rf"echo\s+\"?\${{?{name}\b", line):
                j = i + 1
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and not re.match(r"^\s*(?:\$|>>>|#)", lines[j]):
                    acc.env.setdefault(name, lines[j].strip())
