"""Reader for DeepSpeed's environment report (`ds_report`, `python -m deepspeed.env_report`; issue 29): its
"general environment info" rows, a name, a run of dots and the value, as the tool printed them about the
environment it ran in:

    torch version .................... 2.1.0+cu121
    torch cuda version ............... 12.1
    nvcc version ..................... 11.8
    deepspeed info ................... 0.12.3, unknown, unknown

torch's version and CUDA, the nvcc DeepSpeed builds its ops with, and DeepSpeed's own version: the toolchain
checks then judge nvcc against torch's CUDA as for any other paste.
"""

from __future__ import annotations

import re

from ...model.facts import Package
from .base import STRUCTURED, Acc, Paste

_ROW = re.compile(r"^\s*(?P<name>torch version|torch cuda version|nvcc version|deepspeed info)\s*\.{3,}\s*"
                  r"(?P<value>\d+(?:\.\d+)+(?:\+[\w.]+)?)")
_KEYS = {"torch version": "torch.version", "torch cuda version": "torch.cuda", "nvcc version": "toolkit.version"}


def read_ds_report(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    for i in paste.distinct(paste.with_any(["version ....", "info ...."]), head=200, tail=50):
        m = _ROW.match(lines[i][:400])
        if not m:
            continue
        how = f"ds_report: {lines[i].strip()[:120]}"
        name, value = m.group("name"), m.group("value")
        if name == "deepspeed info":
            acc.add_package(Package(name="deepspeed", version=value), STRUCTURED)
        else:
            acc.put(_KEYS[name], value, STRUCTURED, how)
        acc.add_found("DeepSpeed's environment report (ds_report)")
