"""Reader for the CUDA majors a paste names for its program (issue 42, round 8 after first sight).

"CUDA failure 35: CUDA driver version is insufficient" says the driver is older than the program's CUDA runtime.
Where the paste also shows the driver, the two can be compared: a driver at or above the minor-version
compatibility floor of a CUDA major runs every runtime of that major (525.60.13 every CUDA 12.x), so the error
then does not come from the driver's age (a container that did not get the driver, a stub libcuda). What the
program needs is read here: the highest CUDA major of 11 or later the paste names ("CUDA 12", "CUDA 12.4",
"cuda12", a ``+cu121`` or ``-cu12`` tag, "CUDA runtime version 12.1"). nvidia-smi's "CUDA Version: 12.4" and
deviceQuery's "CUDA Driver Version" are the driver's own ceiling, not the program's need, and are not read.

The cuDNN version a reporter says the machine has ("I use CUDA 11.2 and cudnn 8.0.5", "cudnn 8.1.1") is read
the same way (``paste.cudnn_named``, round 10): beside a "loaded cuDNN X but built with Y" message it tells an
older copy found first (the named one differs from the loaded one) from a machine whose only cuDNN is too old.
"""

from __future__ import annotations

import re
from typing import Tuple

from ...domain.versions import release
from .base import LOOSE, Acc, Paste

_WORDS = ["cuda", "cu1"]


def read_cuda_named(paste: Paste, acc: Acc) -> None:
    """``paste.cuda_needed``: the highest CUDA version (major, or major.minor where given; 8 to 19) the paste names
    for its program, outside the driver's own ceiling; ``paste.cuda_named``: its major, where it is 11 or later
    (the majors with minor-version compatibility). One scan (``program_cuda``) for both."""
    best, where = program_cuda(paste)
    if not best:
        return
    acc.put("paste.cuda_needed", best, LOOSE, where)
    major = release(best)[0]
    if major >= 11:
        acc.put("paste.cuda_named", major, LOOSE, where)


# "cudnn 8.0.5", "cuDNN v8.1.1", "cudnn版本为7.6.5", "cudnn: 8.1": a version right after the word, with a minor
_CUDNN_NAMED = re.compile(r"(?<![A-Za-z/])cudnn[ :=]{0,3}(?:version|版本)?[ :=]{0,3}(?:为|is )?v?(\d{1,2}\.\d+(?:\.\d+)?)"
                          r"(?![\d.]*\d|-windows|-linux)", re.I)
# the framework's own loaded/compiled lines (the message itself), and a package or wheel name (nvidia-cudnn-cu12)
_CUDNN_MESSAGE = re.compile(r"Loaded runtime|compiled with|source was|version in your machine|built (?:with|against)|"
                            r"cudnn[-_]cu\d|cudnn\d\d", re.I)


def read_cudnn_named(paste: Paste, acc: Acc) -> None:
    """``paste.cudnn_named``: the first cuDNN version the paste names outside the framework's own
    loaded/compiled lines (what the reporter says is installed)."""
    for i in paste.distinct(paste.with_any(["cudnn"]), head=2000, tail=500):
        line = paste.lines[i]
        if _CUDNN_MESSAGE.search(line):
            continue
        m = _CUDNN_NAMED.search(line.replace("*", ""))
        if m:
            acc.put("paste.cudnn_named", m.group(1), LOOSE, line.strip()[:160])
            return
# the CUDA version the program needs, with its minor where the paste gives one (issue 42): "CUDA 13", "CUDA 9.2",
# "CUDA10", "cuda 12.8 build", "CUDA toolkit 12.2", "CUDA runtime version 12.1", a "+cu121" / "-cu12" tag; majors 8
# to 19 (before 11 each minor has its own driver minimum, no minor-version compatibility)
_NEEDED = re.compile(r"\bcuda(?:[ _-]?(?:toolkit|runtime|rt)(?: version)?)?[ _-]?v?((?:[89]|1\d)(?:\.\d)?)(?![\d.]*\d)"
                     r"|(?<![A-Za-z])cu(1\d)(\d?)(?![\dA-Za-z])", re.I)
# spans that name the driver's own ceiling, not the program's need: nvidia-smi's "CUDA Version: 12.4", a driver
# that "supports CUDA 12.5", a host that "supported CUDA 12.6"; and deviceQuery's driver/runtime lines
_CEILING_SPAN = re.compile(r"CUDA Version ?[:：]? ?\d+(?:\.\d+)?|support(?:s|ed)? (?:up to )?CUDA ?\d+(?:\.\d+)?", re.I)
_DRIVER_LINE = re.compile(r"CUDA Driver Version|Driver API", re.I)


def program_cuda(paste: Paste) -> Tuple[str, str]:
    """The highest CUDA version the paste names for its program ("12", "12.1", "9.2") and the line it is on, outside
    the driver's own ceiling; ("", "") when it names none."""
    best = ""
    where = ""
    for i in paste.distinct(paste.with_any(_WORDS), head=2000, tail=500):
        line = paste.lines[i]
        if _DRIVER_LINE.search(line):
            continue
        rest = _CEILING_SPAN.sub(" ", line)
        for m in _NEEDED.finditer(rest):
            v = m.group(1) or (m.group(2) + (f".{m.group(3)}" if m.group(3) else ""))
            if not best or release(v) > release(best):
                best, where = v, line.strip()[:160]
    return best, where
