"""Reader for which Python packages a paste shows being imported (issue 29): the import statements typed or
quoted in a traceback, the packages its frames run in, and the import failures programs print about themselves
(vLLM's ``Failed to import from vllm._C with ImportError(...)``, a wrapper's ``Could not import vllm python
package``). Recorded as ``paste.imports`` (the top-level names, in order), so that a qualifier can tell which
program failed to load a library: a third-party torch extension (compat_data/torch_family.json) is not torch,
and not a standalone runtime either.
"""

from __future__ import annotations

import re
from typing import List

from .base import REPL, Acc, Paste

_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
# a statement at the start of a line: a prompt, IPython's "---> 81" / "     79" source lines, a `python -c`
_STATEMENT = re.compile(rf"^\s*(?:>>>\s*|In \[\d+\]:\s*|(?:-+>\s*)?\d+\s+)?(?:from\s+{_NAME}(?:\.\w+)*\s+import\b|"
                        rf"import\s+{_NAME})")
# a frame inside an installed package: File ".../site-packages/<pkg>/...", IPython's [/.../dist-packages/<pkg>/...]
_FRAME = re.compile(rf"(?:site|dist)-packages[\\/]+{_NAME}[\\/]")
# a program saying an import failed: "Failed to import from vllm._C", "Could not import vllm python package"
_FAILED = re.compile(rf"\b(?:Failed to|Could not|Couldn't|Cannot|Unable to) import (?:from )?[`'\"]?{_NAME}", re.I)
# the first failure to load a module: Python's import errors, and the loader's own words
_LOAD_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(?:ImportError|ModuleNotFoundError|OSError)\b|cannot open shared object file|"
                         r"undefined symbol")
_WORDS = ["import", "-packages"]
MAX_NAMES = 20
LOOK_BACK = 6  # lines above a load error searched for the statement or frame that ran it


def _names(line: str) -> List[str]:
    found = [g for m in _STATEMENT.finditer(line) for g in m.groups() if g]
    found += [m.group(1) for m in _FRAME.finditer(line)]
    return found + [m.group(1) for m in _FAILED.finditer(line)]


def read_imports(paste: Paste, acc: Acc) -> None:
    names: List[str] = []
    where = ""
    for i in paste.distinct(paste.with_any(_WORDS), head=1500, tail=300):
        line = paste.lines[i][:2000]
        for name in _names(line):
            if name not in names and len(names) < MAX_NAMES:
                names.append(name)
                where = where or line.strip()[:160]
    if not names:
        return
    acc.put("paste.imports", ",".join(names), REPL, f"imports: {where}")
    # which import the first load error ended: the nearest statement or frame above it (``import torch`` that
    # worked, then ``import flash_attn_2_cuda`` that failed, is the extension's failure, not torch's)
    for i in paste.with_any(["error", "cannot open", "undefined symbol"])[:50]:
        if not _LOAD_ERROR.search(paste.lines[i][:2000]):
            continue
        for j in range(i, max(-1, i - LOOK_BACK - 1), -1):
            line = paste.lines[j][:2000]
            if j < i and not line.strip():
                continue
            found = _names(line)
            if found:
                acc.put("paste.failed_import", found[-1], REPL, f"failed import: {line.strip()[:160]}")
                return
        return
