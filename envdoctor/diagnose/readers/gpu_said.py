"""Reader for the reporter's (or a program's) words that the GPU is not supported by the build that runs on it
(issue 42, helper archdriver): "no compatible GPU available", "installed versions of torch ... that did not support
... this specific card", "warnings about an incompatibility", "a kernel-related error", "not working with 5090".

Read only on a line that also speaks of the GPU, CUDA, a kernel or torch, so that a sentence about something else
("pip is not compatible with ...") is not taken. The line goes into ``paste.gpu_unsupported_said``; the check
diagnose.gpu-arch-build-unknown reads it together with the GPU's compute capability (compat_data/gpus.json) and
the torch builds of the matrix that do and do not carry it, and asks for torch's build when the paste lacks it.
"""

from __future__ import annotations

import re

from .base import LOOSE, Acc, Paste

_SAID = re.compile(r"\bno compatible (?:nvidia )?gpu|\bincompatib\w*|\b(?:did|does|do)(?:n[o']?t| not) support\b|"
                   r"\bnot (?:be )?(?:supported|compatible|working)\b|\bunsupported\b|\bno kernel image\b|"
                   r"\bkernel[- ]related error\b|\bno sm_\d+a? kernels?\b|\bno kernels? for sm_\d+", re.I)
_ABOUT = re.compile(r"\bgpus?\b|\bcard\b|\bcuda\b|\bkernel|\btorch\b|\bpytorch\b|\b(?:rtx|gtx|gt|tesla)\s?\w*\d|\b\d{3,4}\s?(?:rtx|gtx)\b",
                    re.I)
# the driver's own words about a GPU it does not support ("nvidia-driver-580-open, which does NOT support Pascal
# GPUs", NVRM's open nvidia.ko) are the driver's verdict, judged by other rows, not a build's
_DRIVER = re.compile(r"\bdrivers?\b|nvidia\.ko|\bNVRM\b|kernel module", re.I)
_WORDS = ["compatib", "support", "working", "kernel"]


def read_gpu_said(paste: Paste, acc: Acc) -> None:
    """``paste.gpu_unsupported_said``: the first line saying the GPU is not supported or does not work."""
    for i in paste.distinct(paste.with_any(_WORDS), head=500, tail=200):
        line = paste.lines[i]
        m = _SAID.search(line)
        if m and _ABOUT.search(line) and not _DRIVER.search(line):
            acc.put("paste.gpu_unsupported_said", m.group(0), LOOSE, line.strip()[:160])
            return
