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
_WORDS = ["import", "-packages"]
MAX_NAMES = 20


def read_imports(paste: Paste, acc: Acc) -> None:
    names: List[str] = []
    where = ""
    for i in paste.distinct(paste.with_any(_WORDS), head=1500, tail=300):
        line = paste.lines[i][:2000]
        found = [g for m in _STATEMENT.finditer(line) for g in m.groups() if g]
        found += [m.group(1) for m in _FRAME.finditer(line)]
        found += [m.group(1) for m in _FAILED.finditer(line)]
        for name in found:
            if name not in names and len(names) < MAX_NAMES:
                names.append(name)
                where = where or line.strip()[:160]
    if names:
        acc.put("paste.imports", ",".join(names), REPL, f"imports: {where}")
