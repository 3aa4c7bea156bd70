"""Reader for the reporter's words that a GPU is still held by a process that should be gone (issue 42, round 10):
memory left in use after the program ended or was killed ("when the program ends, the memory of the GPU0 is
released, but the other GPUs are not released", facebookresearch/XLM#40; "after the program finishes, the gpu
memory is still occupied by the process ... nvidia-smi, there is no process shown", apache/mxnet#17837; "the
failing execution did not free the GPU memory", madhawav/YOLO3-4-Py#108), zombie or defunct processes holding the
GPU, or nvidia-smi said to show a gigabyte or more in use with no process listed.

Memory still allocated while the program runs is the caching allocator's (torch keeps freed blocks for reuse;
`torch.cuda.empty_cache()` returns them), and a notebook's kernel is a live process: neither is read. Nor is a
small amount with no process (the GSP firmware's 256 MB on a passthrough GPU, the desktop): under 1 GiB, as the live
gpu.busy check's threshold. The line goes into ``paste.gpu_held_said``; checks/diagnose_gpu_held.py judges it.
"""

from __future__ import annotations

import re
from typing import Optional

from .base import LOOSE, Acc, Paste

_SENT = re.compile(r"(?<=[.!?])\s+|\n")
_ABOUT = re.compile(r"\b(?:gpus?\d*|memory|vram)\b", re.I)  # not "cuda": "still using CUDA 11" is a version
# the program is over: ended, finished, exited, crashed, killed; or a killed or failed earlier run
_ENDED = re.compile(
    r"\b(?:program|process|script|training|job|run|task|python|application|execution|experiment)s?\b[^.\n]{0,30}?"
    r"\b(?:ends?|ended|finish(?:es|ed)?|exit(?:s|ed)?|terminat(?:es|ed)|crash(?:es|ed)?|(?:is|was|got|gets) killed|"
    r"is done|was done|is over|completes|completed)\b|"
    r"\b(?:after|when|once) (?:i )?(?:kill(?:ing|ed)?|interrupt(?:ing|ed)?|ctrl[- +]?c|pressing ctrl)\b|"
    r"\b(?:failed|failing|crashed|killed|previous|earlier|interrupted) (?:runs?|executions?|process(?:es)?|jobs?|"
    r"trainings?|programs?)\b", re.I)
# ... and the memory not given back
_HELD = re.compile(
    r"\b(?:not|never|isn't|aren't|wasn't|weren't) (?:been |get |got |being )?(?:released|freed|deallocated|cleared)\b|"
    r"\b(?:did|does|do)(?:n't| not) (?:free|release|clear|give back)\b|"
    r"\bstill (?:occupied|held|in use|allocated|holds?|holding|occupies|occupying)\b", re.I)
# a process that stays behind
_ZOMBIE = re.compile(r"\b(?:zombie|defunct|orphan(?:ed)?|leftover|left-over|stale)\s+(?:python\s+)?process(?:es)?\b",
                     re.I)
# nvidia-smi said to show memory in use with no process listed: the amount settles whether it is anything
_NO_PROC = re.compile(r"\bno (?:running )?process(?:es)?\b|\bno process (?:is )?(?:shown|listed|running)\b|"
                      r"\bwithout any process\b", re.I)
_AMOUNT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s?(MiB|MB|GiB|GB|G)\b")
# the process is alive by design: a notebook's kernel, the caching allocator
_ALIVE = re.compile(r"\b(?:jupyter|notebook|ipython|colab|kernel|empty_cache|caching allocator|during (?:the )?"
                    r"(?:execution|training|run))\b", re.I)
_WORDS = ["releas", "free", "clear", "still", "zombie", "defunct", "orphan", "leftover", "left-over", "stale",
          "no process", "no running process", "without any process"]


def _gib(text: str) -> Optional[float]:
    amounts = [float(v) / (1024 if u.upper().startswith("M") else 1) for v, u in _AMOUNT.findall(text)]
    return max(amounts) if amounts else None


def held_said(paste: Paste) -> Optional[str]:
    """The first sentence saying a GPU is held by a process that should be gone (see the module), or None."""
    for i in paste.distinct(paste.with_any(_WORDS), head=400, tail=100):
        line = paste.lines[i]
        if line.lstrip().startswith(("|", "+")) or len(line) > 2000:
            continue
        for sent in _SENT.split(line):
            if not _ABOUT.search(sent) or _ALIVE.search(sent):
                continue
            if _ENDED.search(sent) and _HELD.search(sent) or _ZOMBIE.search(sent):
                return sent.strip()[:200]
            if _NO_PROC.search(sent) and (_gib(sent) or 0.0) >= 1.0:
                return sent.strip()[:200]
    return None


def read_gpu_held(paste: Paste, acc: Acc) -> None:
    """``paste.gpu_held_said``: the reporter's sentence that a GPU stays held after its program is gone."""
    said = held_said(paste)
    if said:
        acc.put("paste.gpu_held_said", said, LOOSE, "the reporter's words")
